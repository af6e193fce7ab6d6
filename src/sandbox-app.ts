/**
 * createSandboxApp(services): only the platform sandbox (/sandbox), for the Node process's own in-process
 * Graph calls (functions/node.ts, functions/node/delivery-worker.ts). The sandbox's routes and the same error rendering as
 * createApp, without the rest of the API or the access log (the delivery's own log lines record its
 * attempts). A module of its own, so that the thread's bundle holds none of the other areas' routes (their
 * services, which the thread builds, are still in it): the whole app cost that thread memory for routes it
 * never serves, and a log line per call.
 *
 * @example
 * answerSandboxInProcess(services, () => createSandboxApp(services)); // functions/node/sandbox-fetch.ts
 */
import { Hono } from "hono";
import type { Services } from "./services";
import type { AppEnv } from "./http/env";
import { ApiError, renderError } from "./http/errors";
import { createSandboxRoutes } from "./social/sandbox";

export function createSandboxApp(services: Services): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use("*", async (c, next) => {
    // No X-Request-Id header (nobody reads the in-process answers' headers), but an id for an error's log line.
    c.set("requestId", crypto.randomUUID());
    c.set("services", services);
    await next();
  });
  app.route("/sandbox", createSandboxRoutes());
  app.notFound(() => {
    throw new ApiError("NOT_FOUND", "No route matches this method and path.");
  });
  app.onError((err, c) => renderError(err, c, services.log));
  return app;
}
