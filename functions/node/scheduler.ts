/**
 * The embedded delivery scheduler: the Node twin of QStash plus the Worker's cron.
 * It claims due deliveries from Postgres, a batch per statement with their posts and accounts (`claimDue`),
 * up to `hold` at once, and publishes them with at most `concurrency` platform calls in flight; every
 * `sweepMs` it runs the sweep (expired claims, retention purge, QStash re-queue). Between ticks it sleeps
 * until the earliest due delivery (read from the database after each tick, and told by the poller queue
 * when a post is created in this process), at most `pollMs` (deliveries another process created), and it
 * ticks early when a publish finishes, so a burst drains fast and a scheduled post goes out on time. It wakes
 * EARLY_MS before a due time, and longer before a burst (by the number of targets due in that second), and
 * claims everything due by then, so that a burst's claim, post and account reads and token decryption are done
 * when the time comes; each publish waits for its time itself, then for a slot.
 * `stop()` stops claiming and waits for in-flight publishes, so a clean shutdown never strands a claim.
 *
 * @example
 * const scheduler = startScheduler(services, { publish: true });
 * await scheduler.stop();
 */
import type { Services } from "../../src/services";
import { publishClaimed } from "../../src/social/delivery/publish";
import { releaseExpiredLocks, runSweep } from "../../src/social/delivery/sweep";
import { resumePhotoJobs, startDueAsyncJobs } from "../../src/photo/async-jobs";
import { purgeExpiredStates } from "../../src/hub/oauth-states";
import { claimDue, nextDue, type Claim } from "../../src/social/delivery/store";
import { LOCK_MS } from "../../src/social/delivery/policy";
import type { PollerQueue } from "../../src/adapters/queue/poller";
import { sendSlots } from "../../src/social/delivery/slots";
import { waitForInFlight } from "./in-flight";

/** How soon a tick looks again at a due delivery it could not start. */
const BUSY_RETRY_MS = 50;
/**
 * A tick starts at least this long before a due time and claims what is due by then, so the claim, the post
 * and the account are read when the time comes; the publish itself waits for the due time (publishClaimed).
 * The cost is that a target shows `publishing`, and cannot be cancelled, for this long before its time.
 */
const EARLY_MS = 250;
/**
 * And this much longer per target due in the same second (PREP_WINDOW_MS from the first), up to PREP_CAP
 * targets: what claiming, reading and preparing one target costs the embedded database at most, so that a
 * burst of a thousand posts is claimed before its time, not while it is being sent.
 */
const PREP_MS_PER_TARGET = 0.3;
const PREP_WINDOW_MS = 1000;
const PREP_CAP = 10_000;
/** Targets one claim statement takes at most; a tick claims batch after batch up to `hold`. */
const CLAIM_BATCH = 512;
/** Claims held at most by default: a burst of this many is claimed ahead of its time. */
const HOLD = 4096;
/**
 * Platform calls in flight at most, across all accounts. The publishes that go out together share their
 * write-ahead mark, the sandbox's insert and their record (group commits), so a burst costs about one round of
 * statements per this many targets, and fewer, larger statements cost the database less per target.
 */
const CONCURRENCY = 256;
/** How long the record of an answered target waits at most for the sends of its burst. */
const RECORD_WAIT_MS = 1000;

export interface SchedulerOptions {
  /** Claim and publish due deliveries here (false when QStash delivers them). */
  publish: boolean;
  /** Platform calls in flight at most (default CONCURRENCY). */
  concurrency?: number;
  /** Claims held at most (sending, waiting for a slot, or read ahead of their due time); default HOLD. */
  hold?: number;
  /** How long a record waits at most for the sends still going out (default RECORD_WAIT_MS). */
  recordWaitMs?: number;
  pollMs?: number;
  sweepMs?: number;
  /** Expired claims are released, and due async photo jobs started, this often between sweeps (cheap: few rows). */
  lockCheckMs?: number;
  /** Release every claim at start-up: the database is this process's alone (PGlite), so any claim is a dead one's. */
  exclusiveDb?: boolean;
  /**
   * Run the sweep and the release of expired claims (default true); false where another scheduler of the
   * process does (the delivery thread's, functions/node/delivery-thread.ts).
   */
  housekeeping?: boolean;
  stopTimeoutMs?: number;
}

export interface Scheduler {
  stop(): Promise<void>;
}

export function startScheduler(services: Services, options: SchedulerOptions): Scheduler {
  const { log } = services;
  const concurrency = options.concurrency ?? CONCURRENCY;
  const hold = options.hold ?? HOLD;
  const slots = sendSlots(concurrency);
  // The record of an answered target waits for the burst's sends (a bounded while): its statement, with the
  // triggers behind it, takes the database from the marks and the sandbox's inserts the sends are waiting on
  // (or, with PGlite, this very thread). Its `publishedAt` is taken at the answer, so only the row waits, and
  // with it the webhook event the record writes: a record written at once for its event would slow the sends
  // of every user's targets in the burst, so the event waits the same bounded while.
  const recordWaitMs = options.recordWaitMs ?? RECORD_WAIT_MS;
  const sendsDone = () =>
    new Promise<void>((resolve) => {
      const bound = setTimeout(resolve, recordWaitMs);
      void slots.idle().then(() => {
        clearTimeout(bound);
        resolve();
      });
    });
  const pollMs = options.pollMs ?? 1000;
  const inflight = new Map<string, Promise<void>>();
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  /** When the timer fires (epoch ms). */
  let wakeAt = Infinity;
  /** The earliest due time announced while a tick ran, which its own reading may have missed. */
  let announced = Infinity;
  let running: Promise<void> | null = null;
  /** The last claim took as many as `hold` left room for, so more may be due now: a finished publish ticks again. */
  let backlog = false;
  /** How long before the next due time the scheduler claims (EARLY_MS, longer before a burst; `leadFor`). */
  let lead = EARLY_MS;
  const housekeeping = startHousekeeping(services, {
    sweepMs: options.sweepMs ?? 30_000,
    lockCheckMs: options.lockCheckMs ?? 5000,
    releaseAllLocksFirst: options.exclusiveDb ?? false,
  });

  const now = () => services.clock.now().getTime();
  const schedule = (ms: number) => {
    if (stopping) return;
    if (timer) clearTimeout(timer);
    const delay = Math.max(0, Math.min(ms, pollMs));
    wakeAt = now() + delay;
    timer = setTimeout(() => {
      wakeAt = Infinity;
      void tick();
    }, delay);
  };

  /** A delivery due at `due` was created or re-queued: wake then if that is sooner than planned. */
  const dueAt = (due: Date) => {
    const at = due.getTime();
    if (running) announced = Math.min(announced, at);
    else if (at - EARLY_MS < wakeAt) schedule(at - EARLY_MS - now());
  };
  const unwatch = options.publish && services.queue.kind === "poller" ? (services.queue as PollerQueue).watch?.(dueAt) : undefined;

  const tick = async () => {
    if (stopping || running) return;
    let next = Infinity;
    let claimed = 0;
    running = (async () => {
      try {
        if (options.housekeeping !== false) await housekeeping();
        if (options.publish) {
          claimed = await claimMore();
          // With every claim held the next tick comes from a finished publish; no need to ask when.
          if (inflight.size < hold) {
            const due = await nextDue(services.db, [...inflight.keys()], { withinMs: PREP_WINDOW_MS, countCap: PREP_CAP });
            next = due?.at.getTime() ?? Infinity;
            lead = leadFor(due?.count ?? 0);
          }
        }
      } catch (err) {
        log.error("scheduler tick failed", { error: String(err) });
      }
    })();
    await running;
    running = null;
    const wait = Math.min(next - lead, announced - EARLY_MS) - now();
    announced = Infinity;
    // With every claim held, a finished publish ticks again; a due delivery then waits for that. A delivery
    // that is due but was not claimable (another process holds it) is looked at again shortly, not at once.
    schedule(inflight.size >= hold ? pollMs : wait <= 0 && claimed === 0 ? BUSY_RETRY_MS : wait);
  };

  /**
   * Claims what is due within `lead`, a batch at a time, up to `hold`, and starts publishing each batch as it
   * comes; answers how many it started.
   */
  const claimMore = async () => {
    let started = 0;
    for (;;) {
      const free = hold - inflight.size;
      if (free <= 0 || stopping) return started;
      const limit = Math.min(free, CLAIM_BATCH);
      const claims = await claimDue(services.db, services.clock.now(), limit, LOCK_MS, { exclude: [...inflight.keys()], aheadMs: lead });
      backlog = claims.length === free;
      start(claims);
      started += claims.length;
      if (claims.length < limit) return started;
    }
  };

  const start = (claims: Claim[]) => {
    for (const claim of claims) {
      const id = claim.row.id;
      const work = publishClaimed(services, claim, { slots, recordAfter: sendsDone })
        .then(() => undefined)
        .catch((err) => log.error("publish failed", { deliveryId: id, error: String(err) }))
        .finally(() => {
          inflight.delete(id);
          // Room freed while due work may be waiting: look again soon rather than at the next poll. Otherwise
          // the timer already waits for the next due time (a retry of this one is announced by publishClaimed).
          if (backlog && !stopping && !running) schedule(10);
        });
      inflight.set(id, work);
    }
  };

  schedule(0);
  return {
    async stop() {
      stopping = true;
      unwatch?.();
      if (timer) clearTimeout(timer);
      const left = await waitForInFlight(running, inflight, options.stopTimeoutMs ?? 30_000);
      if (left) log.warn("stopped with publishes in flight; their claims expire and the sweep releases them", { count: left });
    },
  };
}

/** How long before a due time with `count` targets due in its second the scheduler claims them. */
function leadFor(count: number): number {
  return EARLY_MS + Math.min(count, PREP_CAP) * PREP_MS_PER_TARGET;
}

interface HousekeepingOptions {
  sweepMs: number;
  lockCheckMs: number;
  releaseAllLocksFirst: boolean;
}

/**
 * The periodic work of a tick: the whole sweep every `sweepMs` (expired claims, retention, QStash re-queue,
 * async photo jobs, expired OAuth states), and in between, every `lockCheckMs`, the release of expired claims
 * and the start of async photo jobs that are due (one indexed SELECT each).
 */
function startHousekeeping(services: Services, options: HousekeepingOptions): () => Promise<void> {
  let lastSweep = 0;
  let lastLockCheck = Date.now();
  let first = true;
  return async () => {
    const now = Date.now();
    if (now - lastSweep >= options.sweepMs) {
      lastSweep = lastLockCheck = now;
      await runSweep(services, { publishDue: false, releaseAllLocks: first && options.releaseAllLocksFirst });
      await resumePhotoJobs(services, { takeOverAll: first && options.releaseAllLocksFirst });
      await purgeExpiredStates(services);
      first = false;
    } else if (now - lastLockCheck >= options.lockCheckMs) {
      lastLockCheck = now;
      await releaseExpiredLocks(services);
      await startDueAsyncJobs(services);
    }
  };
}
