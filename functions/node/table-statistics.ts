/**
 * Keeps the planner's statistics of the service's tables current where nothing else does: PGlite has no
 * autovacuum, and a PostgreSQL can run with it off (this project's machines do). Without statistics a
 * table that grew from empty is still planned as the few pages it had, and node-postgres's and PGlite's
 * prepared statements, and the PL/pgSQL status triggers, keep the plan they made then: a sequential scan
 * of posts or deliveries for a batch of a few ids, whose cost grows with every post the service holds
 * (under post creation on PostgreSQL that was a third of the database's CPU after ten seconds).
 *
 * Every `intervalMs` one query finds the tables of the current schema that grew by a tenth (and at least
 * MIN_GROWTH_PAGES) since their last ANALYZE, as autovacuum's own threshold does in rows, and analyzes them;
 * that also invalidates the cached plans that read them, so the next run plans on the new statistics.
 * Nothing runs on a PostgreSQL whose autovacuum is on: that one does it already.
 *
 * @example
 * const keeper = await keepTableStatistics(db, "node-postgres", log);
 * await keeper.stop();
 */
import { sql } from "drizzle-orm";
import { executeRows, type Db, type DbHandle } from "../../db/client";
import type { Logger } from "../../src/services";

/** How often the sizes are looked at (one cheap catalog query). */
const INTERVAL_MS = 5_000;
/** A table is analyzed again once it holds this many more pages (and a tenth more) than at its last ANALYZE. */
const MIN_GROWTH_PAGES = 8;

export interface StatisticsKeeper {
  /** Whether this database needs it (false: autovacuum keeps the statistics, nothing is scheduled). */
  readonly active: boolean;
  /** Analyzes what grew, now; the names of the tables analyzed. */
  refresh(): Promise<string[]>;
  /** Stops the timer and waits for a refresh in progress. */
  stop(): Promise<void>;
}

export async function keepTableStatistics(
  db: Db,
  driver: DbHandle["driver"],
  log: Pick<Logger, "debug" | "warn">,
  intervalMs = INTERVAL_MS,
): Promise<StatisticsKeeper> {
  const active = driver === "pglite" || (driver === "node-postgres" && !(await autovacuumOn(db)));
  let running: Promise<string[]> | null = null;
  /** Tables found holding no live row, by their size then in pages: looked at again only once they grow on. */
  const emptyAt = new Map<string, number>();
  const refresh = () => (running ??= analyzeGrown(db, emptyAt).finally(() => (running = null)));
  const timer = active
    ? setInterval(() => {
        refresh().then(
          (tables) => tables.length && log.debug("table statistics refreshed", { tables }),
          (err) => log.warn("table statistics refresh failed", { error: String(err) }),
        );
      }, intervalMs)
    : null;
  timer?.unref();
  return {
    active,
    refresh,
    async stop() {
      if (timer) clearInterval(timer);
      await running?.catch(() => {});
    },
  };
}

async function autovacuumOn(db: Db): Promise<boolean> {
  const [row] = await executeRows<{ on: boolean }>(db, sql`select current_setting('autovacuum') = 'on' as "on"`);
  return Boolean(row?.on);
}

/** Whether a table of `pages` pages has grown by the rule from `from` pages (its last ANALYZE's, or when found empty). */
const grownFrom = (from: number, pages: number) => pages >= Math.max(from + MIN_GROWTH_PAGES, from * 1.1);

async function analyzeGrown(db: Db, emptyAt: Map<string, number>): Promise<string[]> {
  const tables = await executeRows<{ name: string; pages: number; analyzedPages: number }>(
    db,
    sql`
      select quote_ident(c.relname) as name, (pg_relation_size(c.oid) / current_setting('block_size')::int)::int as pages,
             c.relpages as "analyzedPages"
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = current_schema() and c.relkind = 'r'`,
  );
  // A table that holds no live row now (its rows deleted, the dead ones not vacuumed) is left as it is: analyzed,
  // it would be planned as empty whatever it grows to until the next ANALYZE (PostgreSQL scales the rows per page
  // it saw, none, by the table's size), and a queue emptied and refilled by a burst faster than that, such as the
  // webhook deliveries, would have every statement that finds its rows by id read the whole table instead. It is
  // looked at again once it has grown on from there, not every time (finding it empty reads its dead rows).
  const filled = [];
  for (const { name, pages, analyzedPages } of tables) {
    if (!grownFrom(Math.max(analyzedPages, emptyAt.get(name) ?? 0), pages)) continue;
    const [row] = await executeRows<{ any: boolean }>(db, sql.raw(`select exists (select from ${name}) as "any"`));
    if (row?.any) {
      filled.push(name);
      emptyAt.delete(name);
    } else emptyAt.set(name, pages);
  }
  if (filled.length) await db.execute(sql.raw(`analyze ${filled.join(", ")}`));
  return filled;
}
