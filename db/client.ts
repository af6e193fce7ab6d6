/**
 * The database handle the app uses: Drizzle over one of three drivers.
 * - Neon (`@neondatabase/serverless` Pool over WebSockets): the edge, built here because it is portable.
 * - PGlite (no DATABASE_URL) and node-postgres (`postgres://` on Node): built in db/node.ts, which only
 *   Node code imports, so neither driver is ever bundled into the Worker.
 *
 * @example
 * const { db, close } = createNeonDb("postgres://user:pass@host/db");
 */
import { Pool, neonConfig } from "@neondatabase/serverless";
import type { SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzleNeon } from "drizzle-orm/neon-serverless";
import * as schema from "./schema";

export type Schema = typeof schema;
export type Db = PgDatabase<PgQueryResultHKT, Schema>;

export interface DbHandle {
  db: Db;
  driver: "pglite" | "node-postgres" | "neon";
  close(): Promise<void>;
}

/**
 * The rows of a raw statement (`db.execute(sql…)`): the drivers answer a result holding `rows` (an array is
 * taken as it is).
 *
 * @example
 * const [row] = await executeRows<{ n: number }>(db, sql`select count(*)::int as n from users`);
 */
export async function executeRows<T>(db: Db, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows?: T[] } | T[];
  return (result as { rows?: T[] }).rows ?? (result as T[]);
}

export interface NeonOptions {
  /** For tests and local setups: route the WebSocket through a plain `ws://` proxy (Neon's documented local mode). */
  wsProxy?: (host: string, port: number | string) => string;
  webSocketConstructor?: unknown;
}

export function createNeonDb(url: string, options: NeonOptions = {}): DbHandle {
  if (options.wsProxy) {
    neonConfig.wsProxy = options.wsProxy;
    neonConfig.useSecureWebSocket = false;
    neonConfig.pipelineTLS = false;
    neonConfig.pipelineConnect = false;
  }
  if (options.webSocketConstructor) neonConfig.webSocketConstructor = options.webSocketConstructor as typeof WebSocket;
  const pool = new Pool({ connectionString: url });
  const db = drizzleNeon({ client: pool, schema }) as unknown as Db;
  return { db, driver: "neon", close: () => pool.end() };
}

export { schema };
