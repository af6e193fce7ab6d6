/**
 * What a benchmark starts (servers, workerd, databases, temporary files), stopped once and in reverse order:
 * at the end, on an error, or on SIGINT/SIGTERM. A start still under way when stopping begins is awaited
 * and then stopped; nothing new starts after that.
 *
 * Miniflare's exit hook and wrangler's module answer SIGINT/SIGTERM with an immediate exit, which would
 * leave a detached child (the Node server runs in its own process group) and a scratch database behind, so
 * each `own` takes back the signal listeners added since `benchResources()` and installs its own.
 *
 * @example
 * const res = benchResources();
 * try {
 *   const server = await res.own(() => startServerProcess(), (s) => s.dispose());
 * } finally {
 *   await res.close();
 * }
 */
const SIGNALS = ["SIGINT", "SIGTERM"] as const;

export interface BenchResources {
  /** Starts with `start` and keeps `stop` for the end; throws without starting once stopping has begun. */
  own<T>(start: () => Promise<T>, stop: (value: T) => unknown): Promise<T>;
  /** Stops one owned value now (e.g. one of several cold starts) instead of at the end. */
  release(value: unknown): Promise<void>;
  /** Stops everything, once; later calls return the same promise. Signals are left to their defaults again. */
  close(): Promise<void>;
}

export function benchResources(): BenchResources {
  const stops: Array<{ value: unknown; stop: () => unknown }> = [];
  const pending = new Set<Promise<unknown>>();
  let closing: Promise<void> | undefined;
  const before = new Map(SIGNALS.map((s) => [s, process.listeners(s)]));

  const close = () =>
    (closing ??= (async () => {
      while (pending.size || stops.length) {
        await Promise.allSettled([...pending]);
        // Each on its own, so one that fails still leaves nothing else behind.
        for (const { stop } of stops.splice(0).reverse())
          await Promise.resolve()
            .then(stop)
            .catch(() => {});
      }
      for (const signal of SIGNALS) process.removeListener(signal, onSignal);
    })());
  const onSignal = () => void close().finally(() => process.exit(130));
  const takeSignals = () => {
    for (const signal of SIGNALS) {
      for (const listener of process.listeners(signal))
        if (listener !== onSignal && !before.get(signal)!.includes(listener)) process.removeListener(signal, listener);
      if (!process.listeners(signal).includes(onSignal)) process.on(signal, onSignal);
    }
  };
  takeSignals();

  return {
    async own(start, stop) {
      if (closing) throw new Error("the benchmark is stopping");
      const started = start();
      pending.add(started);
      try {
        const value = await started;
        stops.push({ value, stop: () => stop(value) });
        return value;
      } finally {
        pending.delete(started);
        takeSignals();
      }
    },
    async release(value) {
      const at = stops.findIndex((s) => s.value === value);
      if (at >= 0) await stops.splice(at, 1)[0]!.stop();
    },
    close,
  };
}
