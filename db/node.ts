/**
 * Node-only database drivers: PGlite (embedded, data on disk or in memory; its statements kept named, see
 * db/pglite-statements.ts) and node-postgres.
 * Migrations are applied from db/migrations by Drizzle's migrator for the driver in use.
 *
 * @example
 * const handle = await openNodeDb({ dataDir: ".data" });          // PGlite in .data/pg
 * const handle = await openNodeDb({ url: "postgres://localhost/test" });
 */
import { fileURLToPath } from "node:url";
import { StatementCachingPGlite } from "./pglite-statements";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { nameStatements } from "./prepared";
import * as schema from "./schema";
import type { Db, DbHandle } from "./client";

export const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations", import.meta.url));

/** node-postgres connections per process (see openNodeDb). */
const POOL_SIZE = 4;

export interface NodeDbOptions {
  /** postgres:// URL; when absent, PGlite. */
  url?: string;
  /** PGlite data directory; absent means in memory. */
  pgliteDir?: string;
  /** Apply pending migrations before returning (default true). */
  migrate?: boolean;
  poolSize?: number;
}

export async function openNodeDb(options: NodeDbOptions): Promise<DbHandle> {
  if (options.url) {
    // A few connections, kept: each new PostgreSQL backend pays for its start and then again for the first use
    // of every statement, plan and PL/pgSQL function, so node-postgres's defaults (10, closed after 10 s idle)
    // made a burst of scheduled posts after a quiet minute open and warm ten backends on the spot (about half
    // the database's CPU of that burst). Four keep a two-core server busy; an idle one is dropped when the
    // server ends it (the error listener below) and opened again on demand.
    const size = options.poolSize ?? POOL_SIZE;
    const pool = new pg.Pool({ connectionString: options.url, max: size, idleTimeoutMillis: 0 });
    // An idle connection the server ends (a restart, a failover, pg_terminate_backend) is reported here and
    // dropped by the pool, which connects afresh on the next query; without a listener it would crash the
    // process.
    pool.on("error", () => {});
    const db = drizzlePg({ client: pool, schema });
    if (options.migrate !== false) await migratePg(db, { migrationsFolder: MIGRATIONS_DIR });
    nameStatements(db as unknown as Db);
    await openAll(pool, size);
    return { db: db as unknown as Db, driver: "node-postgres", close: () => pool.end() };
  }
  const client = options.pgliteDir ? new StatementCachingPGlite(options.pgliteDir) : new StatementCachingPGlite();
  await client.waitReady;
  const db = drizzlePglite({ client, schema });
  if (options.migrate !== false) await migratePglite(db, { migrationsFolder: MIGRATIONS_DIR });
  nameStatements(db as unknown as Db);
  return { db: db as unknown as Db, driver: "pglite", close: () => client.close() };
}

/**
 * Opens the pool's connections together at start-up, so the first burst of work does not wait for them one
 * by one. Best effort: a
 * connection that fails here is opened again when a query needs it.
 */
async function openAll(pool: pg.Pool, size: number): Promise<void> {
  const clients = await Promise.allSettled(Array.from({ length: size }, () => pool.connect()));
  for (const c of clients) if (c.status === "fulfilled") c.value.release();
}

export type { Db };
