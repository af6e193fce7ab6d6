/**
 * Node entry point: `npm start`. Embedded defaults for every port whose variables are unset (PGlite in
 * DATA_DIR, files on disk, in-memory rate limits, the scheduler loop) and, on the embedded database, the
 * platform sandbox turned on (PLATFORM_SANDBOX=on; see embeddedDefaults).
 * First start creates a user and an API key, prints the key once and writes it to DATA_DIR/dev-api-key.
 * Every start without an OIDC provider prints a one-time hub sign-in link for that first user.
 * SIGINT/SIGTERM: stop accepting, let in-flight requests finish, stop the loop, close the database.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { asc, sql } from "drizzle-orm";
import { ConfigError, parseConfig } from "../src/config";
import { createApp, MAX_BODY_BYTES } from "../src/app";
import { createApiKey, createUser } from "../src/http/api-keys";
import { createLoginLink, LOGIN_LINK_TTL_MS } from "../src/hub/login-links";
import { users } from "../db/schema";
import type { Services } from "../src/services";
import { buildNodeServices } from "./node/services";
import { createAdminRoutes, writeAdminFile } from "./node/admin-server";
import { startBackground } from "./node/background";
import { drainUnreadBody } from "./node/drain-body";

/**
 * `npm start` on the embedded database (no DATABASE_URL) and without the real platforms turns the platform
 * sandbox on explicitly, so the README works with no account and no network. Anywhere else it stays as
 * configured: PLATFORM_SANDBOX unset means off.
 */
function embeddedDefaults(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const unset = (name: string) => (env[name] ?? "").trim() === "";
  if (unset("PLATFORM_SANDBOX") && unset("DATABASE_URL") && unset("GRAPH_API_BASE")) return { ...env, PLATFORM_SANDBOX: "on" };
  return env;
}

async function main() {
  let config;
  try {
    config = parseConfig(embeddedDefaults(process.env));
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }

  const node = await buildNodeServices(config);
  const { services } = node;
  await ensureFirstUser(services.db, config.dataDir);
  if (!config.oidc) await printSignInLink(services);

  const admin = await writeAdminFile(config.dataDir, { url: `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${config.port}` });
  const app = createApp(services, { mount: (a) => a.route("/", createAdminRoutes(admin.token)) });
  const background = await startBackground(services, app);

  const server = serve({ fetch: drainUnreadBody(app.fetch, { maxBytes: MAX_BODY_BYTES }), port: config.port, hostname: config.host }, (info) => {
    services.log.info("listening", { url: `http://${info.address.includes(":") ? `[${info.address}]` : info.address}:${info.port}`, publicBaseUrl: config.publicBaseUrl, database: node.db.driver, platformSandbox: config.graph.sandbox });
  });
  server.on("error", (err) => {
    console.error(`cannot listen on ${config.host}:${config.port}: ${err.message}`);
    process.exit(1);
  });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      console.error("forced exit");
      process.exit(1);
    }
    stopping = true;
    services.log.info("shutting down", { signal });
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await background.stop();
    await node.close();
    await admin.remove();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

async function ensureFirstUser(db: import("../db/client").Db, dataDir: string) {
  const result = await db.execute(sql`select count(*)::int as n from users`);
  const rows = (result as unknown as { rows?: Array<{ n: number }> }).rows ?? (result as unknown as Array<{ n: number }>);
  if (Number(rows[0]?.n ?? 0) > 0) return;
  const { userId } = await createUser(db, "dev@localhost");
  const { key } = await createApiKey(db, userId, "dev");
  await writeFile(join(dataDir, "dev-api-key"), `${key}\n`, { mode: 0o600 });
  console.log(`\nFirst start: created user dev@localhost with this API key (shown once, also in ${join(dataDir, "dev-api-key")}):\n\n  ${key}\n`);
}

/** Without an identity provider, each start prints a one-time hub sign-in link for the first user. */
async function printSignInLink(services: Services) {
  const [first] = await services.db.select({ id: users.id, email: users.email }).from(users).orderBy(asc(users.createdAt)).limit(1);
  if (!first) return;
  const link = await createLoginLink(services, first.id);
  console.log(`\nSign in to the hub as ${first.email} (one-time link, valid ${LOGIN_LINK_TTL_MS / 60_000} minutes):\n\n  ${link}\n`);
}

main().catch((err) => {
  console.error(`start-up failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
