/**
 * Heavy image work on Node, off the request thread: a Piscina pool of worker threads (HEAVY_THREADS, one
 * per core by default) behind the fair limiter of src/heavy. Threads start on demand and end after
 * HEAVY_IDLE_SECONDS without work, which hands back the memory a burst of large images took (WASM memory
 * and a thread's heap only shrink when the thread ends). One pool serves the process: a second app in the
 * same process (the tests build many) shares its warm threads, with a limiter of its own.
 *
 * @example
 * const heavy = NodeHeavyWork(config.heavy);
 * await heavy.run(userId, "qrDecode", { bytes }); // decoded in a worker thread
 */
import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import type { Config } from "../../src/config";
import { inlineRunner, LimitedHeavyWork, type HeavyRunner, type HeavyWork } from "../../src/heavy";
import { unwrap, type Reply } from "../../src/heavy/wire";

const pools = new Map<string, Piscina>();

/**
 * The limiter around the process's pool; with `threads: 0`, around work on the request thread.
 *
 * @example
 * const heavy = NodeHeavyWork({ threads: 2, perUser: 2, queuePerUser: 8, queue: 64, idleSeconds: 30 });
 */
export function NodeHeavyWork(limits: Config["heavy"]): HeavyWork {
  const threads = limits.threads ?? Math.min(8, Math.max(1, availableParallelism()));
  if (threads === 0) return LimitedHeavyWork({ ...limits, slots: Math.max(1, limits.perUser) }, inlineRunner);
  const pool = poolFor(threads, limits.idleSeconds);
  const runner: HeavyRunner = async (name, input) => unwrap(await (pool.run({ name, input }) as Promise<Reply<never>>));
  // Closing an app leaves the shared threads to end when idle (they never keep the process alive).
  return LimitedHeavyWork({ ...limits, slots: threads }, runner);
}

function poolFor(threads: number, idleSeconds: number): Piscina {
  const key = `${threads}/${idleSeconds}`;
  let pool = pools.get(key);
  if (!pool) {
    pool = new Piscina({
      filename: new URL("./heavy-thread.mjs", import.meta.url).href,
      minThreads: 0,
      maxThreads: threads,
      idleTimeout: idleSeconds * 1000,
      concurrentTasksPerWorker: 1,
    });
    pools.set(key, pool);
  }
  return pool;
}

/**
 * How many heavy-work threads are alive in this process (for the memory test and operators' curiosity).
 *
 * @example
 * heavyThreads(); // 0 once every thread has been idle for HEAVY_IDLE_SECONDS
 */
export function heavyThreads(): number {
  let n = 0;
  for (const pool of pools.values()) n += pool.threads.length;
  return n;
}
