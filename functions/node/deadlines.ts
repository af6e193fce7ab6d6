/**
 * Timeout signals shared by the platform calls whose deadlines fall in the same step: `deadline(ms)` answers a
 * signal that aborts with a TimeoutError between `ms` and `ms + DEADLINE_STEP_MS` from now. Making an
 * AbortSignal of its own costs Node 20 some 20–30 µs per call, and a timer, a noticeable part of a burst's
 * in-process sandbox publishes; a 15 s timeout that may run 50 ms longer costs nothing. Node only: workerd
 * ties a timer to the request that set it, so a signal cannot outlive one request there (the Worker makes one
 * per call, src/social/platforms/graph-http.ts).
 *
 * @example
 * const deadline = sharedDeadlines();
 * await fetch(url, { signal: deadline(15_000) });
 */
import { setMaxListeners } from "node:events";

const DEADLINE_STEP_MS = 50;

export function sharedDeadlines(): (ms: number) => AbortSignal {
  const signals = new Map<number, AbortSignal>();
  return (ms) => {
    const at = Math.ceil((Date.now() + ms) / DEADLINE_STEP_MS) * DEADLINE_STEP_MS;
    let signal = signals.get(at);
    if (!signal) {
      const controller = new AbortController();
      signal = controller.signal;
      // Every call of the step listens to this signal; each removes its listener when it is over.
      setMaxListeners(0, signal);
      signals.set(at, signal);
      const timer = setTimeout(() => {
        signals.delete(at);
        controller.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError"));
      }, at - Date.now());
      timer.unref();
    }
    return signal;
  };
}
