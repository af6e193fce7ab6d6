/**
 * The sweep: the safety net under the queue. Run by the Worker's cron (every minute) and by the Node
 * scheduler (every ~30 s). Each step is one or two set-based statements, safe to run concurrently with
 * another sweep and with publishers:
 *  1. release `publishing` claims whose lock expired (a crashed publisher). Targets whose attempt may have
 *     reached the platform were marked ambiguous before the call, so they reconcile before any resend;
 *  2. re-queue due targets that have no live job (QStash only): never queued, or due and untouched for a while;
 *  3. purge posts past the retention period (deliveries cascade; idempotency keys stay, so a replay is 410);
 *  4. with no queue (the poller kind, e.g. a Worker without QStash), publish a batch of due targets itself;
 *  5. with the platform sandbox on, purge its expired codes and user tokens, old items and spent faults.
 *
 * @example
 * const result = await runSweep(services); // { releasedLocks: 0, requeued: 2, purgedPosts: 0, published: 0, purgedSandbox: 0 }
 */
import { and, eq, inArray, isNotNull, isNull, lt, lte, or, sql } from "drizzle-orm";
import { deliveries, posts } from "../../../db/schema";
import type { Db } from "../../../db/client";
import type { Services } from "../../services";
import { LOCK_MS, MAX_ATTEMPTS } from "./policy";
import { publishClaimed } from "./publish";
import { claimDue, setJobId } from "./store";
import { purgeExpired as purgeSandbox } from "../sandbox/store";
import { QSTASH_HORIZON_MS } from "../../adapters/queue/qstash";

export interface SweepResult {
  releasedLocks: number;
  requeued: number;
  purgedPosts: number;
  published: number;
  /** Sandbox rows removed (only with PLATFORM_SANDBOX=on). */
  purgedSandbox: number;
}

export interface SweepOptions {
  /** Publish due targets in the sweep itself; default: only when the queue is the poller. */
  publishDue?: boolean;
  /** Release every `publishing` claim, expired or not: only for a database this process owns alone (PGlite) at start-up. */
  releaseAllLocks?: boolean;
}

/** A due target untouched this long has lost its job (QStash retries exhausted, message lost). */
export const REQUEUE_GRACE_MS = 2 * 60_000;
const BATCH = 100;
const PUBLISH_BATCH = 25;
const PUBLISH_CONCURRENCY = 4;
const DAY_MS = 24 * 60 * 60_000;

export async function runSweep(services: Services, options: SweepOptions = {}): Promise<SweepResult> {
  const releasedLocks = await releaseExpiredLocks(services, options.releaseAllLocks);
  const requeued = services.queue.kind === "qstash" ? await requeueOrphans(services) : 0;
  const purgedPosts = await purgeExpiredPosts(services.db, services.clock.now(), services.config.retentionDays);
  const published = (options.publishDue ?? services.queue.kind === "poller") ? await publishDueBatch(services) : 0;
  const purgedSandbox = services.config.graph.sandbox ? await purgeSandbox(services.db, services.clock.now(), services.config.retentionDays) : 0;
  const result = { releasedLocks, requeued, purgedPosts, published, purgedSandbox };
  if (releasedLocks || requeued || purgedPosts || published || purgedSandbox) services.log.info("sweep", { ...result });
  return result;
}

export async function releaseExpiredLocks(services: Services, all = false): Promise<number> {
  const now = services.clock.now();
  const giveUp = sql`${deliveries.attempts} >= ${MAX_ATTEMPTS}`;
  const rows = await services.db
    .update(deliveries)
    .set({
      status: sql`case when ${deliveries.ambiguous} or ${giveUp} then 'failed' else 'pending' end`,
      lockedUntil: null,
      nextAttemptAt: sql`case when ${giveUp} then null else ${now.toISOString()}::timestamptz end`,
      errorCode: sql`case when ${deliveries.ambiguous} then 'OUTCOME_UNKNOWN' else 'PUBLISHER_INTERRUPTED' end`,
      errorMessage: sql`case when ${deliveries.ambiguous}
        then 'The publisher stopped while the post was being sent; the platform is checked before any retry.'
        else 'The publisher stopped before sending; the target is due again.' end`,
      updatedAt: now,
    })
    .where(and(eq(deliveries.status, "publishing"), all ? undefined : or(isNull(deliveries.lockedUntil), lt(deliveries.lockedUntil, now))))
    .returning({ id: deliveries.id });
  if (rows.length) services.log.warn("released publishing claims of a stopped publisher", { count: rows.length });
  return rows.length;
}

async function requeueOrphans(services: Services): Promise<number> {
  const { db, clock, queue, log } = services;
  const now = clock.now();
  const stale = new Date(now.getTime() - REQUEUE_GRACE_MS);
  const rows = await db
    .select({ id: deliveries.id, nextAttemptAt: deliveries.nextAttemptAt })
    .from(deliveries)
    .where(
      and(
        inArray(deliveries.status, ["pending", "failed"]),
        isNotNull(deliveries.nextAttemptAt),
        lte(deliveries.updatedAt, stale),
        or(isNull(deliveries.jobId), lte(deliveries.nextAttemptAt, stale)),
        // QStash holds messages up to 7 days ahead (free plan); later targets are queued once they are closer.
        lte(deliveries.nextAttemptAt, new Date(now.getTime() + QSTASH_HORIZON_MS)),
      ),
    )
    .orderBy(deliveries.nextAttemptAt)
    .limit(BATCH);
  let requeued = 0;
  for (const row of rows) {
    const due = row.nextAttemptAt!;
    try {
      // The same due time gives the same deduplication id, so two sweeps racing here make one message.
      const jobId = await queue.enqueue(row.id, due.getTime() > now.getTime() ? due : now);
      if (jobId) await setJobId(db, row.id, jobId, due);
      await db
        .update(deliveries)
        .set({ updatedAt: now })
        .where(and(eq(deliveries.id, row.id), eq(deliveries.nextAttemptAt, due)));
      requeued++;
    } catch (err) {
      log.warn("re-queue failed; next sweep retries", { deliveryId: row.id, error: String(err) });
    }
  }
  return requeued;
}

/** Removes a batch of posts older than the retention period with nothing outstanding (found by `posts_created_idx`). */
export async function purgeExpiredPosts(db: Db, now: Date, retentionDays: number): Promise<number> {
  const cutoff = new Date(now.getTime() - retentionDays * DAY_MS).toISOString();
  const outstanding = sql`exists (select 1 from ${deliveries} d where d.post_id = ${posts.id}
    and (d.status = 'publishing' or (d.status in ('pending', 'failed') and d.next_attempt_at is not null)))`;
  const victims = db
    .select({ id: posts.id })
    .from(posts)
    .where(
      and(
        lt(posts.createdAt, sql`${cutoff}::timestamptz`),
        sql`coalesce(${posts.scheduledFor}, ${posts.createdAt}) < ${cutoff}::timestamptz`,
        sql`not ${outstanding}`,
      ),
    )
    .limit(BATCH * 5);
  const rows = await db.delete(posts).where(inArray(posts.id, victims)).returning({ id: posts.id });
  return rows.length;
}

/** Up to PUBLISH_BATCH due targets, PUBLISH_CONCURRENCY at a time; each worker claims its next one when it is free. */
async function publishDueBatch(services: Services): Promise<number> {
  let published = 0;
  let started = 0;
  const worker = async () => {
    while (started < PUBLISH_BATCH) {
      started++;
      const [claim] = await claimDue(services.db, services.clock.now(), 1, LOCK_MS);
      if (!claim) return;
      const outcome = await publishClaimed(services, claim).catch((err) => {
        services.log.error("publish in sweep failed", { deliveryId: claim.row.id, error: String(err) });
        return null;
      });
      if (outcome?.status === "published") published++;
    }
  };
  await Promise.all(Array.from({ length: PUBLISH_CONCURRENCY }, worker));
  return published;
}
