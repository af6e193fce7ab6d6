/**
 * Node entry point: `npm start`. Embedded defaults for every port whose variables are unset (PGlite in
 * DATA_DIR, files on disk, in-memory rate limits, the scheduler loop) and, on the embedded database, the
 * platform sandbox turned on (PLATFORM_SANDBOX=on; see embeddedDefaults).
 * First start creates a user and an API key, prints the key once and writes it to DATA_DIR/dev-api-key.
 * Every start without an OIDC provider prints a one-time hub sign-in link for that first user.
 * SIGINT/SIGTERM: stop accepting, let in-flight requests finish, stop the loop, close the database.
 */
import { serve } from "@hono/node-server";
import { ConfigError, parseConfig } from "../src/config";
import { createApp, MAX_BODY_BYTES } from "../src/app";
import { createSandboxApp } from "../src/sandbox-app";
import { buildNodeServices } from "./node/services";
import { createAdminRoutes, writeAdminFile } from "./node/admin-server";
import { startBackground } from "./node/background";
import { answerSandboxInProcess } from "./node/sandbox-fetch";
import { drainUnreadBody } from "./node/drain-body";
import { embeddedDefaults, ensureFirstUser, printSignInLink, stopOnSignals } from "./node/embedded";
import { tuneHeapGrowth } from "./node/heap";

async function main() {
  tuneHeapGrowth();
  let config: ReturnType<typeof parseConfig>;
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
  // The process's own Graph calls reach only the sandbox's routes (as in the delivery thread): no access log
  // line or request id per publish, no routing through the whole API.
  answerSandboxInProcess(services, () => createSandboxApp(services));
  const background = await startBackground(services, node.db.driver);

  const server = serve({ fetch: drainUnreadBody(app.fetch, { maxBytes: MAX_BODY_BYTES }), port: config.port, hostname: config.host }, (info) => {
    services.log.info("listening", {
      url: `http://${info.address.includes(":") ? `[${info.address}]` : info.address}:${info.port}`,
      publicBaseUrl: config.publicBaseUrl,
      database: node.db.driver,
      platformSandbox: config.graph.sandbox,
    });
  });
  server.on("error", (err) => {
    console.error(`cannot listen on ${config.host}:${config.port}: ${err.message}`);
    process.exit(1);
  });

  stopOnSignals(services.log, async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await background.stop();
    await node.close();
    await admin.remove();
  });
}

main().catch((err) => {
  console.error(`start-up failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
