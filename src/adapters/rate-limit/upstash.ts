/**
 * Rate limits on Upstash Redis with @upstash/ratelimit's sliding window, one limiter per bucket and limit.
 * Redis is allowed to be lost: when it errors or times out the request is let through (`unknown: true`) and
 * the middleware logs it, rather than turning a cache outage into an API outage.
 *
 * @example
 * const limiter = UpstashRateLimiter({ url, token });
 */
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis";
import type { RateLimiter, RateLimitResult } from "../../services";

export interface UpstashOptions {
  url: string;
  token: string;
  /** Milliseconds before the limiter gives up and lets the request through. */
  timeoutMs?: number;
}

export function UpstashRateLimiter(options: UpstashOptions): RateLimiter {
  const redis = new Redis({ url: options.url, token: options.token, retry: { retries: 1, backoff: () => 50 } });
  const limiters = new Map<string, Ratelimit>();
  const limiterFor = (bucket: string, perMinute: number) => {
    const key = `${bucket}:${perMinute}`;
    let limiter = limiters.get(key);
    if (!limiter) {
      limiter = new Ratelimit({
        redis,
        limiter: Ratelimit.slidingWindow(perMinute, "60 s"),
        prefix: `rl:${bucket}`,
        timeout: options.timeoutMs ?? 1000,
        analytics: false,
      });
      limiters.set(key, limiter);
    }
    return limiter;
  };
  return {
    async limit(bucket, identifier, perMinute): Promise<RateLimitResult> {
      try {
        const r = await limiterFor(bucket, perMinute).limit(identifier);
        if (r.reason === "timeout") return { success: true, limit: perMinute, remaining: perMinute, reset: 0, unknown: true };
        return { success: r.success, limit: r.limit, remaining: r.remaining, reset: r.reset };
      } catch {
        return { success: true, limit: perMinute, remaining: perMinute, reset: 0, unknown: true };
      }
    },
  };
}
