/**
 * The database handle the app uses: Drizzle over one of three drivers.
 * - Neon (`@neondatabase/serverless`): the edge, built here because it is portable. Every statement outside a
 *   transaction is one HTTP request (`neon()`, drizzle-orm/neon-http): no connection to set up, one round trip.
 *   A transaction opens a WebSocket `Client` of its own for its life (BEGIN, its statements, COMMIT), since
 *   an interactive transaction needs a session; the connection ends with the transaction.
 * - PGlite (no DATABASE_URL) and node-postgres (`postgres://` on Node): built in db/node.ts, which only
 *   Node code imports, so neither driver is ever bundled into the Worker.
 *
 * @example
 * const { db, close } = createNeonDb("postgres://user:pass@host/db");
 */
import { Client, neon, neonConfig } from "@neondatabase/serverless";
import type { SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzleHttp } from "drizzle-orm/neon-http";
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
  /** For tests and local setups: where HTTP queries go (Neon's documented local mode), e.g. `http://127.0.0.1:4444/sql`. */
  fetchEndpoint?: string;
  webSocketConstructor?: unknown;
}

export function createNeonDb(url: string, options: NeonOptions = {}): DbHandle {
  if (options.wsProxy) {
    neonConfig.wsProxy = options.wsProxy;
    neonConfig.useSecureWebSocket = false;
    neonConfig.pipelineTLS = false;
    neonConfig.pipelineConnect = false;
  }
  if (options.fetchEndpoint) neonConfig.fetchEndpoint = options.fetchEndpoint;
  if (options.webSocketConstructor) neonConfig.webSocketConstructor = options.webSocketConstructor as typeof WebSocket;
  const db = drizzleHttp({ client: neon(url), schema }) as unknown as Db;
  // A transaction on a session of its own: Drizzle's neon-http session has none to run one on.
  const transaction: Db["transaction"] = async (run, config) => {
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      return await (drizzleNeon({ client, schema }) as unknown as Db).transaction(run, config);
    } finally {
      await client.end().catch(() => {});
    }
  };
  Object.defineProperty(db, "transaction", { value: transaction });
  return { db, driver: "neon", close: async () => {} };
}

export { schema };
