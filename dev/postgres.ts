/**
 * Databases on the machine's PostgreSQL (127.0.0.1:5432, user postgres, trust auth), made from the `test`
 * database: a scratch database per test run (`CREATE DATABASE t_<random>`, dropped with connections forced
 * off afterwards), and a named one kept across runs for `npm run dev:edge` (ensureDatabase).
 * Set TEST_PG_URL to use another server; the URL must name a database the user may connect to.
 *
 * @example
 * const scratch = await createScratchDatabase();
 * const handle = await openNodeDb({ url: scratch.url });
 * await handle.close();
 * await scratch.drop();
 */
import { createHash } from "node:crypto";
import { resolve } from "node:path";
import pg from "pg";

export interface ScratchDatabase {
  name: string;
  /** postgres://… of the scratch database. */
  url: string;
  drop(): Promise<void>;
}

export const ADMIN_URL = process.env.TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export async function createScratchDatabase(): Promise<ScratchDatabase> {
  const name = `t_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
  await withAdmin((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    name,
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      await withAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/** A database that stays: created on first use, left alone after. Returns its postgres:// URL. */
export async function ensureDatabase(name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a plain database name: ${name}`);
  await withAdmin(async (client) => {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (!rowCount) await client.query(`CREATE DATABASE ${name}`);
  });
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The database `npm run dev:edge` keeps for a DATA_DIR: one per directory, so two checkouts keep their data apart. */
export function devDatabaseName(dataDir: string): string {
  return `shopkit_dev_${createHash("sha256").update(resolve(dataDir)).digest("hex").slice(0, 12)}`;
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
