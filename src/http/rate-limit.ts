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
import type { MiddlewareHandler } from "hono";
import type { Config } from "../config";
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

export function rateLimit(bucket: RateLimitBucket): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const { rateLimiter, config, clock, log } = c.get("services");
    const perMinute = config.rateLimits[BUCKET_LIMIT[bucket]];
    const result = await rateLimiter.limit(bucket, c.get("userId"), perMinute);
    if (result.unknown) {
      log.warn("rate limiter unavailable; request allowed", { bucket });
      return next();
    }
    const seconds = Math.max(1, Math.ceil((result.reset - clock.now().getTime()) / 1000));
    const headers: Record<string, string> = {
      "RateLimit-Policy": `"${bucket}";q=${perMinute};w=60`,
      RateLimit: `"${bucket}";r=${result.remaining};t=${seconds}`,
      "RateLimit-Limit": String(perMinute),
      "RateLimit-Remaining": String(result.remaining),
      "RateLimit-Reset": String(seconds),
    };
    if (!result.success) {
      throw new ApiError("RATE_LIMITED", `Rate limit of ${perMinute} requests per minute reached; retry in ${seconds} s.`, {
        headers: { ...headers, "Retry-After": String(seconds) },
      });
    }
    // Set before the handler runs so they are on every response, errors and 404s included.
    for (const [name, value] of Object.entries(headers)) c.header(name, value);
    await next();
  };
}
