/**
 * Per-user rate limits, shared across all of a user's keys. Every response carries the budget in the IETF
 * draft's fields (`RateLimit-Policy`, `RateLimit`) and the widely parsed `RateLimit-Limit/-Remaining/-Reset`;
 * over the limit: 429 RATE_LIMITED with `Retry-After` in seconds.
 *
 * Operations attach it through their access, right after the key check (`authenticated` in src/http/openapi.ts):
 * a request counts once its key is accepted, before its body is read.
 *
 * @example
 * router.post("/posts", requireAuth("social"), rateLimit("social-write"), handler);
 */
import type { Context, MiddlewareHandler } from "hono";
import ipaddr from "ipaddr.js";
import type { Config } from "../config";
import type { Services } from "../services";
import type { AppEnv } from "./env";
import { ApiError } from "./errors";

export type RateLimitBucket = "qr" | "photo" | "photo-read" | "social-read" | "social-write";

const BUCKET_LIMIT: Record<RateLimitBucket, keyof Config["rateLimits"]> = {
  qr: "qr",
  photo: "photo",
  "photo-read": "photoRead",
  "social-read": "socialRead",
  "social-write": "socialWrite",
};

/** What is left of a budget once a request is counted: whether it was within it, how many remain, and the seconds until the window resets. */
export interface Budget {
  success: boolean;
  remaining: number;
  seconds: number;
}

/**
 * Counts one request of `key` in `bucket` against `perMinute`. Null when the limiter cannot answer: that is
 * logged, and every limit lets the request through then (Redis holds only what may be lost).
 */
export async function takeBudget(
  services: Pick<Services, "rateLimiter" | "clock" | "log">,
  bucket: string,
  key: string,
  perMinute: number,
): Promise<Budget | null> {
  const result = await services.rateLimiter.limit(bucket, key, perMinute);
  if (result.unknown) {
    services.log.warn("rate limiter unavailable; request allowed", { bucket });
    return null;
  }
  const seconds = Math.max(1, Math.ceil((result.reset - services.clock.now().getTime()) / 1000));
  return { success: result.success, remaining: result.remaining, seconds };
}

/** The IETF draft's fields for a budget: `RateLimit-Policy` and `RateLimit`. */
export function draftRateLimitHeaders(bucket: string, perMinute: number, budget: Budget): Record<string, string> {
  return {
    "RateLimit-Policy": `"${bucket}";q=${perMinute};w=60`,
    RateLimit: `"${bucket}";r=${budget.remaining};t=${budget.seconds}`,
  };
}

export function rateLimit(bucket: RateLimitBucket): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const services = c.get("services");
    const perMinute = services.config.rateLimits[BUCKET_LIMIT[bucket]];
    const budget = await takeBudget(services, bucket, c.get("userId"), perMinute);
    if (!budget) return next();
    const headers: Record<string, string> = {
      ...draftRateLimitHeaders(bucket, perMinute, budget),
      "RateLimit-Limit": String(perMinute),
      "RateLimit-Remaining": String(budget.remaining),
      "RateLimit-Reset": String(budget.seconds),
    };
    if (!budget.success) {
      throw new ApiError("RATE_LIMITED", `Rate limit of ${perMinute} requests per minute reached; retry in ${budget.seconds} s.`, {
        headers: { ...headers, "Retry-After": String(budget.seconds) },
      });
    }
    // Set before the handler runs so they are on every response, errors and 404s included.
    for (const [name, value] of Object.entries(headers)) c.header(name, value);
    await next();
  };
}

/**
 * The client a request came from, for rate limits without a user: on Node the connection's own remote
 * address (headers a client writes, such as X-Forwarded-For, are never read), on Workers the address
 * Cloudflare puts in CF-Connecting-IP. IPv6 addresses count by their /64, which one client usually holds
 * whole; an IPv4-mapped address counts as its IPv4 address. "unknown" when there is none.
 */
export function clientAddress(c: Context): string {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: unknown } } } | undefined)?.incoming;
  const raw = incoming ? incoming.socket?.remoteAddress : c.req.header("cf-connecting-ip");
  if (typeof raw !== "string" || !ipaddr.isValid(raw)) return "unknown";
  const address = ipaddr.process(raw);
  if (address.kind() === "ipv4") return address.toString();
  return `${(address as ipaddr.IPv6).parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(":")}::/64`;
}
