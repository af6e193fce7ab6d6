/**
 * What `npm start` does on embedded defaults, shared with `npm run dev:edge`: the platform sandbox turned on
 * for the embedded database (embeddedDefaults), the first user `dev@localhost` of a new database and its API
 * key in DATA_DIR/dev-api-key (mode 600), and on every start a one-time hub sign-in link.
 *
 * Both commands share DATA_DIR but not the database (PGlite in DATA_DIR/pg, or a Postgres database), so a
 * database met for the first time takes the key already in DATA_DIR/dev-api-key when there is one: the
 * README's `KEY=$(cat "${DATA_DIR:-.data}/dev-api-key")` then works against either. Every start prints
 * where that file is (DATA_DIR is wherever the operator points it).
 *
 * @example
 * const config = parseConfig(embeddedDefaults(process.env));
 * await ensureFirstUser(services.db, config.dataDir);
 * await printSignInLink(services);
 */
import { readFile, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { asc, sql } from "drizzle-orm";
import { executeRows, type Db } from "../../db/client";
import { users } from "../../db/schema";
import { createApiKey, createUser, isWellFormedApiKey, verifyApiKey } from "../../src/http/api-keys";
import { createLoginLink, LOGIN_LINK_TTL_MS } from "../../src/hub/login-links";
import type { Logger, Services } from "../../src/services";

export const DEV_EMAIL = "dev@localhost";

/**
 * `npm start` on the embedded database (no DATABASE_URL) and without the real platforms turns the platform
 * sandbox on explicitly, so the README works with no account and no network, and with it webhook endpoints on
 * this machine (WEBHOOK_ALLOW_LOOPBACK, unless set). Anywhere else both stay as configured: unset means off.
 */
export function embeddedDefaults(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const unset = (name: string) => (env[name] ?? "").trim() === "";
  if (unset("PLATFORM_SANDBOX") && unset("DATABASE_URL") && unset("GRAPH_API_BASE")) {
    return { ...env, PLATFORM_SANDBOX: "on", WEBHOOK_ALLOW_LOOPBACK: unset("WEBHOOK_ALLOW_LOOPBACK") ? "on" : env.WEBHOOK_ALLOW_LOOPBACK };
  }
  return env;
}

/** Creates the first user and its key on a new database; on every start, prints where the key file is. */
export async function ensureFirstUser(db: Db, dataDir: string): Promise<void> {
  const path = resolve(dataDir, "dev-api-key");
  const existing = (await readFile(path, "utf8").catch(() => "")).trim();
  const rows = await executeRows<{ n: number }>(db, sql`select count(*)::int as n from users`);
  if (Number(rows[0]?.n ?? 0) > 0) {
    if (existing && !(await verifyApiKey(db, existing))) {
      console.log(`\nNote: the key in ${path} is not a key of this database; make one with: npm run admin -- key:create --email ${DEV_EMAIL}\n`);
    } else if (existing) {
      console.log(`\nThe API key of ${DEV_EMAIL} is in ${path}:\n\n  KEY=$(cat ${shellQuoted(path)})\n`);
    } else {
      console.log(`\nNo API key file at ${path}; make a key with: npm run admin -- key:create --email ${DEV_EMAIL}\n`);
    }
    return;
  }
  const { userId } = await createUser(db, DEV_EMAIL);
  if (isWellFormedApiKey(existing)) {
    await createApiKey(db, userId, "dev", { key: existing });
    console.log(`\nFirst start on this database: created user ${DEV_EMAIL} with the API key already in ${path}.\n`);
    return;
  }
  const { key } = await createApiKey(db, userId, "dev");
  await writeFile(path, `${key}\n`, { mode: 0o600 });
  console.log(`\nFirst start: created user ${DEV_EMAIL} with this API key (shown once, also in ${path}):\n\n  ${key}\n`);
}

/** `path` as one shell word: bare when it holds only safe characters, else in single quotes. */
function shellQuoted(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`;
}

/** Without an identity provider, each start prints a one-time hub sign-in link for the first user. */
export async function printSignInLink(services: Pick<Services, "db" | "config" | "clock">): Promise<void> {
  const [first] = await services.db.select({ id: users.id, email: users.email }).from(users).orderBy(asc(users.createdAt)).limit(1);
  if (!first) return;
  const link = await createLoginLink(services, first.id);
  console.log(`\nSign in to the hub as ${first.email} (one-time link, valid ${LOGIN_LINK_TTL_MS / 60_000} minutes):\n\n  ${link}\n`);
}

/**
 * Ctrl-C and SIGTERM stop in order: `stop` runs once (it closes what the command opened), then the process
 * exits 0; a second signal while it runs forces exit 1. Used by `npm start` and `npm run dev:edge`.
 *
 * @example
 * stopOnSignals(log, async () => { await server.close(); await db.close(); });
 */
export function stopOnSignals(log: Pick<Logger, "info">, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      console.error("forced exit");
      process.exit(1);
    }
    stopping = true;
    log.info("shutting down", { signal });
    await stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}
