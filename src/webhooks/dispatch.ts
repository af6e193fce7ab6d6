/**
 * Getting webhook messages onto the queue. With the poller (Node's embedded scheduler) the process's sender
 * finds due messages itself and a kick only wakes it. With QStash each due delivery becomes one message to
 * `/api/internal/webhooks/send` (deduplicated per delivery and due time); `dispatchWebhooks` queues those not
 * queued yet, after a state change commits, and the sweep queues whatever that missed.
 *
 * @example
 * services.kickWebhooks = webhookKicker(services);
 */
import { and, eq, isNotNull, isNull, lte, or } from "drizzle-orm";
import { webhookDeliveries } from "../../db/schema";
import type { Services } from "../services";
import { claimDueWebhooks, purgeOldWebhookMessages, releaseWebhookClaims, sendClaimed } from "./send";
import { QSTASH_HORIZON_MS } from "../adapters/queue/qstash";

const BATCH = 100;
/** A due message untouched this long has lost its queue message. */
const REQUEUE_GRACE_MS = 2 * 60_000;

/** The `kickWebhooks` of a service set: the poller's wake-up, or queueing the new messages on QStash. */
export function webhookKicker(services: Services): () => void {
  const queue = services.queue as Services["queue"] & { kickWebhooks?: () => void };
  if (queue.kind === "poller") return () => queue.kickWebhooks?.();
  return () => services.defer(dispatchWebhooks(services));
}

/** Queues every pending delivery that has no queue message yet (QStash). */
export async function dispatchWebhooks(services: Services, options: { orphansToo?: boolean } = {}): Promise<number> {
  const { db, clock, queue, log } = services;
  if (queue.kind !== "qstash") return 0;
  const now = clock.now();
  const stale = new Date(now.getTime() - REQUEUE_GRACE_MS);
  const rows = await db
    .select({ id: webhookDeliveries.id, nextAttemptAt: webhookDeliveries.nextAttemptAt })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.status, "pending"),
        isNotNull(webhookDeliveries.nextAttemptAt),
        lte(webhookDeliveries.nextAttemptAt, new Date(now.getTime() + QSTASH_HORIZON_MS)),
        options.orphansToo
          ? or(isNull(webhookDeliveries.jobId), and(lte(webhookDeliveries.nextAttemptAt, stale), lte(webhookDeliveries.updatedAt, stale)))
          : isNull(webhookDeliveries.jobId),
      ),
    )
    .orderBy(webhookDeliveries.nextAttemptAt)
    .limit(BATCH);
  let queued = 0;
  await Promise.all(
    rows.map(async (row) => {
      const due = row.nextAttemptAt!;
      try {
        const jobId = await queue.enqueueWebhook(row.id, due);
        await db
          .update(webhookDeliveries)
          .set({ jobId, updatedAt: now })
          .where(and(eq(webhookDeliveries.id, row.id), eq(webhookDeliveries.nextAttemptAt, due)));
        queued++;
      } catch (err) {
        log.warn("could not queue a webhook message; the sweep retries", { deliveryId: row.id, error: String(err) });
      }
    }),
  );
  return queued;
}

/**
 * The webhooks' part of the sweep (the Worker's cron; Node's sender does its own): claims of a stopped
 * sender are released, messages QStash lost are queued again, without QStash due messages are sent here, and
 * messages past RETENTION_DAYS with nothing left to send are removed.
 */
export async function sweepWebhooks(services: Services): Promise<{ released: number; queued: number; sent: number; purged: number }> {
  const released = await releaseWebhookClaims(services.db, services.clock.now());
  const purged = await purgeOldWebhookMessages(services.db, services.clock.now(), services.config.retentionDays);
  const queued = await dispatchWebhooks(services, { orphansToo: true });
  let sent = 0;
  if (services.queue.kind === "poller") {
    const claims = await claimDueWebhooks(services.db, services.clock.now(), 25, { perEndpoint: 5 });
    await Promise.all(claims.map(async (claim) => ((await sendClaimed(services, claim)).status === "delivered" ? sent++ : 0)));
  }
  return { released, queued, sent, purged };
}
