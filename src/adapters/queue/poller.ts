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
  /** Calls `listener` when webhook messages may be due at `due` (now when absent); returns the function that stops it. */
  watchWebhooks(listener: (due?: Date) => void): () => void;
  /** Tells the webhook listeners that messages may be due (written by a state change, a test or a replay). */
  kickWebhooks(due?: Date): void;
}

export function PollerQueue(): PollerQueue {
  const listeners = new Set<(due: Date) => void>();
  const webhookListeners = new Set<(due?: Date) => void>();
  const kickWebhooks = (due?: Date) => {
    for (const listener of webhookListeners) listener(due);
  };
  return {
    kind: "poller",
    async enqueue(_deliveryId, notBefore) {
      const due = notBefore ?? new Date();
      for (const listener of listeners) listener(due);
      return null;
    },
    async enqueueWebhook(_id, notBefore) {
      kickWebhooks(notBefore);
      return null;
    },
    kickWebhooks,
    watchWebhooks(listener) {
      webhookListeners.add(listener);
      return () => webhookListeners.delete(listener);
    },
    async cancel() {},
    watch(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
