/**
 * Heavy image work on Node, off the request thread: a Piscina pool of worker threads (HEAVY_THREADS, one
 * per core by default) behind the fair limiter of src/heavy. Threads start on demand and end after
 * HEAVY_IDLE_SECONDS without work, which hands back the memory a burst of large images took (WASM memory
 * and a thread's heap only shrink when the thread ends). One pool serves the process: a second app in the
 * same process (the tests build many) shares its warm threads, with a limiter of its own. Each thread runs
 * the build of ./heavy-thread.ts (./thread-entry.ts).
 *
 * @example
 * const heavy = NodeHeavyWork(config.heavy);
 * await heavy.run(userId, "qrDecode", { bytes }); // decoded in a worker thread
 */
import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import type { Config } from "../../src/config";
import { LimitedHeavyWork, type HeavyInput, type HeavyOutput, type HeavyRunner, type HeavyTaskName, type HeavyWork } from "../../src/heavy";
import { inlineRunner } from "../../src/heavy/tasks";
import { ApiError } from "../../src/http/errors";
import type { NormalisedJpeg } from "../../src/images";
import type { Logger } from "../../src/services";
import { isJpegPart, joinSplit } from "../../src/images/normalise";
import { imageFormat } from "../../src/images/sniff";
import { abandonPipe, pipeControl } from "../../src/images/plane-pipe";
import { movable, unwrap, type Reply } from "../../src/heavy/wire";
import { threadEntry } from "./thread-entry";

type RunOptions = NonNullable<Parameters<Piscina["run"]>[1]>;

const pools = new Map<string, Promise<Piscina>>();

/**
 * The limiter around the process's pool; with `threads: 0`, around work on the request thread.
 *
 * @example
 * const heavy = NodeHeavyWork({ threads: 2, perUser: 2, queuePerUser: 8, queue: 64, idleSeconds: 30 });
 */
export function NodeHeavyWork(limits: Config["heavy"], log?: Logger): HeavyWork {
  const threads = limits.threads ?? Math.min(8, Math.max(1, availableParallelism()));
  if (threads === 0) return LimitedHeavyWork({ ...limits, slots: Math.max(1, limits.perUser) }, inlineRunner);
  const runner: HeavyRunner = async (name, input, handOver, spare) => {
    const pool = await poolFor(threads, limits.idleSeconds);
    // Only a JPEG's normalisation splits; anything else gives the second slot back at once.
    if (spare && name === "normaliseMedia" && imageFormat((input as HeavyInput<"normaliseMedia">).bytes) === "jpeg") {
      return (await normaliseSplit(pool, input as HeavyInput<"normaliseMedia">, spare, log)) as never;
    }
    spare?.();
    return (await runIn(pool, name, input, movable(handOver))) as never;
  };
  // Closing an app leaves the shared threads to end when idle (they never keep the process alive).
  return LimitedHeavyWork({ ...limits, slots: threads, pairs: threads >= 2 ? ["normaliseMedia"] : [] }, runner);
}

function runIn<N extends HeavyTaskName>(pool: Piscina, name: N, input: HeavyInput<N>, transfer?: readonly Transferable[]): Promise<HeavyOutput<N>> {
  // Piscina's TransferList type infers the wrong postMessage overload under current @types/node.
  const transferList = transfer as unknown as RunOptions["transferList"];
  return (pool.run({ name, input }, { transferList }) as Promise<Reply<HeavyOutput<N>>>).then(unwrap);
}

/**
 * A media upload normalised by two threads at once (src/images/plane-pipe.ts): the tail reads the second
 * part of the JPEG's entropy data (src/images/entropy-split.ts) while the head reads the first, then
 * resizes and encodes the rows decoded. The head is submitted first and the queue is strictly first in,
 * first out (`stricterFIFO`), so the tail never holds a thread while its head waits for one; the head waits
 * for the tail only once the tail has started (one that has not by then is told not to, and the head reads
 * on alone). The second slot goes back (`releaseSpare`) as soon as the tail is done,
 * which for a file the head keeps is at its frame header. Once the head has decoded every row it may encode
 * the last of the rows itself; the two parts are then joined (`joinSplit`). The upload goes to shared memory
 * (one copy), so that if the tail ever fails after the head has handed it the planes, or the parts do not
 * join, the job runs once more on one thread (logged as a warning).
 */
async function normaliseSplit(pool: Piscina, input: HeavyInput<"normaliseMedia">, releaseSpare: () => void, log?: Logger): Promise<NormalisedJpeg> {
  const bytes = new Uint8Array(new SharedArrayBuffer(input.bytes.length));
  bytes.set(input.bytes);
  const control = pipeControl();
  const { port1, port2 } = new MessageChannel();
  const head = runIn(pool, "normaliseMediaHead", { ...input, bytes, pipe: { control, port: port1 } }, [port1]);
  const tail = runIn(pool, "normaliseMediaTail", { pipe: { control, port: port2 } }, [port2]).finally(releaseSpare);
  // A head that failed or whose thread died before saying Done or Alone must not leave the tail waiting.
  const [headResult, tailResult] = await Promise.allSettled([head.finally(() => abandonPipe(control)), tail]);
  // The image's own verdict (a 4xx) is the answer; any other failure of the head (its thread died, or its
  // share of the encoding failed) leaves the job to the tail's whole answer or to one thread.
  if (headResult.status === "rejected" && headResult.reason instanceof ApiError) throw headResult.reason;
  const headValue = headResult.status === "fulfilled" ? headResult.value : null;
  if (headValue && !isJpegPart(headValue)) return headValue;
  const tailValue = tailResult.status === "fulfilled" ? tailResult.value : null;
  const joined = joinSplit(tailValue, headValue);
  if (joined) return joined;
  const reason = headResult.status === "rejected" ? headResult.reason : tailResult.status === "rejected" ? tailResult.reason : "no answer joined";
  log?.warn("media split over two threads ended without its answer; normalising on one thread", { error: String(reason) });
  return runIn(pool, "normaliseMedia", { ...input, bytes });
}

function poolFor(threads: number, idleSeconds: number): Promise<Piscina> {
  const key = `${threads}/${idleSeconds}`;
  let pool = pools.get(key);
  if (!pool) {
    pool = (async () => {
      return new Piscina({
        filename: (await threadEntry("heavy-thread")).href,
        // Not the request thread's flags: from the sources they load tsx, which the built thread does not need.
        execArgv: [],
        minThreads: 0,
        maxThreads: threads,
        idleTimeout: idleSeconds * 1000,
        concurrentTasksPerWorker: 1,
        // A task taken off the queue when no thread was free goes back to its front, not its end: a media
        // split's tail never overtakes its head (normaliseSplit).
        stricterFIFO: true,
      });
    })();
    pools.set(key, pool);
  }
  return pool;
}
