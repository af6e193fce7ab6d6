/**
 * The embedded webhook sender: Node's twin of QStash for webhook messages, beside the delivery scheduler.
 * It claims due deliveries (`claimDueWebhooks`: oldest first, at most `perEndpoint` in flight for any one
 * endpoint) and sends them with at most `concurrency` in flight in all, each with its own 15 s deadline, so a
 * slow or dead endpoint holds only its own slots: other endpoints' messages, and every post (published by
 * the scheduler with slots of its own), never wait for it. It wakes when told (`PollerQueue.kickWebhooks`: a
 * state change committed in this process or its delivery thread, a test, a replay, a retry's due time), at
 * the next due time it reads, and at least every `pollMs` (messages another process wrote). Every `lockCheckMs`
 * it releases claims whose sender died (at start, on a database of its own (PGlite), every claim), and every
 * minute it removes messages past RETENTION_DAYS with nothing left to send.
 * `stop()` waits for the sends in flight.
 *
 * @example
 * const sender = startWebhookSender(services, { exclusiveDb: true });
 * await sender.stop();
 */
import type { PollerQueue } from "../../src/adapters/queue/poller";
import type { Services } from "../../src/services";
import { claimDueWebhooks, nextWebhookDueAt, purgeOldWebhookMessages, releaseWebhookClaims, sendClaimed, type WebhookClaim } from "../../src/webhooks/send";
import { waitForInFlight } from "./in-flight";

/** Sends in flight at most for one endpoint, unless told otherwise. */
export const PER_ENDPOINT = 256;
/** Sends that end within this many ms free their slots to one claim. */
const COALESCE_MS = 20;
/** Old messages are purged this often. */
const PURGE_EVERY_MS = 60_000;

export interface WebhookSenderOptions {
  /** Sends in flight at most, across endpoints (default 512). */
  concurrency?: number;
  /** Sends in flight at most for one endpoint (default PER_ENDPOINT). */
  perEndpoint?: number;
  pollMs?: number;
  lockCheckMs?: number;
  /** The database is this process's alone (PGlite): any claim found at start is a dead process's. */
  exclusiveDb?: boolean;
  stopTimeoutMs?: number;
}

export interface WebhookSender {
  stop(): Promise<void>;
}

export function startWebhookSender(services: Services, options: WebhookSenderOptions = {}): WebhookSender {
  const { log } = services;
  const concurrency = options.concurrency ?? 512;
  const perEndpoint = options.perEndpoint ?? PER_ENDPOINT;
  const pollMs = options.pollMs ?? 1000;
  const lockCheckMs = options.lockCheckMs ?? 5000;
  /** In flight: delivery id -> its send. */
  const inflight = new Map<string, Promise<void>>();
  /** In flight per endpoint. */
  const perEndpointCount = new Map<string, number>();
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let wakeAt = Infinity;
  let running: Promise<void> | null = null;
  let again = false;
  let lastLockCheck = 0;
  let lastPurge = 0;
  let firstRelease = options.exclusiveDb ?? false;

  const schedule = (ms: number) => {
    if (stopping) return;
    const at = Date.now() + Math.max(0, Math.min(ms, pollMs));
    if (timer && at >= wakeAt) return;
    if (timer) clearTimeout(timer);
    wakeAt = at;
    timer = setTimeout(() => {
      timer = null;
      wakeAt = Infinity;
      void tick();
    }, at - Date.now());
  };

  const tick = async (): Promise<void> => {
    if (stopping) return;
    if (running) {
      again = true;
      return;
    }
    let next = Infinity;
    running = (async () => {
      try {
        const now = services.clock.now();
        if (firstRelease || now.getTime() - lastLockCheck >= lockCheckMs) {
          lastLockCheck = now.getTime();
          await releaseWebhookClaims(services.db, now, firstRelease);
          firstRelease = false;
        }
        if (now.getTime() - lastPurge >= PURGE_EVERY_MS) {
          lastPurge = now.getTime();
          await purgeOldWebhookMessages(services.db, now, services.config.retentionDays);
        }
        const free = concurrency - inflight.size;
        if (free > 0) {
          const room = new Map([...perEndpointCount].map(([id, n]) => [id, perEndpoint - n]));
          const claims = await claimDueWebhooks(services.db, now, free, { perEndpoint, room });
          for (const claim of claims) start(claim);
          if (claims.length === free) next = 0;
        }
        // A send that ends wakes the sender (`free` in `start`): for a full sender, and for whatever was due by
        // `now` and not claimed (its endpoint's slots are taken; or it is disabled, and waits to be enabled).
        // Otherwise the next look is at the next due time after `now`, at least COALESCE_MS on.
        if (free > 0 && next !== 0) {
          next = (await nextWebhookDueAt(services.db, now))?.getTime() ?? Infinity;
          if (next <= Date.now()) next = Date.now() + COALESCE_MS;
        }
      } catch (err) {
        log.error("webhook sender tick failed", { error: String(err) });
      }
    })();
    await running;
    running = null;
    if (again) {
      again = false;
      schedule(0);
    } else schedule(next === Infinity ? pollMs : next - Date.now());
  };

  const start = (claimed: WebhookClaim) => {
    const claim = claimed.delivery;
    perEndpointCount.set(claim.endpointId, (perEndpointCount.get(claim.endpointId) ?? 0) + 1);
    // The endpoint's slot is its receiver's: it is free once the receiver has answered, while the outcome is
    // still being recorded (the delivery stays claimed until then, so nobody else sends it).
    let held = true;
    const free = () => {
      if (!held) return;
      held = false;
      const left = (perEndpointCount.get(claim.endpointId) ?? 1) - 1;
      if (left) perEndpointCount.set(claim.endpointId, left);
      else perEndpointCount.delete(claim.endpointId);
      // Room freed: whatever waited for it may go now (sends ending together make one claim).
      if (!stopping) schedule(COALESCE_MS);
    };
    const work = sendClaimed(services, claimed, { onSent: free })
      .then(() => undefined)
      .catch((err) => log.error("webhook send failed", { deliveryId: claim.id, error: String(err) }))
      .finally(() => {
        inflight.delete(claim.id);
        free();
      });
    inflight.set(claim.id, work);
  };

  const unwatch =
    services.queue.kind === "poller" ? (services.queue as PollerQueue).watchWebhooks((due) => schedule(due ? due.getTime() - Date.now() : 0)) : undefined;
  schedule(0);
  return {
    async stop() {
      stopping = true;
      unwatch?.();
      if (timer) clearTimeout(timer);
      const left = await waitForInFlight(running, inflight, options.stopTimeoutMs ?? 20_000);
      if (left) log.warn("stopped with webhook sends in flight; their claims expire and are sent again", { count: left });
    },
  };
}
