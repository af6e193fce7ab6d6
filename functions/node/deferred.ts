/**
 * Node's stand-in for `ctx.waitUntil`: background promises are tracked so shutdown can wait for them.
 *
 * @example
 * const bg = DeferredSet(log); services.defer = bg.defer; ... await bg.drain();
 */
import type { Logger } from "../../src/services";

export function DeferredSet(log: Logger) {
  const pending = new Set<Promise<unknown>>();
  return {
    defer(promise: Promise<unknown>) {
      const tracked = promise.catch((err) => log.error("background task failed", { error: String(err) })).finally(() => pending.delete(tracked));
      pending.add(tracked);
    },
    async drain(timeoutMs = 10_000) {
      const deadline = new Promise((r) => setTimeout(r, timeoutMs).unref());
      await Promise.race([Promise.allSettled([...pending]), deadline]);
    },
    get size() {
      return pending.size;
    },
  };
}
