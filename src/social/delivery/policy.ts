/**
 * Retry policy of deliveries: which error codes the targets show, how many attempts, how long between them.
 *
 * Backoff is exponential with jitter: transient and ambiguous failures wait 5 s x 3^(n-1) (5 s, 15 s,
 * 45 s, 2 min 15 s), rate limits 60 s x 4^(n-1) (1, 4, 16, 64 min capped at 1 h) or longer when the
 * platform names a time. Each delay is stretched by a random 0-50 % so retries of many targets spread out
 * instead of hitting the platform together. Attempt 5 is the last.
 *
 * @example
 * retryDelayMs("transient", 1, Math.random); // 5000..7500
 */
import type { ErrorKind } from "../platforms/errors";

export const MAX_ATTEMPTS = 5;
/** A claim lasts this long unless its publisher renews it (every LOCK_MS / 3 while it works). */
export const LOCK_MS = 15_000;

export const ERROR_CODE: Record<ErrorKind, string> = {
  auth: "ACCOUNT_NEEDS_RECONNECT",
  rate_limit: "RATE_LIMITED",
  transient: "PLATFORM_UNAVAILABLE",
  invalid: "PLATFORM_REJECTED",
  ambiguous: "OUTCOME_UNKNOWN",
};

export function isRetryable(kind: ErrorKind): boolean {
  return kind === "rate_limit" || kind === "transient" || kind === "ambiguous";
}

const TRANSIENT = { baseMs: 5_000, factor: 3, capMs: 15 * 60_000 };
const RATE_LIMIT = { baseMs: 60_000, factor: 4, capMs: 60 * 60_000 };
/** A platform's own wait hint is honoured up to a day (QStash's longest retry delay too). */
const MAX_HINT_MS = 24 * 60 * 60_000;

/** Delay before attempt `attempt + 1`, after attempt number `attempt` (1-based) failed with `kind`. */
export function retryDelayMs(kind: ErrorKind, attempt: number, random: () => number = Math.random, hintMs?: number): number {
  const p = kind === "rate_limit" ? RATE_LIMIT : TRANSIENT;
  const base = Math.min(p.capMs, p.baseMs * p.factor ** Math.max(0, attempt - 1));
  const jittered = Math.round(base * (1 + 0.5 * random()));
  return hintMs !== undefined ? Math.max(jittered, Math.min(hintMs, MAX_HINT_MS)) : jittered;
}
