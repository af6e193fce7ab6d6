/**
 * Heavy image work, shared fairly: every CPU-heavy job (HEAVY_TASKS) goes through one limiter per process
 * (or Worker isolate) that runs at most `slots` at once and at most `perUser` of one user's, takes the next
 * job from the users in turn (round robin), so one user's burst of 40 MP images waits behind its own jobs
 * and not in front of everyone's, and refuses with 429 and Retry-After when that user's queue or the
 * whole queue is full. Where a job runs is the runner's business: a pool of worker threads on Node, the
 * request's own thread on the Worker.
 *
 * @example
 * const heavy = LimitedHeavyWork({ slots: 2, perUser: 2, queuePerUser: 8, queue: 64 }, inlineRunner);
 * const text = await heavy.run(userId, "qrDecode", { bytes });
 */
import { ApiError } from "../lib/errors";

/**
 * The heavy tasks by name, each a function from its input to a promise of its output. The registry
 * (HEAVY_TASKS in src/heavy/tasks.ts, in the app layer: it names every area's tasks) fills this interface in
 * by declaration merging, so the limiter and the `Services.heavy` port name the tasks and their types
 * without importing the areas that implement them.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging (src/heavy/tasks.ts), so the port names no area
export interface HeavyTasks {}
export type HeavyTaskName = keyof HeavyTasks;
export type HeavyInput<N extends HeavyTaskName> = HeavyTasks[N] extends (input: infer I) => unknown ? I : never;
export type HeavyOutput<N extends HeavyTaskName> = HeavyTasks[N] extends (...args: never[]) => infer O ? Awaited<O> : never;

/**
 * Runs one task somewhere, without limits. `handOver`: byte arrays of the input the caller will not touch
 * again, which a runner on another thread may move there instead of copying (they are then empty here).
 */
export type HeavyRunner = <N extends HeavyTaskName>(
  name: N,
  input: HeavyInput<N>,
  handOver?: readonly Uint8Array[],
  spare?: () => void,
) => Promise<HeavyOutput<N>>;

export interface HeavyLimits {
  /** Jobs running at once in all (the pool's threads). */
  slots: number;
  /** Jobs of one user running at once. */
  perUser: number;
  /** Jobs of one user waiting; the next one gets 429. */
  queuePerUser: number;
  /** Jobs waiting in all; the next one gets 429. */
  queue: number;
  /**
   * A slot held longer than this is taken back (the Worker: a cancelled request's job never runs its
   * `finally`, and a timer cannot outlive the request either, so the next acquire reclaims it).
   */
  leaseMs?: number;
  /**
   * Tasks the runner can split over two slots: such a job takes a second slot when one is free and no job
   * is waiting, and the runner gets its release (`spare`) to give it back as soon as it is done with it.
   * So a lone upload uses two threads and a busy pool still runs one job a slot. A second slot is not a
   * job: it counts against nobody's `perUser`, not in `load()`, and a job that finds only second slots
   * taken waits for one (however full the queues) rather than being refused.
   */
  pairs?: readonly HeavyTaskName[];
}

export interface HeavyWork {
  /**
   * Runs `name` for `userId` within the limits; ApiError RATE_LIMITED (429, Retry-After) when full.
   * `handOver` lists byte arrays of `input` the caller is done with: on Node they move to the work thread
   * (no copy) and are empty afterwards; elsewhere they stay as they are. Never list bytes used later.
   */
  run<N extends HeavyTaskName>(userId: string, name: N, input: HeavyInput<N>, handOver?: readonly Uint8Array[]): Promise<HeavyOutput<N>>;
  /** Jobs running and waiting now. */
  load(): { running: number; waiting: number };
}

interface UserQueue {
  running: number;
  /** Each waiting job's go-ahead, handed the release of the slot taken for it. */
  waiting: Array<(release: () => void) => void>;
}

/**
 * The limiter around a runner. A waiting job is woken by a plain promise, and runs its task in its own
 * continuation: on the Worker that is its own request's context, whichever request freed the slot.
 *
 * @example
 * const heavy = LimitedHeavyWork({ slots: 1, perUser: 1, queuePerUser: 0, queue: 0 }, inlineRunner);
 * await heavy.run("u1", "normaliseMedia", { bytes }); // a second one of u1's at the same time: 429
 */
export function LimitedHeavyWork(limits: HeavyLimits, runner: HeavyRunner): HeavyWork {
  const users = new Map<string, UserQueue>();
  /** Users with waiting jobs, in turn order. */
  const turn: string[] = [];
  let waiting = 0;
  /** Recent job duration (ms), for Retry-After. */
  let typicalMs = 1000;

  /** Slots taken and not yet given back (the jobs running): when each was taken, and how to give it back. */
  const holders = new Set<{ since: number; release: () => void }>();
  const free = () => holders.size < limits.slots;
  /** Of those, the second slots of jobs that split (see `pairs`). */
  let spares = 0;

  /** Takes a slot for one of `userId`'s jobs; the returned release gives it back (once). */
  const take = (userId: string, queue: UserQueue): (() => void) => {
    queue.running++;
    const holder = {
      since: Date.now(),
      release: () => {
        if (!holders.delete(holder)) return;
        queue.running--;
        if (queue.running === 0 && queue.waiting.length === 0) users.delete(userId);
        pump();
      },
    };
    holders.add(holder);
    return holder.release;
  };

  /** A second slot for a job that can use one, when a slot is free and no job waits for it. */
  const takeSpare = (): (() => void) | undefined => {
    if (!free() || waiting > 0) return undefined;
    spares++;
    const holder = {
      since: Date.now(),
      release: () => {
        if (!holders.delete(holder)) return;
        spares--;
        pump();
      },
    };
    holders.add(holder);
    return holder.release;
  };

  /** Starts waiting jobs while there are free slots, one user after another. */
  const pump = () => {
    let passed = 0;
    while (free() && turn.length > 0 && passed < turn.length) {
      const userId = turn.shift()!;
      const q = users.get(userId)!;
      if (q.running < limits.perUser && q.waiting.length > 0) {
        waiting--;
        const go = q.waiting.shift()!;
        go(take(userId, q));
        passed = 0;
      } else {
        passed++;
      }
      if (q.waiting.length > 0) turn.push(userId);
    }
  };

  /** Gives back the slots held past their lease. */
  const reclaim = () => {
    if (!limits.leaseMs) return;
    const now = Date.now();
    for (const holder of [...holders]) if (now - holder.since > limits.leaseMs) holder.release();
  };

  const busy = (message: (seconds: number) => string, jobsAhead: number, parallel: number) => {
    const seconds = Math.min(60, Math.max(1, Math.ceil((typicalMs * (jobsAhead + 1)) / Math.max(1, parallel) / 1000)));
    return new ApiError("RATE_LIMITED", message(seconds), { headers: { "Retry-After": String(seconds) } });
  };

  /** Waits for a slot (or throws 429); the caller then holds it until it calls the returned release. */
  const acquire = async (userId: string): Promise<() => void> => {
    reclaim();
    let q = users.get(userId);
    if (!q) users.set(userId, (q = { running: 0, waiting: [] }));
    const queue = q;
    if (free() && queue.running < limits.perUser && queue.waiting.length === 0) return take(userId, queue);
    const refuse = (error: ApiError) => {
      if (queue.running === 0 && queue.waiting.length === 0) users.delete(userId);
      throw error;
    };
    // Held only by second slots, it would have started at once without them: it waits for one instead.
    const onlySpares = holders.size - spares < limits.slots && queue.running < limits.perUser && queue.waiting.length === 0 && waiting === 0;
    if (!onlySpares && queue.waiting.length >= limits.queuePerUser) {
      refuse(
        busy(
          (s) => `Too many image jobs at once for this key: ${queue.running} running and ${queue.waiting.length} waiting; retry in ${s} s.`,
          queue.running + queue.waiting.length,
          limits.perUser,
        ),
      );
    }
    if (!onlySpares && waiting >= limits.queue) refuse(busy((s) => `The service is busy with image work; retry in ${s} s.`, waiting, limits.slots));
    waiting++;
    return new Promise<() => void>((go) => {
      queue.waiting.push(go);
      if (!turn.includes(userId)) turn.push(userId);
      pump();
    });
  };

  return {
    async run<N extends HeavyTaskName>(userId: string, name: N, input: HeavyInput<N>, handOver?: readonly Uint8Array[]): Promise<HeavyOutput<N>> {
      const release = await acquire(userId);
      const spare = limits.pairs?.includes(name) ? takeSpare() : undefined;
      const started = Date.now();
      try {
        return await runner(name, input, handOver, spare);
      } finally {
        typicalMs = typicalMs * 0.8 + (Date.now() - started) * 0.2;
        spare?.();
        release();
      }
    },
    load: () => ({ running: holders.size - spares, waiting }),
  };
}
