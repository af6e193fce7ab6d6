/**
 * The embedded delivery scheduler: the Node twin of QStash plus the Worker's cron.
 * About once a second it claims due deliveries from Postgres and publishes them, at most `concurrency` at
 * a time; every `sweepMs` it runs the sweep (expired claims, retention purge, QStash re-queue). It sleeps
 * with a timer between ticks (no busy loop) and ticks early when a publish finishes, so a burst drains fast.
 * `stop()` stops claiming and waits for in-flight publishes, so a clean shutdown never strands a claim.
 *
 * @example
 * const scheduler = startScheduler(services, { publish: true });
 * await scheduler.stop();
 */
import type { Services } from "../../src/services";
import { publishDelivery } from "../../src/social/delivery/publish";
import { releaseExpiredLocks, runSweep } from "../../src/social/delivery/sweep";
import { resumePhotoJobs } from "../../src/photo/async-jobs";
import { findDue } from "../../src/social/delivery/store";

export interface SchedulerOptions {
  /** Claim and publish due deliveries here (false when QStash delivers them). */
  publish: boolean;
  concurrency?: number;
  pollMs?: number;
  sweepMs?: number;
  /** Expired claims are released this often between sweeps (cheap: one UPDATE on few rows). */
  lockCheckMs?: number;
  /** Release every claim at start-up: the database is this process's alone (PGlite), so any claim is a dead one's. */
  exclusiveDb?: boolean;
  stopTimeoutMs?: number;
}

export interface Scheduler {
  stop(): Promise<void>;
}

export function startScheduler(services: Services, options: SchedulerOptions): Scheduler {
  const { log } = services;
  const concurrency = options.concurrency ?? 4;
  const pollMs = options.pollMs ?? 1000;
  const sweepMs = options.sweepMs ?? 30_000;
  const lockCheckMs = options.lockCheckMs ?? 5000;
  const inflight = new Map<string, Promise<void>>();
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let running: Promise<void> | null = null;
  let lastSweep = 0;
  let lastLockCheck = Date.now();
  let first = true;

  const schedule = (ms: number) => {
    if (stopping) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void tick(), ms);
  };

  const tick = async () => {
    if (stopping || running) return;
    running = (async () => {
      try {
        const now = Date.now();
        if (now - lastSweep >= sweepMs) {
          lastSweep = lastLockCheck = now;
          await runSweep(services, { publishDue: false, releaseAllLocks: first && options.exclusiveDb });
          await resumePhotoJobs(services);
          first = false;
        } else if (now - lastLockCheck >= lockCheckMs) {
          lastLockCheck = now;
          await releaseExpiredLocks(services);
        }
        if (options.publish) await claimMore();
      } catch (err) {
        log.error("scheduler tick failed", { error: String(err) });
      }
    })();
    await running;
    running = null;
    schedule(pollMs);
  };

  const claimMore = async () => {
    const free = concurrency - inflight.size;
    if (free <= 0 || stopping) return;
    const ids = await findDue(services.db, services.clock.now(), free, [...inflight.keys()]);
    for (const id of ids) {
      const work = publishDelivery(services, id)
        .then(() => undefined)
        .catch((err) => log.error("publish failed", { deliveryId: id, error: String(err) }))
        .finally(() => {
          inflight.delete(id);
          // A slot freed: look again soon rather than waiting a whole poll interval.
          if (!stopping && !running) schedule(10);
        });
      inflight.set(id, work);
    }
  };

  schedule(0);
  return {
    async stop() {
      stopping = true;
      if (timer) clearTimeout(timer);
      const deadline = new Promise<void>((r) => setTimeout(r, options.stopTimeoutMs ?? 30_000).unref());
      await Promise.race([Promise.allSettled([running, ...inflight.values()]), deadline]);
      if (inflight.size) log.warn("stopped with publishes in flight; their claims expire and the sweep releases them", { count: inflight.size });
    },
  };
}
