/**
 * The one place that reads configuration. Entry points hand over a plain record (the Node process environment, the
 * Worker's env on the edge); `parseConfig` validates it and returns one typed object. A wrong value throws a
 * `ConfigError` naming the variable, and the entry point refuses to start.
 *
 * @example
 * const config = parseConfig({ PORT: "8787", RATE_LIMIT_QR: "120" });
 */
import { z } from "zod";
import { parseModelCatalog, type ModelCatalog } from "./lib/model-catalog";
import { bytesFromBase64Strict } from "./lib/encoding";

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === "" ? undefined : v.trim()));

const url = (protocols: string[]) =>
  optionalString.refine((v) => v === undefined || isUrl(v, protocols), {
    message: `must be a URL starting with ${protocols.map((p) => `${p}//`).join(" or ")}`,
  });

const positiveInt = (fallback: number, max = 1_000_000) =>
  optionalString.transform((v, ctx) => {
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max) {
      ctx.addIssue({ code: "custom", message: `must be a whole number from 1 to ${max}, got "${v}"` });
      return z.NEVER;
    }
    return n;
  });

const wholeNumber = (min: number, max: number) =>
  optionalString.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) {
      ctx.addIssue({ code: "custom", message: `must be a whole number from ${min} to ${max}, got "${v}"` });
      return z.NEVER;
    }
    return n;
  });

const EnvSchema = z.object({
  PORT: positiveInt(8787, 65535),
  HOST: optionalString.transform((v) => v ?? "127.0.0.1"),
  PUBLIC_BASE_URL: url(["http:", "https:"]),
  DATA_DIR: optionalString.transform((v) => v ?? ".data"),
  DATABASE_URL: url(["postgres:", "postgresql:"]),
  UPSTASH_REDIS_REST_URL: url(["http:", "https:"]),
  UPSTASH_REDIS_REST_TOKEN: optionalString,
  QSTASH_URL: url(["http:", "https:"]),
  QSTASH_TOKEN: optionalString,
  QSTASH_CURRENT_SIGNING_KEY: optionalString,
  QSTASH_NEXT_SIGNING_KEY: optionalString,
  S3_ENDPOINT: url(["http:", "https:"]),
  S3_REGION: optionalString,
  S3_BUCKET: optionalString,
  S3_ACCESS_KEY_ID: optionalString,
  S3_SECRET_ACCESS_KEY: optionalString,
  S3_PUBLIC_BASE_URL: url(["http:", "https:"]),
  REPLICATE_API_TOKEN: optionalString,
  REPLICATE_API_BASE: url(["http:", "https:"]),
  REPLICATE_WEBHOOK_SECRET: optionalString.refine((v) => v === undefined || /^whsec_[A-Za-z0-9+/]{16,}={0,2}$/.test(v), {
    message: 'must be the webhook signing secret Replicate gives ("whsec_" then Base64)',
  }),
  PHOTO_MODELS: optionalString,
  PHOTO_SIGNUP_CREDITS: wholeNumber(0, 1_000_000),
  USD_INR_RATE: optionalString,
  GRAPH_API_BASE: url(["http:", "https:"]),
  PLATFORM_SANDBOX: optionalString
    .transform((v) => v ?? "off")
    .refine((v) => v === "on" || v === "off", { message: 'must be "on" or "off" (unset means off)' }),
  GRAPH_API_VERSION: optionalString.transform((v) => v ?? "v23.0").refine((v) => /^v\d+\.\d+$/.test(v), { message: 'must look like "v23.0"' }),
  META_APP_ID: optionalString,
  META_APP_SECRET: optionalString,
  META_DIALOG_BASE: url(["http:", "https:"]),
  OIDC_ISSUER: url(["http:", "https:"]),
  OIDC_CLIENT_ID: optionalString,
  OIDC_CLIENT_SECRET: optionalString,
  TOKEN_ENCRYPTION_KEY: optionalString.refine((v) => v === undefined || decodedLength(v) === 32, {
    message: "must be 32 bytes, base64 or base64url encoded (openssl rand -base64 32)",
  }),
  AUTH_JWKS_URL: url(["http:", "https:"]),
  AUTH_ISSUER: optionalString,
  AUTH_AUDIENCE: optionalString,
  RATE_LIMIT_QR: positiveInt(120),
  RATE_LIMIT_PHOTO: positiveInt(20),
  RATE_LIMIT_PHOTO_READ: positiveInt(300),
  RATE_LIMIT_SOCIAL_READ: positiveInt(300),
  RATE_LIMIT_SOCIAL_WRITE: positiveInt(60),
  RETENTION_DAYS: positiveInt(90, 3650),
  WEBHOOK_ALLOW_LOOPBACK: optionalString
    .transform((v) => v ?? "off")
    .refine((v) => v === "on" || v === "off", { message: 'must be "on" or "off" (unset means off)' }),
  WEBHOOK_RETRY_SCHEDULE: optionalString.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const delays = v.split(",").map((s) => Number(s.trim()));
    if (delays.length < 1 || delays.length > 20 || delays.some((d) => !Number.isFinite(d) || d < 0 || d > 7 * 86_400)) {
      ctx.addIssue({ code: "custom", message: `must be 1 to 20 comma-separated delays in seconds (0 to 604800), got "${v}"` });
      return z.NEVER;
    }
    return delays.map((d) => Math.round(d * 1000));
  }),
  WEBHOOK_ROTATION_OVERLAP_SECONDS: positiveInt(86_400, 30 * 86_400),
  HEAVY_THREADS: wholeNumber(0, 64),
  HEAVY_JOBS_PER_USER: positiveInt(2, 64),
  HEAVY_QUEUE_PER_USER: wholeNumber(0, 1000),
  HEAVY_QUEUE: wholeNumber(0, 100_000),
  HEAVY_IDLE_SECONDS: positiveInt(30, 3600),
  LOG_LEVEL: optionalString
    .transform((v) => v ?? "info")
    .refine((v) => ["debug", "info", "warn", "error", "silent"].includes(v), {
      message: "must be one of debug, info, warn, error, silent",
    }),
});

/** Variables that only make sense together: setting one of a group requires the rest. */
const GROUPS: Array<{ name: string; vars: Array<keyof z.infer<typeof EnvSchema>> }> = [
  { name: "Upstash Redis", vars: ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN"] },
  { name: "QStash", vars: ["QSTASH_URL", "QSTASH_TOKEN", "QSTASH_CURRENT_SIGNING_KEY", "QSTASH_NEXT_SIGNING_KEY"] },
  { name: "S3 storage", vars: ["S3_ENDPOINT", "S3_REGION", "S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", "S3_PUBLIC_BASE_URL"] },
  { name: "identity-provider tokens", vars: ["AUTH_JWKS_URL", "AUTH_ISSUER", "AUTH_AUDIENCE"] },
  { name: "the real platforms", vars: ["GRAPH_API_BASE", "META_APP_ID", "META_APP_SECRET"] },
  { name: "OpenID Connect sign-in to the hub", vars: ["OIDC_ISSUER", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET"] },
];

/** At once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: the Standard Webhooks senders' schedule. */
export const WEBHOOK_RETRY_SCHEDULE_MS = [0, 5, 300, 1800, 7200, 18_000, 36_000, 36_000].map((s) => s * 1000);
/** The sign-up grant when PHOTO_SIGNUP_CREDITS is unset: enough for the README's area B examples. */
export const DEFAULT_SIGNUP_CREDITS = 100;

export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

export type Env = z.infer<typeof EnvSchema>;

/** Every variable name parseConfig reads (a dev tool passes exactly these through to the Worker). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(EnvSchema.shape);

export interface Config {
  port: number;
  host: string;
  publicBaseUrl: string;
  dataDir: string;
  databaseUrl?: string;
  upstash?: { url: string; token: string };
  qstash?: { url: string; token: string; currentSigningKey: string; nextSigningKey: string };
  s3?: { endpoint: string; region: string; bucket: string; accessKeyId: string; secretAccessKey: string; publicBaseUrl: string };
  replicateApiToken?: string;
  /** Replicate's API root; default https://api.replicate.com/v1 (tests point it at a fake). */
  replicateApiBase: string;
  /**
   * Replicate's webhook signing secret (`whsec_…`) when configured; otherwise it is read from Replicate's API
   * (`GET /webhooks/default/secret`) once per process or isolate.
   */
  replicateWebhookSecret?: string;
  /**
   * Predictions call back to `publicBaseUrl` when it was configured (PUBLIC_BASE_URL; on the Worker also its
   * own origin): async jobs are then finished by Replicate's signed webhooks. Without it, Node polls.
   */
  replicateCallbacks: boolean;
  /** Area B's models and prices (config/photo-models.json, PHOTO_MODELS, USD_INR_RATE). */
  photoModels: ModelCatalog;
  /** Credits every user is granted when area B first meets them (PHOTO_SIGNUP_CREDITS; 100). */
  photoSignupCredits: number;
  /**
   * The platforms' Graph API. `sandbox`: PLATFORM_SANDBOX=on, the built-in sandbox at /sandbox stands in for the
   * platforms (off unless turned on: a deployment never serves it because a variable is missing). `baseUrl`:
   * GRAPH_API_BASE; unset with the sandbox off means the real Graph API (see graphBaseUrl). `dialogBaseUrl`: where
   * the OAuth login dialog lives (https://www.facebook.com unless the sandbox is on or META_DIALOG_BASE says otherwise).
   */
  graph: { sandbox: boolean; baseUrl?: string; version: string; appId?: string; appSecret?: string; dialogBaseUrl?: string };
  tokenEncryptionKey?: string;
  auth?: { jwksUrl: string; issuer: string; audience: string };
  /** OpenID Connect provider for signing in to the hub; unset: sign-in links only. */
  oidc?: { issuer: string; clientId: string; clientSecret: string };
  rateLimits: { qr: number; photo: number; photoRead: number; socialRead: number; socialWrite: number };
  /**
   * CPU-heavy image work (decode, resize, encode, QR reading, the compositor): `threads` worker threads on
   * Node (unset: one per core; 0: on the request thread), never more than `perUser` jobs of one user at
   * once, at most `queuePerUser` of one user's and `queue` in all waiting; beyond that 429. A thread idle
   * for `idleSeconds` ends, handing its memory back.
   */
  heavy: { threads?: number; perUser: number; queuePerUser: number; queue: number; idleSeconds: number };
  retentionDays: number;
  /**
   * Webhook delivery. `allowLoopback`: WEBHOOK_ALLOW_LOOPBACK=on accepts http://127.0.0.1:<port> and
   * http://localhost:<port> endpoints (local development only; `npm start` on embedded defaults turns it on).
   * `retryScheduleMs`: the delay before each attempt of a message, the first included (WEBHOOK_RETRY_SCHEDULE,
   * seconds). `rotationOverlapMs`: how long a rotated secret keeps signing beside the new one.
   */
  webhooks: { allowLoopback: boolean; retryScheduleMs: number[]; rotationOverlapMs: number };
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
}

export function parseConfig(env: Record<string, string | undefined>): Config {
  const parsed = EnvSchema.safeParse(pick(env));
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${String(i.path[0])} ${i.message}`));
  }
  const e = parsed.data;
  const problems: string[] = [];
  for (const group of GROUPS) {
    const set = group.vars.filter((v) => e[v] !== undefined);
    if (set.length > 0 && set.length < group.vars.length) {
      const missing = group.vars.filter((v) => e[v] === undefined);
      problems.push(
        `${missing.join(", ")} must be set too: ${set.join(", ")} ${set.length === 1 ? "is" : "are"} set, and ${group.name} needs all of ${group.vars.join(", ")}`,
      );
    }
  }
  let photoModels: ModelCatalog | undefined;
  try {
    photoModels = parseModelCatalog(e.PHOTO_MODELS, e.USD_INR_RATE);
  } catch (err) {
    problems.push(`${e.PHOTO_MODELS !== undefined ? "PHOTO_MODELS" : "USD_INR_RATE"} ${(err as Error).message}`);
  }
  if (e.PLATFORM_SANDBOX === "on" && e.GRAPH_API_BASE !== undefined) {
    problems.push("PLATFORM_SANDBOX=on and GRAPH_API_BASE are both set: the sandbox stands in for the real platforms, so set one or the other");
  }
  if (problems.length || !photoModels) throw new ConfigError(problems);

  const has = <K extends keyof Env>(k: K) => e[k] !== undefined;
  return {
    port: e.PORT,
    host: e.HOST,
    publicBaseUrl: (e.PUBLIC_BASE_URL ?? `http://${e.HOST.includes(":") ? `[${e.HOST}]` : e.HOST}:${e.PORT}`).replace(/\/+$/, ""),
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    upstash: has("UPSTASH_REDIS_REST_URL") ? { url: e.UPSTASH_REDIS_REST_URL!, token: e.UPSTASH_REDIS_REST_TOKEN! } : undefined,
    qstash: has("QSTASH_URL")
      ? { url: e.QSTASH_URL!, token: e.QSTASH_TOKEN!, currentSigningKey: e.QSTASH_CURRENT_SIGNING_KEY!, nextSigningKey: e.QSTASH_NEXT_SIGNING_KEY! }
      : undefined,
    s3: has("S3_ENDPOINT")
      ? {
          endpoint: e.S3_ENDPOINT!,
          region: e.S3_REGION!,
          bucket: e.S3_BUCKET!,
          accessKeyId: e.S3_ACCESS_KEY_ID!,
          secretAccessKey: e.S3_SECRET_ACCESS_KEY!,
          publicBaseUrl: e.S3_PUBLIC_BASE_URL!.replace(/\/+$/, ""),
        }
      : undefined,
    replicateApiToken: e.REPLICATE_API_TOKEN,
    replicateApiBase: (e.REPLICATE_API_BASE ?? "https://api.replicate.com/v1").replace(/\/+$/, ""),
    replicateWebhookSecret: e.REPLICATE_WEBHOOK_SECRET,
    replicateCallbacks: e.PUBLIC_BASE_URL !== undefined,
    photoModels,
    photoSignupCredits: e.PHOTO_SIGNUP_CREDITS ?? DEFAULT_SIGNUP_CREDITS,
    graph: {
      sandbox: e.PLATFORM_SANDBOX === "on",
      baseUrl: e.GRAPH_API_BASE?.replace(/\/+$/, ""),
      version: e.GRAPH_API_VERSION,
      appId: e.META_APP_ID,
      appSecret: e.META_APP_SECRET,
      dialogBaseUrl: (e.META_DIALOG_BASE ?? (e.PLATFORM_SANDBOX === "on" ? undefined : "https://www.facebook.com"))?.replace(/\/+$/, ""),
    },
    tokenEncryptionKey: e.TOKEN_ENCRYPTION_KEY,
    auth: has("AUTH_JWKS_URL") ? { jwksUrl: e.AUTH_JWKS_URL!, issuer: e.AUTH_ISSUER!, audience: e.AUTH_AUDIENCE! } : undefined,
    oidc: has("OIDC_ISSUER") ? { issuer: e.OIDC_ISSUER!, clientId: e.OIDC_CLIENT_ID!, clientSecret: e.OIDC_CLIENT_SECRET! } : undefined,
    rateLimits: {
      qr: e.RATE_LIMIT_QR,
      photo: e.RATE_LIMIT_PHOTO,
      photoRead: e.RATE_LIMIT_PHOTO_READ,
      socialRead: e.RATE_LIMIT_SOCIAL_READ,
      socialWrite: e.RATE_LIMIT_SOCIAL_WRITE,
    },
    heavy: {
      threads: e.HEAVY_THREADS,
      perUser: e.HEAVY_JOBS_PER_USER,
      queuePerUser: e.HEAVY_QUEUE_PER_USER ?? 8,
      queue: e.HEAVY_QUEUE ?? 64,
      idleSeconds: e.HEAVY_IDLE_SECONDS,
    },
    retentionDays: e.RETENTION_DAYS,
    webhooks: {
      allowLoopback: e.WEBHOOK_ALLOW_LOOPBACK === "on",
      retryScheduleMs: e.WEBHOOK_RETRY_SCHEDULE ?? WEBHOOK_RETRY_SCHEDULE_MS,
      rotationOverlapMs: e.WEBHOOK_ROTATION_OVERLAP_SECONDS * 1000,
    },
    logLevel: e.LOG_LEVEL as Config["logLevel"],
  };
}

function pick(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const key of Object.keys(EnvSchema.shape)) {
    const value = env[key];
    if (typeof value === "string") out[key] = value;
  }
  return out;
}

function isUrl(value: string, protocols: string[]): boolean {
  try {
    return protocols.includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

function decodedLength(value: string): number {
  return bytesFromBase64Strict(value)?.length ?? -1;
}
