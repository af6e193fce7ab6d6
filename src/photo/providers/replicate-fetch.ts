/**
 * The fetch the Replicate client is given, one per generation. It owns retrying, because the client's own
 * retry (replicate@1.4.0) fires up to six attempts back to back and never reads Retry-After:
 * - 429: waits exactly Retry-After (header, else the "resets in ~Ns" hint in the body) when that fits the
 *   per-wait cap and the generation's deadline, at most MAX_RATE_LIMITED times; otherwise throws
 *   UPSTREAM_RATE_LIMITED (retryable). The client therefore never sees a 429.
 * - GET network errors and 5xx: retried with backoff; POST is not retried (a lost create may have created a
 *   prediction, and a second one would be charged twice).
 * - Whatever it throws is cached per request init, so the client's instant re-calls of the same request
 *   get the same error without touching the network.
 * - Adds `Cancel-After` to prediction creates, so Replicate stops the prediction even if we never get to
 *   cancel it (a create whose answer we lost, a process that died).
 *
 * @example
 * const clock = GenerationClock(sleep, 180_000, signal);
 * const client = new Replicate({ auth: token, baseUrl, fetch: ReplicateFetch({ fetch, clock, log, maxRateLimitWaitMs: 30_000 }) });
 */
import type { Logger } from "../../services";
import { GenerationError } from "../types";

/** Rate-limited answers one generation tolerates before it gives up. */
export const MAX_RATE_LIMITED = 5;
/** Attempts for one GET that meets network errors or 5xx. */
const MAX_GET_ATTEMPTS = 4;

/**
 * Time for one generation. Elapsed time is the larger of the wall clock and the total slept, so an injected
 * sleep that returns at once (tests) still moves the deadline, and a real sleep is not counted twice.
 */
export interface GenerationClock {
  elapsedMs(): number;
  remainingMs(): number;
  /** True when the deadline has passed or the signal fired. */
  expired(): boolean;
  /** Sleeps (through the injected sleep), returning early when the signal fires. */
  sleep(ms: number): Promise<void>;
  readonly signal: AbortSignal;
  readonly sleeps: number[];
}

/**
 * @example
 * const clock = GenerationClock((ms) => new Promise((r) => setTimeout(r, ms)), 180_000, controller.signal);
 */
export function GenerationClock(sleep: (ms: number) => Promise<void>, timeoutMs: number, signal: AbortSignal): GenerationClock {
  const started = Date.now();
  let slept = 0;
  const sleeps: number[] = [];
  const elapsedMs = () => Math.max(Date.now() - started, slept);
  return {
    elapsedMs,
    remainingMs: () => Math.max(0, timeoutMs - elapsedMs()),
    expired: () => signal.aborted || elapsedMs() >= timeoutMs,
    signal,
    sleeps,
    async sleep(ms) {
      if (signal.aborted || ms <= 0) return;
      slept += ms;
      sleeps.push(ms);
      let onAbort = () => {};
      const aborted = new Promise<void>((resolve) => {
        onAbort = () => resolve();
        signal.addEventListener("abort", onAbort, { once: true });
      });
      try {
        await Promise.race([sleep(ms), aborted]);
      } finally {
        signal.removeEventListener("abort", onAbort);
      }
    },
  };
}

export interface ReplicateFetchOptions {
  fetch: typeof fetch;
  clock: GenerationClock;
  log: Logger;
  /** Longest Retry-After we wait for; a longer one gives up at once. */
  maxRateLimitWaitMs: number;
}

/** Counts for the generation's log line. */
export interface FetchStats {
  requests: number;
  rateLimited: number;
  retried: number;
}

/**
 * Reads "1", "2.5" or an HTTP date from Retry-After, else "~30s" from Replicate's 429 body; ms or null.
 *
 * @example
 * retryAfterMs(null, '{"detail":"Request was throttled. Your rate limit resets in ~30s."}'); // 30000
 */
export function retryAfterMs(header: string | null, body: string, now = Date.now()): number | null {
  if (header) {
    const trimmed = header.trim();
    if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
    const date = Date.parse(trimmed);
    if (!Number.isNaN(date)) return Math.max(0, date - now);
  }
  const hint = /resets in ~?(\d+(?:\.\d+)?)\s*s/i.exec(body);
  return hint ? Math.ceil(Number(hint[1]) * 1000) : null;
}

/**
 * Replicate's Cancel-After takes a duration such as "90s"; at least 5 s so a create is never born dead.
 *
 * @example
 * cancelAfter(179_400); // "180s"
 */
export function cancelAfter(ms: number): string {
  return `${Math.max(5, Math.ceil(ms / 1000))}s`;
}

/** Backoff with jitter for GET retries: ~0.5 s, 1 s, 2 s. */
const backoffMs = (attempt: number) => Math.round(500 * 2 ** (attempt - 1) * (0.8 + Math.random() * 0.4));

/**
 * Builds the wrapping fetch; `stats` is filled as requests go.
 *
 * @example
 * const { fetch: wrapped, stats } = ReplicateFetch({ fetch, clock, log, maxRateLimitWaitMs: 30_000 });
 */
export function ReplicateFetch(options: ReplicateFetchOptions): { fetch: typeof fetch; stats: FetchStats } {
  const { clock, log } = options;
  const stats: FetchStats = { requests: 0, rateLimited: 0, retried: 0 };
  const settled = new WeakMap<object, unknown>();

  const send = async (input: RequestInfo | URL, init: RequestInit | undefined): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    const headers = new Headers(init?.headers);
    const isCreate = method === "POST" && url.pathname.endsWith("/predictions");
    for (let attempt = 1; ; attempt++) {
      if (isCreate) headers.set("Cancel-After", cancelAfter(clock.remainingMs()));
      stats.requests += 1;
      let response: Response;
      try {
        response = await options.fetch(url, { ...init, method, headers });
      } catch (cause) {
        if (init?.signal?.aborted) throw cause;
        if (method === "GET" && attempt < MAX_GET_ATTEMPTS && clock.remainingMs() > backoffMs(attempt)) {
          stats.retried += 1;
          await clock.sleep(backoffMs(attempt));
          continue;
        }
        log.warn("replicate unreachable", { method, path: url.pathname, attempt, error: cause instanceof Error ? cause.name : "unknown" });
        throw new GenerationError("UPSTREAM_UNAVAILABLE", "The image model's provider could not be reached; try again shortly.", true);
      }
      if (response.status === 429) {
        stats.rateLimited += 1;
        const body = await response.text().catch(() => "");
        const waitMs = retryAfterMs(response.headers.get("retry-after"), body) ?? backoffMs(stats.rateLimited + 1);
        // Once the generation has stopped (a cancel on its way out) there is no time left to wait.
        const fits = !clock.signal.aborted && waitMs <= options.maxRateLimitWaitMs && waitMs < clock.remainingMs();
        log.warn("replicate rate limited", {
          method,
          path: url.pathname,
          waitMs,
          rateLimited: stats.rateLimited,
          giveUp: !fits || stats.rateLimited > MAX_RATE_LIMITED,
        });
        if (!fits || stats.rateLimited > MAX_RATE_LIMITED) {
          throw new GenerationError(
            "UPSTREAM_RATE_LIMITED",
            `The image model's provider is rate limiting this service; try again in about ${Math.max(1, Math.ceil(waitMs / 1000))} s.`,
            true,
          );
        }
        await clock.sleep(waitMs);
        if (init?.signal?.aborted) throw init.signal.reason;
        continue;
      }
      if (response.status >= 500 && method === "GET") {
        await response.body?.cancel().catch(() => undefined);
        if (attempt < MAX_GET_ATTEMPTS && clock.remainingMs() > backoffMs(attempt)) {
          stats.retried += 1;
          await clock.sleep(backoffMs(attempt));
          continue;
        }
        log.warn("replicate unavailable", { method, path: url.pathname, status: response.status, attempt });
        throw new GenerationError("UPSTREAM_UNAVAILABLE", "The image model's provider is unavailable; try again shortly.", true);
      }
      return response;
    }
  };

  const wrapped = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const key = init ?? {};
    if (settled.has(key)) throw settled.get(key);
    try {
      return await send(input, init);
    } catch (error) {
      settled.set(key, error);
      throw error;
    }
  };
  return { fetch: wrapped as typeof fetch, stats };
}
