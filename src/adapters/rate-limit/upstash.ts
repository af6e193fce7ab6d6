/**
 * Rate limits on Upstash Redis: the sliding window of @upstash/ratelimit (the same keys, `rl:<bucket>:<id>:<window>`,
 * and the same weighting of the previous minute), taken in leases so that a busy user costs one Redis call
 * per lease rather than one per request.
 *
 * A lease is a number of requests counted in Redis at once and then admitted from this limiter's memory for at
 * most `LEASE_MS`. Its size adapts per user and bucket: 1 at first and after a quiet spell (so an occasional
 * caller is counted request by request, exactly), doubled each time a lease is used up before it expires, up to
 * a twentieth of the limit. Redis never grants more than the window has left, so no more requests than the limit
 * are ever admitted; what a lease leaves unused is given back in the next call for that user (in the window it
 * was taken from), so the count stays exact except for one lease per user and limiter whose holder fell silent.
 * A refusal is remembered until the window turns or a second has passed, whichever comes first, so a user over
 * the limit costs no Redis call either.
 *
 * Redis is allowed to be lost: when it errors or times out the request is let through (`unknown: true`) and the
 * middleware logs it, rather than turning a cache outage into an API outage.
 *
 * @example
 * const limiter = UpstashRateLimiter({ url, token });
 * const { success, remaining, reset } = await limiter.limit("qr", userId, 120);
 */
import { Redis } from "@upstash/redis";
import type { RateLimiter, RateLimitResult } from "../../services";

export interface UpstashOptions {
  url: string;
  token: string;
  /** Milliseconds before the limiter gives up and lets the request through. */
  timeoutMs?: number;
}

const WINDOW_MS = 60_000;
/** How long a lease's requests may be admitted from memory. */
const LEASE_MS = 1000;
/** A lease is at most this part of the limit. */
const LEASE_SHARE = 20;

/**
 * KEYS: this window's counter, the previous window's, the counter a refund goes to. ARGV: limit, now (ms),
 * window (ms), requests wanted, requests to give back. Answers {granted, left in the window after the grant}.
 */
const LEASE_SCRIPT = `
local limit = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local refund = tonumber(ARGV[5])
if refund > 0 then
  local held = tonumber(redis.call("GET", KEYS[3]) or "0")
  if held > 0 then redis.call("DECRBY", KEYS[3], math.min(refund, held)) end
end
local current = tonumber(redis.call("GET", KEYS[1]) or "0")
local previous = tonumber(redis.call("GET", KEYS[2]) or "0")
local used = math.floor((1 - (now % window) / window) * previous) + current
local grant = math.min(want, limit - used)
if grant <= 0 then return {0, 0} end
local value = redis.call("INCRBY", KEYS[1], grant)
if value == grant then redis.call("PEXPIRE", KEYS[1], window * 2 + 1000) end
return {grant, limit - used - grant}
`;

interface Lease {
  /** Requests of the lease not yet admitted. */
  left: number;
  /** Until when they may be admitted (ms); also how long a refusal is remembered. */
  until: number;
  /** The window the lease was counted in. */
  window: number;
  size: number;
  /** What Redis had left in the window after the grant. */
  remaining: number;
  reset: number;
  refused: boolean;
}

export function UpstashRateLimiter(options: UpstashOptions): RateLimiter {
  const redis = new Redis({ url: options.url, token: options.token, retry: { retries: 1, backoff: () => 50 } });
  const script = redis.createScript<[number, number]>(LEASE_SCRIPT);
  const timeoutMs = options.timeoutMs ?? 1000;
  const leases = new Map<string, Lease>();

  const take = async (bucket: string, identifier: string, perMinute: number, key: string, now: number): Promise<RateLimitResult> => {
    const held = leases.get(key);
    const window = Math.floor(now / WINDOW_MS);
    const reset = (window + 1) * WINDOW_MS;
    const maxSize = Math.max(1, Math.floor(perMinute / LEASE_SHARE));
    // Used up in time: the user is busy, so the next lease is larger; otherwise it shrinks back.
    const size = !held || held.refused ? 1 : held.left === 0 && now < held.until ? Math.min(maxSize, held.size * 2) : Math.max(1, held.size >> 1);
    const refund = held && !held.refused && held.window >= window - 1 ? held.left : 0;
    const counter = (w: number) => `rl:${bucket}:${identifier}:${w}`;
    if (held) held.left = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    try {
      const answer = await Promise.race([
        script.exec([counter(window), counter(window - 1), counter(held?.window ?? window)], [perMinute, now, WINDOW_MS, size, refund].map(String)),
        timedOut,
      ]);
      if (answer === "timeout") return { success: true, limit: perMinute, remaining: perMinute, reset: 0, unknown: true };
      const [granted, remaining] = answer.map(Number) as [number, number];
      const until = Math.min(reset, now + LEASE_MS);
      if (granted <= 0) {
        leases.set(key, { left: 0, until, window, size: 1, remaining: 0, reset, refused: true });
        return { success: false, limit: perMinute, remaining: 0, reset };
      }
      leases.set(key, { left: granted - 1, until, window, size, remaining, reset, refused: false });
      return { success: true, limit: perMinute, remaining: remaining + granted - 1, reset };
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    async limit(bucket, identifier, perMinute): Promise<RateLimitResult> {
      const key = `${bucket}:${perMinute}:${identifier}`;
      const now = Date.now();
      const held = leases.get(key);
      if (held && now < held.until) {
        if (held.refused) return { success: false, limit: perMinute, remaining: 0, reset: held.reset };
        if (held.left > 0) {
          held.left -= 1;
          return { success: true, limit: perMinute, remaining: held.remaining + held.left, reset: held.reset };
        }
      }
      try {
        return await take(bucket, identifier, perMinute, key, now);
      } catch {
        return { success: true, limit: perMinute, remaining: perMinute, reset: 0, unknown: true };
      }
    },
  };
}
