/**
 * `npm run dev:edge`: the Worker (functions/worker.ts, built by wrangler) in workerd on this machine, on the
 * conventions of `npm start`: http://HOST:PORT (127.0.0.1:8787), DATA_DIR (.data) with the dev user's key in
 * DATA_DIR/dev-api-key, a hub sign-in link per start, and `npm run admin` working beside it.
 *
 * The Worker gets wrangler.toml's [vars] and the edge's services from local stand-ins (dev/edge-worker.ts),
 * started and stopped with it: the Neon driver through a WebSocket bridge to the machine's PostgreSQL
 * (database `shopkit_dev_<hash of DATA_DIR>`, kept across runs, or DATABASE_URL on loopback), Upstash rate
 * limits through a REST bridge to the machine's Redis, the S3 fake (objects in DATA_DIR/edge-s3, served at
 * PUBLIC_BASE_URL/files) and the QStash fake, which calls the Worker back to publish. PLATFORM_SANDBOX=on
 * unless set otherwise (or GRAPH_API_BASE is set), as the README's examples need. The cron sweep runs every
 * minute, as the cron trigger does on Cloudflare. Other configuration variables in the environment
 * (RATE_LIMIT_*, LOG_LEVEL, ...) are handed to the Worker.
 *
 * @example
 * npm run dev:edge                  # then the README's curl examples, with KEY=$(cat .data/dev-api-key)
 * PORT=9000 DATA_DIR=/tmp/e npm run dev:edge
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { openNodeDb } from "../db/node";
import { CONFIG_VARIABLES, ConfigError, parseConfig, type Config } from "../src/config";
import { parseEdgeConfig } from "../src/edge-services";
import { generateTokenKey } from "../src/adapters/token-cipher";
import { JsonLogger } from "../src/adapters/logger";
import type { AppEnv } from "../src/http/env";
import type { Services } from "../src/services";
import { createAdminRoutes, writeAdminFile } from "../functions/node/admin-server";
import { ensureFirstUser, printSignInLink, stopOnSignals } from "../functions/node/embedded";
import { embeddedSecret } from "../functions/node/services";
import { devDatabaseName, ensureDatabase } from "./postgres";
import { startLocalEdge, type LocalEdge } from "./edge-worker";

/** Bindings dev:edge wires to its stand-ins; the same names from the environment are not handed over. */
const WIRED = /^(DATABASE_URL|TOKEN_ENCRYPTION_KEY|S3_.*|UPSTASH_.*|QSTASH_.*|PUBLIC_BASE_URL|NEON_WS_PROXY)$/;
const SWEEP_EVERY_MS = 60_000;
const SIGNALS = ["SIGINT", "SIGTERM"] as const;

async function main(): Promise<void> {
  const config = readConfig();
  const log = JsonLogger(config.logLevel);
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });

  const databaseUrl = process.env.DATABASE_URL?.trim() || (await ensureDatabase(devDatabaseName(config.dataDir)));
  if (!["127.0.0.1", "localhost", "[::1]"].includes(new URL(databaseUrl).hostname)) {
    fail(`DATABASE_URL must name a Postgres on this machine: dev:edge bridges only loopback addresses (got host ${new URL(databaseUrl).hostname}).`);
  }
  const db = await openNodeDb({ url: databaseUrl, poolSize: 2 });
  await ensureFirstUser(db.db, config.dataDir);

  const sandbox = process.env.PLATFORM_SANDBOX?.trim() || (process.env.GRAPH_API_BASE?.trim() ? "off" : "on");
  const passed = Object.fromEntries(
    CONFIG_VARIABLES.filter((name) => !WIRED.test(name) && process.env[name] !== undefined).map((name) => [name, process.env[name]!]),
  );
  const signalListeners = new Map(SIGNALS.map((signal) => [signal, process.listeners(signal)]));
  let edge: LocalEdge;
  try {
    edge = await startLocalEdge({
      databaseUrl,
      tokenEncryptionKey: await embeddedSecret(config.dataDir, "token-key", generateTokenKey),
      qstash: true,
      s3: { dir: join(config.dataDir, "edge-s3"), publicBaseUrl: `${config.publicBaseUrl}/files` },
      host: config.host,
      port: config.port,
      bindings: (standard) => ({
        ...standard,
        ...passed,
        PUBLIC_BASE_URL: config.publicBaseUrl,
        PLATFORM_SANDBOX: sandbox,
        WEBHOOK_ALLOW_LOOPBACK: passed.WEBHOOK_ALLOW_LOOPBACK ?? "on",
      }),
    });
  } catch (err) {
    await db.close();
    throw err;
  }

  // The Worker would answer every request with one 500 on a bad configuration; say so here instead.
  let workerConfig: Config;
  try {
    workerConfig = parseEdgeConfig(edge.bindings);
  } catch (err) {
    await edge.dispose();
    await db.close();
    throw err;
  }

  // `npm run admin` reaches this database through DATA_DIR/admin.json, as it reaches a running `npm start`.
  const services = { db: db.db, config: workerConfig, clock: { now: () => new Date() } };
  const adminApp = new Hono<AppEnv>();
  adminApp.use("*", async (c, next) => {
    c.set("services", services as unknown as Services);
    await next();
  });
  const admin = await startAdminServer(adminApp, config.dataDir);
  adminApp.route("/", createAdminRoutes(admin.token));
  if (!workerConfig.oidc) await printSignInLink(services);

  const sweep = setInterval(() => {
    edge.scheduled().catch((err: unknown) => log.error("sweep failed", { error: String(err) }));
  }, SWEEP_EVERY_MS);
  log.info("listening", {
    url: edge.url,
    publicBaseUrl: config.publicBaseUrl,
    runtime: "workerd",
    database: new URL(databaseUrl).pathname.slice(1),
    platformSandbox: sandbox === "on",
  });

  // Miniflare's exit hook and wrangler's module answer SIGINT/SIGTERM with process.exit at once; dev:edge
  // stops in order instead (admin.json removed, the database closed) and disposes Miniflare itself.
  for (const signal of SIGNALS) {
    for (const listener of process.listeners(signal)) if (!signalListeners.get(signal)!.includes(listener)) process.removeListener(signal, listener);
  }
  stopOnSignals(log, async () => {
    clearInterval(sweep);
    await admin.close();
    await edge.dispose();
    await db.close();
  });
}

function readConfig(): Config {
  try {
    return parseConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
}

/** The admin route on its own loopback port (the Worker has no Node-side route to carry it). */
async function startAdminServer(app: Hono<AppEnv>, dataDir: string): Promise<{ token: string; close(): Promise<void> }> {
  const server = await new Promise<ReturnType<typeof serve>>((resolveServer) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolveServer(s));
  });
  const { port } = server.address() as { port: number };
  const file = await writeAdminFile(dataDir, { url: `http://127.0.0.1:${port}` });
  return {
    token: file.token,
    async close() {
      await file.remove();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

main().catch((err: unknown) => {
  const message = err instanceof ConfigError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err);
  console.error(`dev:edge failed to start: ${message}`);
  if (/ECONNREFUSED.*(5432|6379)/.test(message))
    console.error("It needs PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379 (.ci/run shows how to start them).");
  process.exit(1);
});
