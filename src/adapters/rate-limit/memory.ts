/**
 * In-memory twin of the Upstash sliding-window limiter: the previous minute's count is weighted by how much
 * of it still overlaps the sliding window, as @upstash/ratelimit's slidingWindow does. Per process only.
 *
 * @example
 * const limiter = MemoryRateLimiter();
 * await limiter.limit("qr", userId, 120);
 */
import type { Clock, RateLimiter, RateLimitResult } from "../../services";

const WINDOW_MS = 60_000;

export function MemoryRateLimiter(clock: Clock = { now: () => new Date() }): RateLimiter {
  const windows = new Map<string, { window: number; count: number; previous: number }>();
  return {
    async limit(bucket, identifier, perMinute): Promise<RateLimitResult> {
      const now = clock.now().getTime();
      const window = Math.floor(now / WINDOW_MS);
      const key = `${bucket}:${identifier}`;
      let entry = windows.get(key);
      if (!entry || entry.window < window - 1) entry = { window, count: 0, previous: 0 };
      else if (entry.window === window - 1) entry = { window, count: 0, previous: entry.count };
      windows.set(key, entry);
      const overlap = 1 - (now % WINDOW_MS) / WINDOW_MS;
      const used = Math.floor(entry.previous * overlap) + entry.count;
      const reset = (window + 1) * WINDOW_MS;
      if (used >= perMinute) return { success: false, limit: perMinute, remaining: 0, reset };
      entry.count += 1;
      if (windows.size > 100_000) prune(windows, window);
      return { success: true, limit: perMinute, remaining: Math.max(0, perMinute - used - 1), reset };
    },
  };
}

function prune(windows: Map<string, { window: number }>, current: number) {
  for (const [key, entry] of windows) if (entry.window < current - 1) windows.delete(key);
}
