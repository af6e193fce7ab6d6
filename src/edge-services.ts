/**
 * Builds the Services for Cloudflare Workers from the Worker's env. Everything that holds no I/O object of a
 * request is built once per isolate and configuration (`isolateParts`): the database handle (each statement
 * an HTTP query to Neon, a transaction a WebSocket connection of its own, both opened inside the request that
 * needs them), rate limiter, queue, storage, fetcher, token cipher, generator, heavy-work limiter and the
 * verified-key cache. Per request only `defer` (that request's `ctx.waitUntil`) is new.
 *
 * What the edge requires beyond the embedded mode (refused with a ConfigError naming the variables):
 * DATABASE_URL (PGlite is Node-only), the six S3_* variables (no local disk) and TOKEN_ENCRYPTION_KEY
 * (no DATA_DIR to keep a generated key in).
 *
 * @example
 * const services = buildEdgeServices(env, ctx);
 * const res = await createApp(services).fetch(request);
 * ctx.waitUntil(services.close());
 */
import { LimitedHeavyWork, type HeavyWork } from "./heavy";
import { inlineRunner } from "./heavy/tasks";
import { ConfigError, parseConfig, type Config } from "./config";
import type { RateLimiter, Services } from "./services";
import { createNeonDb, type NeonOptions } from "../db/client";
import { nameStatements, viewOf } from "../db/prepared";
import { JsonLogger } from "./adapters/logger";
import { MemoryRateLimiter } from "./adapters/rate-limit/memory";
import { UpstashRateLimiter } from "./adapters/rate-limit/upstash";
import { PollerQueue } from "./adapters/queue/poller";
import { QStashQueue } from "./adapters/queue/qstash";
import { S3Storage } from "./adapters/storage/s3";
import { createEdgeFetcher } from "./adapters/fetch/edge";
import { AesGcmTokenCipher } from "./adapters/token-cipher";
import { ApiKeyCache } from "./lib/key-cache";
import { createGenerator } from "./photo/providers";
import { webhookKicker } from "./webhooks/dispatch";
import type { DecodeLimits } from "./images/limits";

/**
 * What a Worker decodes (src/images/limits.ts). Any image above `maxPixels` is refused from its header with
 * 422 naming the limit: 12.5 MP keeps a 4032x3024 phone photo, and our decoders' peaks (largest for a
 * progressive JPEG) grow with the pixel count, so 40 MP would not fit. Whole decodes the isolate affords only for small images: WebP and interlaced PNG (our decoders,
 * about 6 bytes per pixel, given back after the request) and progressive CMYK JPEGs (our decoder holds four
 * full-size components' coefficients) above `wholeDecodePixels` are refused with 422 naming that limit.
 * Photon never decodes here (`photon: false`): its WebAssembly memory grows with each decode and never
 * shrinks, so the isolate would carry one request's image into every later one. Every PNG goes through our
 * decoder (`streamedPngPixels: 0`), a JPEG with 3:1 subsampling (which only photon reads) is refused from
 * its header, and data our decoders find corrupt is a 422. Baseline CMYK JPEGs decode at N/8 like any
 * other JPEG, up to `maxPixels`. With these limits every image path stays under 128 MiB by V8's count with
 * the largest image of each format, and no request grows a WebAssembly memory: test/worker/edge-memory.test.ts
 * measures and asserts it in workerd (docs/architecture.md, "The edge runtime").
 */
export const EDGE_DECODE_LIMITS: DecodeLimits = { maxPixels: 12_500_000, wholeDecodePixels: 2_000_000, streamedPngPixels: 0, photon: false };

export interface EdgeContext {
  waitUntil(promise: Promise<unknown>): void;
}

/** Services plus the end of their request: `close()` waits for the request's deferred work. */
export type EdgeServices = Services & { close(): Promise<void> };

export interface EdgeServicesOptions {
  /** The parsed config, when the caller already has it (the Worker parses once at the top of fetch). */
  config?: Config;
}

/**
 * Local development only: Neon's documented local mode for a plain Postgres, e.g.
 * `NEON_WS_PROXY=127.0.0.1:5433/v1`: WebSockets go to that proxy (the driver appends `?address=host:port`)
 * and HTTP queries to `http://127.0.0.1:5433/sql` on the same host and port (dev/neon-bridge.ts serves
 * both). Unencrypted: never set it in production.
 */
export const NEON_WS_PROXY = "NEON_WS_PROXY";

/** The Worker's env as the plain string record parseConfig reads (bindings that are not strings are skipped). */
export function stringEnv(env: Record<string, unknown>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(env)) if (typeof value === "string") out[name] = value;
  return out;
}

/** A Config with what the edge cannot do without. */
export type EdgeConfig = Config & Required<Pick<Config, "databaseUrl" | "s3" | "tokenEncryptionKey">>;

/**
 * parseConfig plus the edge's own requirements; throws one ConfigError naming every variable at fault
 * (the embedded defaults that cannot work on Workers included).
 */
export function parseEdgeConfig(env: Record<string, unknown>): EdgeConfig {
  const strings = stringEnv(env);
  const set = (name: string) => (strings[name] ?? "").trim() !== "";
  const edgeProblems = edgeRequirements({
    databaseUrl: set("DATABASE_URL"),
    s3: S3_VARS.some(set),
    tokenEncryptionKey: set("TOKEN_ENCRYPTION_KEY"),
  });
  let config: Config;
  try {
    config = parseConfig(strings);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError([...err.problems, ...edgeProblems]);
    throw err;
  }
  if (edgeProblems.length) throw new ConfigError(edgeProblems);
  return config as EdgeConfig;
}

const S3_VARS = ["S3_ENDPOINT", "S3_REGION", "S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "S3_PUBLIC_BASE_URL"];

function edgeRequirements(has: { databaseUrl: boolean; s3: boolean; tokenEncryptionKey: boolean }): string[] {
  const problems: string[] = [];
  if (!has.databaseUrl) problems.push("DATABASE_URL must be set on Workers (a postgres:// URL of the Neon database); the embedded PGlite runs on Node only");
  if (!has.s3) problems.push(`${S3_VARS.join(", ")} must be set on Workers: media and generated images need a bucket (R2 or S3)`);
  if (!has.tokenEncryptionKey)
    problems.push("TOKEN_ENCRYPTION_KEY must be set on Workers (32 bytes, base64: openssl rand -base64 32); there is no DATA_DIR to generate it into");
  return problems;
}

function requireEdgeConfig(config: Config): EdgeConfig {
  const problems = edgeRequirements({ databaseUrl: !!config.databaseUrl, s3: !!config.s3, tokenEncryptionKey: !!config.tokenEncryptionKey });
  if (problems.length) throw new ConfigError(problems);
  return config as EdgeConfig;
}

/** The part of the services that outlives a request: built once per isolate and configuration. */
type IsolateParts = Omit<Services, "defer" | "kickWebhooks">;

const partsByConfig = new WeakMap<Config, IsolateParts>();

export function buildEdgeServices(env: Record<string, unknown>, ctx: EdgeContext, options: EdgeServicesOptions = {}): EdgeServices {
  const config = options.config ? requireEdgeConfig(options.config) : parseEdgeConfig(env);
  let parts = partsByConfig.get(config);
  if (!parts) {
    parts = isolateParts(config as EdgeConfig, env);
    partsByConfig.set(config, parts);
  }
  const log = parts.log;
  const pending = new Set<Promise<unknown>>();
  const defer = (promise: Promise<unknown>) => {
    const tracked = promise.catch((err: unknown) => log.error("deferred work failed", { error: String(err) }));
    pending.add(tracked);
    void tracked.finally(() => pending.delete(tracked));
    ctx.waitUntil(tracked);
  };
  const services: EdgeServices = {
    ...parts,
    // Its own identity per request: what is batched per handle (group commits) never waits across requests.
    db: viewOf(parts.db),
    defer,
    async close() {
      while (pending.size) await Promise.allSettled([...pending]);
    },
  };
  // Per request: queueing new webhook messages is this request's deferred work.
  services.kickWebhooks = webhookKicker(services);
  return services;
}

function isolateParts(config: EdgeConfig, env: Record<string, unknown>): IsolateParts {
  const log = JsonLogger(config.logLevel);
  const wsProxy = typeof env[NEON_WS_PROXY] === "string" && env[NEON_WS_PROXY] !== "" ? (env[NEON_WS_PROXY] as string) : undefined;
  const neonOptions: NeonOptions = wsProxy
    ? { wsProxy: (host, port) => `${wsProxy}?address=${host}:${port}`, fetchEndpoint: `http://${wsProxy.split("/")[0]}/sql` }
    : {};
  const db = createNeonDb(config.databaseUrl, neonOptions);
  // The handle lives as long as the isolate, so its hot statements are built once (db/prepared.ts).
  nameStatements(db.db);
  // Without QStash the cron sweep (every minute, functions/worker.ts) is the poller on the edge too.
  const queue = config.qstash ? QStashQueue(config) : PollerQueue();
  const storage = S3Storage(config.s3);
  return {
    config,
    db: db.db,
    rateLimiter: rateLimiterFor(config),
    queue,
    storage,
    fetcher: createEdgeFetcher({ allowLoopbackWebhooks: config.webhooks.allowLoopback }),
    clock: { now: () => new Date() },
    log,
    tokens: AesGcmTokenCipher(config.tokenEncryptionKey),
    platformFetch: (input, init) => fetch(input, init),
    generator: createGenerator(config, { storage, log, imageLimits: EDGE_DECODE_LIMITS }),
    heavy: isolateHeavyWork(config),
    // Revocation in this isolate (the hub) clears it; one written anywhere else is honoured within its 5 s.
    apiKeyCache: ApiKeyCache(),
    imageLimits: EDGE_DECODE_LIMITS,
  };
}

/**
 * Limiters hold no I/O objects (Upstash is plain fetch per call), so one per isolate is kept: it keeps
 * the Upstash limiter's leases and remembered refusals, and the memory twin counting across requests at all.
 * The memory twin counts per isolate only; production sets Upstash.
 */
const limiters = new Map<string, RateLimiter>();

function rateLimiterFor(config: Config): RateLimiter {
  const id = config.upstash ? `upstash:${config.upstash.url}:${config.upstash.token}` : "memory";
  let limiter = limiters.get(id);
  if (!limiter) {
    limiter = config.upstash ? UpstashRateLimiter(config.upstash) : MemoryRateLimiter();
    limiters.set(id, limiter);
  }
  return limiter;
}

let isolateHeavy: HeavyWork | undefined;

/**
 * One heavy-work limiter per isolate, like the rate limiter: an isolate serves many requests at once, so
 * the per-user limits hold across them. One job at a time: they all run on the isolate's one thread, and
 * two 4K images at once would not fit in the Worker's 128 MB. A slot held for two minutes is taken back: a
 * cancelled request's job never gives it back itself.
 */
function isolateHeavyWork(config: Config): HeavyWork {
  isolateHeavy ??= LimitedHeavyWork({ ...config.heavy, slots: 1, perUser: 1, leaseMs: 120_000 }, inlineRunner);
  return isolateHeavy;
}
