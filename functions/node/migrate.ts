/**
 * `npm run db:migrate`: applies db/migrations to DATABASE_URL (Neon or any Postgres), or to the embedded
 * PGlite in DATA_DIR when DATABASE_URL is unset. The embedded server also migrates on every start.
 */
import { join } from "node:path";
import { mkdir } from "node:fs/promises";
import { ConfigError, parseConfig } from "../../src/config";
import { openNodeDb } from "../../db/node";

try {
  const config = parseConfig(process.env);
  if (!config.databaseUrl) await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  const handle = await openNodeDb({ url: config.databaseUrl, pgliteDir: join(config.dataDir, "pg"), migrate: true });
  await handle.close();
  console.log(`migrations applied (${handle.driver}${config.databaseUrl ? "" : ` in ${join(config.dataDir, "pg")}`})`);
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : `migration failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
