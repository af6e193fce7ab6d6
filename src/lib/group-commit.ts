/**
 * Group commit: writes of one kind that arrive within `windowMs` of the first, or while the previous
 * statement is still running, go out together as one statement. Each caller gets its own item's answer, or
 * the statement's error. The window matters on PGlite, where a statement runs on this thread and is over
 * before the next publisher gets there, so without it nothing would ever overlap.
 *
 * Hand-written rather than DataLoader: DataLoader gathers the calls of one event-loop tick, while the
 * publishers' writes come from separate HTTP answers a few milliseconds apart.
 *
 * @example
 * const mark = groupCommit((ids: string[]) => markAll(ids), { windowMs: 2 }); // one result per id, in order
 * const ok = await mark(id);
 */
export interface GroupCommitOptions<T = unknown> {
  /**
   * How long the first write waits for others; 0: until the end of this turn of the event loop (Node's
   * `setImmediate`, after the I/O callbacks of the turn, so the requests that arrived together go together).
   */
  windowMs: number;
  maxBatch?: number;
  /**
   * After the window, the flush waits for this too (given the writes waiting), while more writes join the
   * batch: work more urgent than these writes goes first.
   */
  ready?: (items: readonly T[]) => Promise<void>;
}

export function groupCommit<T, R>(flush: (items: T[]) => Promise<R[]>, options: GroupCommitOptions<T>): (item: T) => Promise<R> {
  const maxBatch = options.maxBatch ?? 256;
  let queue: Array<{ item: T; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  let busy = false;
  const run = async () => {
    while (queue.length) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      try {
        const results = await flush(batch.map((b) => b.item));
        batch.forEach((b, i) => {
          b.resolve(results[i]!);
        });
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    busy = false;
  };
  return (item) =>
    new Promise<R>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (busy) return;
      busy = true;
      const { ready } = options;
      later(() => void (ready ? ready(queue.map((q) => q.item)).then(run, run) : run()), options.windowMs);
    });
}

const later = (f: () => void, ms: number) => (ms === 0 && typeof setImmediate === "function" ? setImmediate(f) : setTimeout(f, ms));
