/**
 * The client's `fetch`: sends a request and, when the API answers 429 (a rate limit, refused before any work)
 * or 503 (a dependency unavailable), sends it again a bounded number of times. A `Retry-After` (seconds or an
 * HTTP date) is honoured as given; an answer asking for a longer wait than `maxDelayMs` is handed back at once
 * rather than retried early. Without one the wait doubles from `baseDelayMs`, with jitter. A request whose
 * signal aborts stops waiting.
 */

export interface RetryOptions {
  /** Retries after the first attempt; 0 turns retrying off. Default 2. */
  maxRetries?: number;
  /** The longest wait before a retry, in milliseconds; a longer `Retry-After` is not waited for. Default 30,000. */
  maxDelayMs?: number;
  /** The first wait when the answer has no `Retry-After`, doubled for each further retry. Default 500. */
  baseDelayMs?: number;
}

const RETRIED_STATUSES = new Set([429, 503]);

/** Milliseconds a `Retry-After` value asks for, or undefined when it is absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A `fetch` over `inner` that retries 429 and 503 answers as described above.
 *
 * @example
 * const fetch = retryingFetch(globalThis.fetch, { maxRetries: 3 });
 */
export function retryingFetch(inner: (request: Request) => Promise<Response>, options: RetryOptions = {}): (request: Request) => Promise<Response> {
  const maxRetries = options.maxRetries ?? 2;
  const maxDelayMs = options.maxDelayMs ?? 30_000;
  const baseDelayMs = options.baseDelayMs ?? 500;
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      // Each attempt sends a copy: a body can be read once.
      const response = await inner(attempt < maxRetries ? request.clone() : request);
      if (!RETRIED_STATUSES.has(response.status) || attempt >= maxRetries) return response;
      const asked = retryAfterMs(response.headers.get("Retry-After"));
      const wait = asked ?? baseDelayMs * 2 ** attempt * (0.5 + Math.random() / 2);
      if (wait > maxDelayMs) return response;
      // The answer being retried is not handed back: its body is released.
      await response.body?.cancel().catch(() => {});
      await sleep(wait, request.signal);
    }
  };
}
