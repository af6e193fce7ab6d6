/**
 * The embedded queue: nothing to enqueue, because the scheduler loop polls Postgres for due deliveries.
 * The delivery row is the source of truth either way.
 *
 * @example
 * const queue = PollerQueue();
 */
import type { Queue } from "../../services";

export function PollerQueue(): Queue {
  return {
    kind: "poller",
    async enqueue() {
      return null;
    },
    async cancel() {},
  };
}
