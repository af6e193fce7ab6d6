/**
 * The Node server's statistics keeper (functions/node/table-statistics.ts), on PGlite and on the machine's
 * PostgreSQL: a statement prepared while `posts` was small keeps planning a sequential scan for a batch of
 * ids after the table grew, until the keeper sees the growth and analyzes it; then the same prepared
 * statement reads the primary key's index. A grown table with no live row is not analyzed (it would be planned
 * as empty whatever it holds next).
 */
import { afterAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { executeRows, type Db } from "../../db/client";
import { createUser } from "../../src/http/api-keys";
import { keepTableStatistics } from "../../functions/node/table-statistics";
import { nodeDbDrivers } from "../helpers/node-db-drivers";

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

const quiet = { debug() {}, warn() {} };

const drivers = nodeDbDrivers(cleanups);

/** The plan of the prepared lookup, as EXPLAIN's text lines joined. */
const planOf = async (db: Db, ids: string) =>
  (await executeRows<{ "QUERY PLAN": string }>(db, sql.raw(`explain execute posts_by_ids('${ids}')`))).map((r) => r["QUERY PLAN"]).join("\n");

describe.each(drivers)("table statistics on $name", ({ open }) => {
  /** A database of this driver and a keeper on it that only `refresh()` runs. */
  const withKeeper = async () => {
    const handle = await open();
    cleanups.push(() => handle.close());
    const keeper = await keepTableStatistics(handle.db, handle.driver, quiet, 60_000);
    cleanups.push(() => keeper.stop());
    return { db: handle.db, keeper };
  };

  it("a prepared lookup by ids uses the primary key once the keeper has analyzed the grown table", async () => {
    const { db, keeper } = await withKeeper();
    if (!keeper.active) {
      // A PostgreSQL whose autovacuum is on keeps its own statistics; the keeper stays out of its way.
      await expect(executeRows<{ on: string }>(db, sql`select current_setting('autovacuum') as "on"`)).resolves.toEqual([{ on: "on" }]);
      return;
    }
    const { userId } = await createUser(db, `stats-${crypto.randomUUID().slice(0, 8)}@example.test`);
    await db.execute(sql`insert into posts (user_id, caption) select ${userId}, 'post ' || g from generate_series(1, 20) g`);
    const some = await executeRows<{ id: string }>(db, sql`select id from posts limit 3`);
    const ids = `{${some.map((r) => r.id).join(",")}}`;

    // Planned while small: after five custom plans PostgreSQL keeps the generic one, a scan of the table.
    await db.execute(sql.raw("prepare posts_by_ids(uuid[]) as select p.id, p.caption from posts p join unnest($1) as u(id) on p.id = u.id"));
    for (let i = 0; i < 6; i++) await db.execute(sql.raw(`execute posts_by_ids('${ids}')`));
    expect(await planOf(db, ids)).toMatch(/Seq Scan on posts/);

    await db.execute(sql`insert into posts (user_id, caption) select ${userId}, 'post ' || g from generate_series(1, 30000) g`);
    expect(await planOf(db, ids)).toMatch(/Seq Scan on posts/);

    expect(await keeper.refresh()).toContain("posts");
    expect(await planOf(db, ids)).toMatch(/Index Scan using posts_pkey|Bitmap Index Scan on posts_pkey/);
    const [stats] = await executeRows<{ reltuples: number }>(db, sql`select reltuples::float8 as reltuples from pg_class where relname = 'posts'`);
    expect(Number(stats!.reltuples)).toBeGreaterThan(25_000);

    // Nothing grew since: nothing is analyzed again.
    expect(await keeper.refresh()).not.toContain("posts");
  }, 120_000);

  it("leaves a grown table that holds no live row unanalyzed, so a burst that refills it is not planned as an empty table", async () => {
    const { db, keeper } = await withKeeper();
    if (!keeper.active) return; // autovacuum's own (asserted above)
    const table = `queue_${crypto.randomUUID().slice(0, 8)}`;
    await db.execute(sql.raw(`create table ${table} (id uuid primary key default gen_random_uuid(), body text)`));
    const estimate = async () => {
      const [line] = await executeRows<{ "QUERY PLAN": string }>(db, sql.raw(`explain select * from ${table}`));
      return Number(/rows=(\d+)/.exec(line!["QUERY PLAN"])![1]);
    };
    // Filled and emptied again (its endpoint deleted, say) before the keeper looked: grown, but no live row.
    await db.execute(sql.raw(`insert into ${table} (body) select repeat('x', 200) from generate_series(1, 2000)`));
    await db.execute(sql.raw(`delete from ${table}`));
    expect(await keeper.refresh()).not.toContain(table);

    // A burst refills it: planned on the rows its pages hold, not as empty.
    await db.execute(sql.raw(`insert into ${table} (body) select repeat('x', 200) from generate_series(1, 2000)`));
    expect(await estimate()).toBeGreaterThan(1000);
    expect(await keeper.refresh()).toContain(table);
    expect(await estimate()).toBe(2000);
  }, 120_000);
});
