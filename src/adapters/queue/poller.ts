/**
 * The embedded queue: nothing to enqueue, because the scheduler loop polls Postgres for due deliveries.
 * The delivery row is the source of truth either way. An enqueue only tells the scheduler in this process
 * when the delivery is due (`watch`), so it can wake at that instant instead of at its next poll.
 *
 * @example
 * const queue = PollerQueue();
 * const unwatch = queue.watch((due) => wakeAt(due)); // called on every enqueue
 */
import type { Queue } from "../../services";

export interface PollerQueue extends Queue {
  readonly kind: "poller";
  /** Calls `listener` with each enqueued delivery's due time; returns the function that stops it. */
  watch(listener: (due: Date) => void): () => void;
}

export function PollerQueue(): PollerQueue {
  const listeners = new Set<(due: Date) => void>();
  return {
    kind: "poller",
    async enqueue(_deliveryId, notBefore) {
      const due = notBefore ?? new Date();
      for (const listener of listeners) listener(due);
      return null;
    },
    async cancel() {},
    watch(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
