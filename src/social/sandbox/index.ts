/**
 * The built-in platform sandbox at /sandbox, served only when PLATFORM_SANDBOX=on (npm start on the embedded
 * database and npm run dev:edge turn it on); otherwise every sandbox path answers 404, so a deployment that
 * forgot a variable never exposes it. The adapters reach `/sandbox/graph/...` over real HTTP, exactly
 * as they reach the Graph API; the control routes let an API key's owner connect accounts and inject faults.
 * Closed to strangers all the same: the consent dialog wants a hub session (oauth.tsx), the app's secret is
 * the deployment's own (app-secret.ts), images are read from storage or through the safe fetcher (images.ts),
 * the routes without an API key are limited per client address (limits.ts), and the sweep purges expired
 * rows (store.ts, `purgeExpired`).
 *
 * @example
 * app.route("/sandbox", createSandboxRoutes());
 */
import { Hono } from "hono";
import { declaredBodyLimit } from "../../http/body-limit";
import type { AppEnv } from "../../http/env";
import { ApiError } from "../../http/errors";
import { createSandboxControlRoutes } from "./control";
import { createSandboxGraphRoutes } from "./graph";
import { createSandboxDialogRoutes } from "./oauth";

export const SANDBOX_MAX_BODY_BYTES = 1024 * 1024;

export function createSandboxRoutes(): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  router.use("*", async (c, next) => {
    if (!c.get("services").config.graph.sandbox) throw new ApiError("NOT_FOUND", "No route matches this method and path.");
    c.header("Cache-Control", "no-store");
    await next();
  });
  // Sandbox requests are small forms and JSON; a megabyte is ample and keeps parseBody from buffering more.
  router.use(
    "*",
    declaredBodyLimit(SANDBOX_MAX_BODY_BYTES, () => new ApiError("PAYLOAD_TOO_LARGE", "Sandbox request bodies are at most 1 MB.")),
  );
  router.route("/graph", createSandboxGraphRoutes());
  router.route("/", createSandboxDialogRoutes());
  router.route("/", createSandboxControlRoutes());
  return router;
}
