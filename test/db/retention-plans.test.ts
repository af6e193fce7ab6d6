/**
 * The retention purges on the machine's PostgreSQL, with 20,000 recent rows and a few past the retention period
 * in each table they clean (posts, webhook messages), statistics current: each removes the old
 * rows and keeps the rest, and none reads its whole table to find them (auto_explain's plans reported to the
 * test's connection). The purges run every 30 s to a minute, so a full read would cost in proportion to
 * everything the service holds, all the time.
 */
import { afterAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { executeRows } from "../../db/client";
import { createUser } from "../../src/http/api-keys";
import { purgeExpiredPosts } from "../../src/social/delivery/sweep";
import { purgeOldWebhookMessages } from "../../src/webhooks/send";
import { explainedDb } from "../helpers/explained-db";

const RECENT = 20_000;
const OLD = 5;
const RETENTION_DAYS = 30;

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

describe("retention purges on PostgreSQL", () => {
  it("remove what is past the retention period without reading the whole table", async () => {
    const { db, plans } = await explainedDb(cleanups);

    const { userId } = await createUser(db, `retention-${crypto.randomUUID().slice(0, 8)}@example.test`);
    const ages = sql`(select case when g <= ${OLD} then now() - interval '400 days' else now() - (g || ' minutes')::interval end as at, g from generate_series(1, ${RECENT + OLD}) g) a`;
    await db.execute(sql`insert into posts (user_id, caption, created_at) select ${userId}, 'post ' || a.g, a.at from ${ages}`);
    await db.execute(sql`insert into webhook_messages (user_id, type, subject_id, created_at) select ${userId}, 'webhook.test', a.g::text, a.at from ${ages}`);
    await db.execute(sql`analyze posts, webhook_messages`);

    plans.length = 0;
    const now = new Date();
    expect(await purgeExpiredPosts(db, now, RETENTION_DAYS)).toBe(OLD);
    expect(await purgeOldWebhookMessages(db, now, RETENTION_DAYS)).toBe(OLD);
    const purgePlans = [...plans];

    for (const table of ["posts", "webhook_messages"]) {
      const [row] = await executeRows<{ n: number }>(db, sql.raw(`select count(*)::int as n from ${table}`));
      expect(row!.n, table).toBe(RECENT);
    }
    expect(purgePlans.length).toBeGreaterThanOrEqual(2);
    const fullReads = purgePlans.flatMap((p) => p.split("\n").filter((l) => /Seq Scan on (posts|webhook_messages)\b/.test(l)));
    expect(fullReads).toEqual([]);
  }, 60_000);
});
