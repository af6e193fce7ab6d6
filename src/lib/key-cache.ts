/**
 * Verified API keys, remembered for a few seconds by one process, so a busy key is not looked up in the
 * database on every request. Keyed by the key's SHA-256 (the raw key is never held), bounded in size.
 * Revocation: whoever revokes in this process clears the cache, so the next request is refused; another
 * process sharing the database refuses the key within `ttlMs`. The Node server keeps one for its life; a
 * Worker builds its services per request and keeps none (every request reads the database).
 *
 * @example
 * const cache = ApiKeyCache();
 * cache.set(hash, { userId, keyId }, Date.now());
 * cache.get(hash, Date.now()); // { userId, keyId } for the next 5 s
 */
import type { ApiKeyScope } from "./scopes";

export interface VerifiedKey {
  userId: string;
  keyId: string;
  /** The areas the key may call; null: every area. */
  scopes: readonly ApiKeyScope[] | null;
  /** Origins of the pages the key may be used from; null: any. */
  allowedOrigins: readonly string[] | null;
}

export interface ApiKeyCache {
  get(hash: string, now: number): VerifiedKey | undefined;
  set(hash: string, key: VerifiedKey, now: number): void;
  /** Forget every key (after a revocation). */
  clear(): void;
}

export function ApiKeyCache(options: { ttlMs?: number; maxEntries?: number } = {}): ApiKeyCache {
  const ttlMs = options.ttlMs ?? 5000;
  const maxEntries = options.maxEntries ?? 10_000;
  const entries = new Map<string, VerifiedKey & { until: number }>();
  return {
    get(hash, now) {
      const entry = entries.get(hash);
      if (!entry) return undefined;
      if (entry.until <= now) {
        entries.delete(hash);
        return undefined;
      }
      return { userId: entry.userId, keyId: entry.keyId, scopes: entry.scopes, allowedOrigins: entry.allowedOrigins };
    },
    set(hash, key, now) {
      // Oldest first out: a Map iterates in insertion order.
      if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
      entries.set(hash, { ...key, until: now + ttlMs });
    },
    clear() {
      entries.clear();
    },
  };
}
