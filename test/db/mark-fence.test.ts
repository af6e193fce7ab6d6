/**
 * The write-ahead mark's fence, on PGlite and on the machine's PostgreSQL: marks written together are one
 * statement, and a row claimed again while its first claim's mark waits in the same batch is held by its
 * newest claim only (the older claim's mark reaches nothing, so its publisher stops).
 */
import { afterAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { createUser } from "../../src/http/api-keys";
import { claimDue, markMaybeSent } from "../../src/social/delivery/store";
import { nodeDbDrivers } from "../helpers/node-db-drivers";

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

describe.each(nodeDbDrivers(cleanups))("the write-ahead mark on $name", ({ open }) => {
  it("a row claimed again in the same batch of marks is held by its newest claim only", async () => {
    const handle = await open();
    cleanups.push(() => handle.close());
    const { db } = handle;
    const { userId } = await createUser(db, `twice-${crypto.randomUUID().slice(0, 8)}@example.test`);
    await db.execute(sql`
      with p as (insert into posts (user_id, caption) values (${userId}, 'twice') returning id)
      insert into deliveries (post_id, user_id, account_id, platform, status, next_attempt_at)
      select p.id, ${userId}, 'pageplatform:1', 'pageplatform', 'pending', now() - interval '1 minute' from p`);
    const [first] = await claimDue(db, new Date(), 1, 60_000);
    // Its lock lapses and the row is released and claimed again, while the first publisher is still at work.
    await db.execute(sql`update deliveries set status = 'pending', locked_until = null where id = ${first!.row.id}`);
    const [second] = await claimDue(db, new Date(), 1, 60_000);
    expect(second!.attempt).toBe(first!.attempt + 1);
    expect(await Promise.all([markMaybeSent(db, first!, new Date()), markMaybeSent(db, second!, new Date())])).toEqual([false, true]);
  }, 60_000);
});
