/**
 * The test harness: the real app on embedded twins (PGlite in memory, memory storage and rate limits) and
 * the platform sandbox turned on (PLATFORM_SANDBOX=on, unless `env` sets it or GRAPH_API_BASE), reached
 * through `app.request()`. Seeds users and keys; `close()` releases the database. Every answer `app.request()`
 * gets to an operation of the OpenAPI document is checked against it (helpers/conformance.ts): a response
 * that drifts from /openapi.json fails the test that received it.
 *
 * @example
 * const h = await createTestApp();
 * const { apiKey } = await h.createUser();
 * const res = await h.app.request("/api/v1/social/accounts", { headers: h.auth(apiKey) });
 */
import { parseConfig } from "../../src/config";
import { createApp, type AppExtras } from "../../src/app";
import type { Logger, Services } from "../../src/services";
import { buildNodeServices } from "../../functions/node/services";
import { createApiKey, createUser, type ApiKeyScope } from "../../src/http/api-keys";
import { JsonLogger } from "../../src/adapters/logger";
import { MemoryRateLimiter } from "../../src/adapters/rate-limit/memory";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { apiDocument } from "../../src/http/api-document";
import type { AppEnv } from "../../src/http/env";
import { checkConformance } from "./conformance";

export interface TestAppOptions {
  env?: Record<string, string>;
  overrides?: Partial<Services>;
  fetcherTestAllow?: { origins: string[]; ca?: string };
  extras?: AppExtras;
  /** Collect log lines instead of printing them. */
  logLines?: string[];
}

/**
 * The in-memory rate limiter with its clock held in the middle of the current minute: a test's requests
 * never straddle a window boundary, where the sliding window's weighting of the previous minute lets one
 * more request through (a test asking for [200, 200, 429] at a limit of 2 then saw [200, 200, 200]). The
 * limiter's own tests move its clock themselves (test/rate-limit).
 */
function steadyRateLimiter() {
  const at = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 30_000);
  return MemoryRateLimiter({ now: () => at });
}

export async function createTestApp(options: TestAppOptions = {}) {
  // The sandbox is on, as `npm start` turns it on, unless the test configures the platforms itself.
  const sandbox = options.env?.GRAPH_API_BASE || options.env?.PLATFORM_SANDBOX !== undefined ? {} : { PLATFORM_SANDBOX: "on" };
  // Suites not about credits are not bounded by them: every user starts with ample credits unless the test says.
  const config = parseConfig({ LOG_LEVEL: options.logLines ? "debug" : "silent", PHOTO_SIGNUP_CREDITS: "1000000", ...sandbox, ...options.env });
  const logger: Logger | undefined = options.logLines ? captureLogger(options.logLines) : undefined;
  const built = await buildNodeServices(config, {
    inMemory: true,
    logger,
    fetcherTestAllow: options.fetcherTestAllow,
    overrides: { ...(config.upstash ? {} : { rateLimiter: steadyRateLimiter() }), ...options.overrides },
  });
  const services = built.services;
  const app = createApp(services, options.extras);
  checkConformance(app, () => apiDocument(app as OpenAPIHono<AppEnv>, services.config));
  let counter = 0;

  return {
    app,
    services,
    db: services.db,
    async createUser(email = `user${++counter}-${crypto.randomUUID().slice(0, 8)}@example.test`) {
      const { userId } = await createUser(services.db, email);
      const { key } = await createApiKey(services.db, userId);
      return { userId, apiKey: key, email };
    },
    /** Another key for the user; `scopes` limits it to those areas (absent: every area). */
    async createKey(userId: string, name?: string, scopes?: ApiKeyScope[]) {
      return (await createApiKey(services.db, userId, name, { scopes })).key;
    },
    auth(apiKey: string, extra: Record<string, string> = {}): Record<string, string> {
      return { Authorization: `Bearer ${apiKey}`, ...extra };
    },
    json(apiKey: string, extra: Record<string, string> = {}): Record<string, string> {
      return { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json", ...extra };
    },
    drain: built.drain,
    close: built.close,
  };
}

export type TestApp = Awaited<ReturnType<typeof createTestApp>>;

/** The real logger, redaction included, writing into an array. */
function captureLogger(lines: string[]): Logger {
  return JsonLogger("debug", (line) => lines.push(line));
}
