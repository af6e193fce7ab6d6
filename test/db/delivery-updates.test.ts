/**
 * How the delivery store's writes land in the heap, on PGlite and on the machine's PostgreSQL: the
 * write-ahead mark changes no indexed column, so on a page with room it is a heap-only (HOT) update, with
 * no new entry in the deliveries' indexes. Migration 0007 keeps that room (fillfactor 70); on full pages
 * about a third of the marks were ordinary updates.
 *
 * The room a mark finds depends on the page's dead versions being pruned, which PostgreSQL does only once no
 * transaction that began before they died is still running anywhere on the server (a snapshot's xmin is
 * global, whatever database the transaction is in). So before its claim and before its marks, each batch waits
 * for the transactions older than that moment to end: another suite's writes in its own database would
 * otherwise decide the result.
 */
import { afterAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { executeRows, type Db } from "../../db/client";
import { createUser } from "../../src/http/api-keys";
import { claimDue, markMaybeSent } from "../../src/social/delivery/store";
import { nodeDbDrivers } from "../helpers/node-db-drivers";

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

const drivers = nodeDbDrivers(cleanups);

const TARGETS = 624;
const BATCH = 26;

/**
 * Waits (at most 5 s) until every transaction running on the server began after this moment's: from then on,
 * what died before is prunable. The xid is taken by a statement of its own, so this connection holds none.
 */
async function untilOlderTransactionsEnd(db: Db): Promise<void> {
  const [taken] = await executeRows<{ xid: string }>(db, sql`select pg_current_xact_id()::text as xid`);
  for (const deadline = Date.now() + 5_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 5))) {
    const [row] = await executeRows<{ past: boolean }>(db, sql`select pg_snapshot_xmin(pg_current_snapshot()) > ${taken!.xid}::xid8 as past`);
    if (row!.past) return;
  }
}

/** Updates of deliveries so far, and how many of them were heap-only. */
async function updateCounts(db: Db): Promise<{ updates: number; hot: number }> {
  await db.execute(sql`select pg_stat_force_next_flush()`);
  const [row] = await executeRows<{ updates: string; hot: string }>(
    db,
    sql`select pg_stat_get_tuples_updated(c.oid) + pg_stat_get_xact_tuples_updated(c.oid) as updates,
               pg_stat_get_tuples_hot_updated(c.oid) + pg_stat_get_xact_tuples_hot_updated(c.oid) as hot
          from pg_class c where c.relname = 'deliveries' and c.relkind = 'r'`,
  );
  return { updates: Number(row!.updates), hot: Number(row!.hot) };
}

describe.each(drivers)("delivery updates on $name", ({ open }) => {
  it("a batch's write-ahead marks are heap-only updates while new posts arrive", async () => {
    const handle = await open();
    cleanups.push(() => handle.close());
    const { db } = handle;
    const { userId } = await createUser(db, `hot-${crypto.randomUUID().slice(0, 8)}@example.test`);
    const due = new Date(Date.now() - 60_000).toISOString();
    /** Posts created meanwhile: `n` posts of two targets each, due now. */
    const createPosts = async (n: number) => {
      const created = await executeRows<{ id: string }>(
        db,
        sql`insert into posts (user_id, caption) select ${userId}, 'post ' || g from generate_series(1, ${n}) g returning id`,
      );
      await db.execute(sql`
        insert into deliveries (post_id, user_id, account_id, platform, status, next_attempt_at)
        select p.id, ${userId}, a.account_id, 'pageplatform', 'pending', ${due}::timestamptz
          from unnest(${`{${created.map((p) => p.id).join(",")}}`}::uuid[]) as p(id) cross join (values ('pageplatform:1'), ('pageplatform:2')) as a(account_id)`);
    };

    // As under post creation: the delivery loop claims a batch, more posts arrive, then the batch is marked
    // (one statement).
    let marks = 0;
    let hotMarks = 0;
    for (let claimed = 0; claimed < TARGETS; claimed += BATCH) {
      if (claimed === 0) await createPosts(BATCH / 2);
      await untilOlderTransactionsEnd(db);
      const claims = await claimDue(db, new Date(), BATCH, 60_000);
      expect(claims).toHaveLength(BATCH);
      await createPosts(BATCH / 2); // arriving while the batch's contexts are built
      await untilOlderTransactionsEnd(db);
      const before = await updateCounts(db);
      const marked = await Promise.all(claims.map((claim) => markMaybeSent(db, claim, new Date())));
      expect(marked.every(Boolean)).toBe(true);
      const after = await updateCounts(db);
      marks += after.updates - before.updates;
      hotMarks += after.hot - before.hot;
    }
    expect(marks).toBe(TARGETS);
    // Nearly every mark finds room on its row's page (on full pages, about two thirds did).
    expect(hotMarks).toBeGreaterThanOrEqual(TARGETS * 0.9);
  }, 60_000);
});
