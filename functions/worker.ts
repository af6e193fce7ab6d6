/**
 * The Cloudflare Worker: `fetch` serves the app, `scheduled` (cron, every minute) runs the delivery sweep.
 * Thin on purpose. What depends only on the bindings is done once per isolate: the config is parsed once per
 * env (and origin, while PUBLIC_BASE_URL is unset; a bad value answers one 500 naming the variable, never
 * its value), and the app (its routers and the OpenAPI definitions) is built once per config. Each request
 * gets its own Services (src/edge-services.ts: the isolate's parts plus this request's `waitUntil`), read by
 * the app through the request's ExecutionContext, and closed after the response once deferred work is done.
 *
 * @example
 * // wrangler.toml: main = "functions/worker.ts"
 * npx wrangler deploy --dry-run --outdir dist
 */
import type { ExecutionContext, ExportedHandler, Response as WorkerResponse, ScheduledController } from "@cloudflare/workers-types/index";
import { Hono } from "hono";
import { requestId } from "hono/request-id";
import zxingWasm from "zxing-wasm/reader/zxing_reader.wasm";
import { createApp } from "../src/app";
import { ConfigError, type Config } from "../src/config";
import type { Services } from "../src/services";
import { buildEdgeServices, parseEdgeConfig } from "../src/edge-services";
import { JsonLogger } from "../src/adapters/logger";
import { ApiError, renderError } from "../src/http/errors";
import { configureZxing } from "../src/qr/zxing-loader";
import { configureWorkerTextEngine } from "./worker-text";
import { runSweep } from "../src/social/delivery/sweep";
import { resumePhotoJobs } from "../src/photo/async-jobs";
import { purgeExpiredStates } from "../src/hub/oauth-states";
import { withSandboxApp } from "../src/social/sandbox/app-secret";
import { sweepWebhooks } from "../src/webhooks/dispatch";

/** Vars from wrangler.toml and secrets from `wrangler secret put`: all strings, named as src/config.ts reads them. */
export type Env = Record<string, string | undefined>;

// wrangler imports .wasm as a compiled WebAssembly.Module (the package's typing says string: that is esbuild's file loader).
configureZxing(zxingWasm as unknown as WebAssembly.Module);
configureWorkerTextEngine();

type ConfigResult = { ok: true; config: Config } | { ok: false; error: ConfigError };

function readConfig(env: Env): ConfigResult {
  try {
    return { ok: true, config: parseEdgeConfig(env) };
  } catch (err) {
    if (err instanceof ConfigError) return { ok: false, error: err };
    throw err;
  }
}

/** The variable names a ConfigError is about (each problem starts with them); values are never echoed. */
function variablesOf(error: ConfigError): string[] {
  const names = new Set<string>();
  for (const problem of error.problems) for (const match of problem.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g)) names.add(match[0]);
  return [...names];
}

/** One 500 in the error envelope for every request while the configuration is wrong. */
function misconfigured(error: ConfigError): Hono {
  JsonLogger("error").error("invalid configuration", { problems: error.problems });
  const app = new Hono();
  app.use("*", requestId({ headerName: "X-Request-Id", generator: () => crypto.randomUUID() }));
  app.all("*", () => {
    throw new ApiError("INTERNAL", `The service is misconfigured: check ${variablesOf(error).join(", ")}. The operator has to fix the Worker's variables.`);
  });
  app.onError((err, c) => renderError(err, c));
  return app;
}

/** Each env's configurations by origin (one, "", when PUBLIC_BASE_URL is set), with the sandbox app's secret. */
const configs = new WeakMap<object, Map<string, Promise<ConfigResult>>>();
const KEPT_ORIGINS = 16;

function configFor(env: Env, request: Request): Promise<ConfigResult> {
  // Links and Location headers need the public origin; unless configured it is the one this request came to.
  const origin = env.PUBLIC_BASE_URL ? "" : originOf(request.url);
  let byOrigin = configs.get(env);
  if (!byOrigin) configs.set(env, (byOrigin = new Map()));
  let result = byOrigin.get(origin);
  if (!result) {
    if (byOrigin.size >= KEPT_ORIGINS) byOrigin.clear();
    const parsed = readConfig(origin ? { ...env, PUBLIC_BASE_URL: origin } : env);
    // With the sandbox on, its app's secret comes from TOKEN_ENCRYPTION_KEY, as on Node from the token key.
    result = parsed.ok ? withSandboxApp(parsed.config, parsed.config.tokenEncryptionKey).then((config) => ({ ok: true, config })) : Promise.resolve(parsed);
    byOrigin.set(origin, result);
  }
  return result;
}

/** The origin of a URL the runtime has already normalised (a request's), without parsing it again. */
function originOf(url: string): string {
  const path = url.indexOf("/", url.indexOf("//") + 2);
  return path < 0 ? url : url.slice(0, path);
}

/** This request's services, by its ExecutionContext: the app is shared by every request of the isolate. */
const servicesOf = new WeakMap<object, Services>();
const apps = new WeakMap<Config, Hono>();

function appFor(config: Config): Hono {
  let app = apps.get(config);
  if (!app) {
    app = createApp((c) => servicesOf.get(c.executionCtx)!) as unknown as Hono;
    apps.set(config, app);
  }
  return app;
}

async function serve(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const parsed = await configFor(env, request);
  if (!parsed.ok) return misconfigured(parsed.error).fetch(request);
  const services = buildEdgeServices(env, ctx, { config: parsed.config });
  servicesOf.set(ctx, services);
  try {
    return await appFor(parsed.config).fetch(request, env, ctx);
  } finally {
    ctx.waitUntil(services.close());
  }
}

export default {
  // The Workers and DOM typings each declare their own Request/Response; at run time they are the same objects.
  fetch: async (request, env, ctx) => (await serve(request as unknown as Request, env, ctx)) as unknown as WorkerResponse,

  async scheduled(controller: ScheduledController, env: Env, ctx: ExecutionContext) {
    // A cron run has no request to take an origin from, and the sweep builds QStash callback and sandbox URLs.
    if (!env.PUBLIC_BASE_URL) {
      JsonLogger("error").error("sweep skipped: PUBLIC_BASE_URL must be set on the Worker for the cron sweep");
      throw new Error("PUBLIC_BASE_URL must be set for the cron sweep");
    }
    const parsed = readConfig(env);
    if (!parsed.ok) {
      JsonLogger("error").error("sweep skipped: invalid configuration", { problems: parsed.error.problems });
      throw parsed.error;
    }
    const services = buildEdgeServices(env, ctx, { config: parsed.config });
    try {
      const result = await runSweep(services);
      const photoJobs = await resumePhotoJobs(services);
      const expiredStates = await purgeExpiredStates(services);
      const webhooks = await sweepWebhooks(services);
      services.log.info("sweep", { cron: controller.cron, scheduledTime: controller.scheduledTime, ...result, photoJobs, expiredStates, webhooks });
    } finally {
      ctx.waitUntil(services.close());
    }
  },
} satisfies ExportedHandler<Env>;
