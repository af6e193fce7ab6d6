/**
 * The plans of a burst's batch statements on the machine's PostgreSQL, as auto_explain reports them: none may
 * read a batch again for every row of the batch. PostgreSQL keeps no statistics of a trigger's transition
 * tables, of a CTE or of a JSON parameter, and a plan made while one of them held a row or two (kept for the
 * connection) joins them by a nested loop: for a batch of 300 that is 90,000 rows read instead of 600. The
 * test runs a batch of one first, as a server's first quiet minutes do, then the batch of 300, through the
 * store's own functions: the claim, the write-ahead mark and the record of the targets (with their status,
 * count and outbox triggers, an endpoint registered), then the claim of the webhook messages they made.
 */
import { afterAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { executeRows } from "../../db/client";
import { createUser } from "../../src/http/api-keys";
import { claimDue, markMaybeSent, recordPublished } from "../../src/social/delivery/store";
import { claimDueWebhooks } from "../../src/webhooks/send";
import { explainedDb } from "../helpers/explained-db";

const BATCH = 300;
/** A scan of a CTE, a function's rows or a transition table run this many times with this many rows each reads the batch per row. */
const REPEATED = 20;

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

/** The plan lines that scan a CTE, function rows or a transition table REPEATED times or more with REPEATED rows or more each. */
function repeatedScans(plans: readonly string[]): string[] {
  const found: string[] = [];
  for (const plan of plans) {
    for (const line of plan.split("\n")) {
      const scan = /(CTE Scan|Function Scan|Named Tuplestore Scan|Subquery Scan)\b.*actual rows=(\d+) loops=(\d+)/.exec(line);
      if (scan && Number(scan[2]) >= REPEATED && Number(scan[3]) >= REPEATED) {
        found.push(
          `${line.trim()}\n  in: ${plan
            .split("\n")
            .find((l) => l.includes("Query Text"))
            ?.trim()
            .slice(0, 160)}`,
        );
      }
    }
  }
  return found;
}

describe("batch statements on PostgreSQL", () => {
  it("read each batch once: no nested loop over a transition table, a CTE or a JSON parameter", async () => {
    const { db, plans } = await explainedDb(cleanups);

    const { userId } = await createUser(db, `plans-${crypto.randomUUID().slice(0, 8)}@example.test`);
    await db.execute(sql`insert into webhook_endpoints (user_id, url, secret_ciphertext) values (${userId}, 'http://127.0.0.1:9/hooks', 'x')`);
    const due = new Date(Date.now() - 60_000).toISOString();

    const burst = async (n: number) => {
      await db.execute(sql`
        with p as (insert into posts (user_id, caption) select ${userId}, 'post ' || g from generate_series(1, ${n}) g returning id)
        insert into deliveries (post_id, user_id, account_id, platform, status, next_attempt_at)
        select p.id, ${userId}, 'pageplatform:1', 'pageplatform', 'pending', ${due}::timestamptz from p`);
      const claims = await claimDue(db, new Date(), n, 60_000);
      expect(claims).toHaveLength(n);
      expect((await Promise.all(claims.map((c) => markMaybeSent(db, c, new Date())))).every(Boolean)).toBe(true);
      expect((await Promise.all(claims.map((c, i) => recordPublished(db, c, `page_${i}`, new Date())))).every(Boolean)).toBe(true);
      // A target event and a post event per post.
      expect(await claimDueWebhooks(db, new Date(), 2 * n)).toHaveLength(2 * n);
    };

    await burst(1);
    plans.length = 0;
    await burst(BATCH);

    const [messages] = await executeRows<{ n: number }>(db, sql`select count(*)::int as n from webhook_messages`);
    expect(messages!.n).toBe(2 * (BATCH + 1));
    // The triggers' and the claims' plans were seen (so an empty list means something).
    expect(plans.some((p) => p.includes("Named Tuplestore Scan"))).toBe(true);
    expect(plans.some((p) => p.includes("CTE Scan on picked"))).toBe(true);
    expect(repeatedScans(plans)).toEqual([]);
  }, 60_000);
});
