/**
 * `publishDelivery(services, id)`: claim one target, publish it through its platform adapter, record the
 * outcome (`publishClaimed` does the last two for targets claimed in a batch). Whoever loses the claim does
 * nothing. An attempt that may have published without an answer is marked ambiguous (written ahead, before
 * the call) and the next attempt reconciles before sending again.
 *
 * @example
 * const outcome = await publishDelivery(services, deliveryId);
 * // { status: "published", providerPostId: "123_456", reconciled: false }
 */
import type { Services } from "../../services";
import { isUuid } from "../../lib/encoding";
import { composeCaption } from "../platforms/caption";
import { PlatformError, type ErrorKind } from "../platforms/errors";
import { adapterFor, graphBaseUrl, type PublishContext } from "../platforms";
import { ERROR_CODE, LOCK_MS, MAX_ATTEMPTS, isRetryable, retryDelayMs } from "./policy";
import type { SendSlots } from "./slots";
import * as store from "./store";

export type PublishOutcome =
  | { status: "skipped"; reason: "not_claimable" }
  | { status: "published"; providerPostId: string | null; reconciled: boolean }
  | { status: "retry"; errorCode: string; nextAttemptAt: Date }
  | { status: "failed"; errorCode: string }
  | { status: "lost_claim" };

export interface PublishOptions {
  /** Per Graph call. */
  timeoutMs?: number;
  poll?: { intervalMs: number; maxWaitMs: number };
  lockMs?: number;
  random?: () => number;
  /**
   * Bounds the platform calls in flight across publishes (the Node scheduler's): taken once the target is
   * due and its context is built, freed when the platform has answered.
   */
  slots?: SendSlots;
  /**
   * The record of an answered target waits for this, so that the remaining sends of a burst go first: the
   * scheduler's slots going idle, within its bound (functions/node/scheduler.ts says when it is given).
   */
  recordAfter?: () => Promise<void>;
}

class LostClaim extends Error {}
/** A failure decided before any platform call (account gone or already marked, token unreadable, no adapter). */
class Precondition extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Whether this failure is news about the account (else it was marked already, with the original reason). */
    readonly marksAccount = false,
  ) {
    super(message);
  }
}

export async function publishDelivery(services: Services, deliveryId: string, options: PublishOptions = {}): Promise<PublishOutcome> {
  if (!isUuid(deliveryId)) return { status: "skipped", reason: "not_claimable" };
  const claim = await store.claimDelivery(services.db, deliveryId, services.clock.now(), options.lockMs ?? LOCK_MS);
  if (!claim) return { status: "skipped", reason: "not_claimable" };
  return publishClaimed(services, claim, options);
}

/**
 * Publishes a target this process has just claimed (`claimDelivery`, or a batch from `claimDue`, which read the
 * post and account already). `options.lockMs` must be the claim's.
 */
export async function publishClaimed(services: Services, claim: store.Claim, options: PublishOptions = {}): Promise<PublishOutcome> {
  const { db, clock, log } = services;
  const lockMs = options.lockMs ?? LOCK_MS;
  const row = claim.row;
  const deliveryId = row.id;

  let lost = false;
  const must = (ok: boolean) => {
    if (!ok) {
      lost = true;
      throw new LostClaim();
    }
  };
  // Renew the lock while we work, so only a dead publisher's claim ever expires.
  const heartbeat = setInterval(
    () => {
      store.renewLock(db, claim, clock.now(), lockMs).then(
        (ok) => (lost ||= !ok),
        (err) => log.warn("delivery lock renewal failed", { deliveryId, error: String(err) }),
      );
    },
    Math.max(1000, Math.floor(lockMs / 3)),
  );
  (heartbeat as unknown as { unref?: () => void }).unref?.();

  // True while an earlier or the current attempt may have published without us knowing.
  let uncertain = row.ambiguous;
  let sent = false;
  let reconciled = false;
  let releaseSlot = () => {};
  try {
    const ctx = await buildContext(services, claim, options, {
      beforePublish: async () => {
        must(await store.markMaybeSent(db, claim, clock.now()));
        uncertain = true;
        sent = true;
      },
      saveContainer: async (id) => must(await store.saveContainer(db, claim, id, clock.now())),
      isLost: () => lost,
    });
    // A target claimed a moment ahead of its time (the scheduler wakes early) goes out no sooner than due.
    // (A loop: a timer may fire a fraction of a millisecond before the clock reads its time.)
    for (let early: number; (early = (row.nextAttemptAt?.getTime() ?? 0) - clock.now().getTime()) > 0; ) await new Promise((r) => setTimeout(r, early));
    if (options.slots) releaseSlot = await options.slots.acquire();
    const adapter = adapterFor(row.platform)!;
    let result = null;
    if (row.ambiguous) {
      result = await adapter.reconcile(ctx);
      reconciled = result !== null;
      if (!result) uncertain = false;
    }
    if (lost) throw new LostClaim();
    result ??= await adapter.publish(ctx);
    releaseSlot();
    if (!(await store.recordPublished(db, claim, result.providerPostId, clock.now(), options.recordAfter))) {
      log.error("published but the claim was lost before recording; the next attempt reconciles", { deliveryId, providerPostId: result.providerPostId });
      return { status: "lost_claim" };
    }
    log.info("delivery published", { deliveryId, platform: row.platform, attempt: claim.attempt, reconciled, providerPostId: result.providerPostId });
    return { status: "published", providerPostId: result.providerPostId, reconciled };
  } catch (err) {
    releaseSlot();
    if (err instanceof LostClaim) {
      log.warn("delivery claim lost; another attempt owns it now", { deliveryId, attempt: claim.attempt });
      return { status: "lost_claim" };
    }
    const kind: ErrorKind = err instanceof PlatformError || err instanceof Precondition ? err.kind : "transient";
    // A definite answer to the publishing call settles the doubt; a failed read before it does not.
    if (err instanceof PlatformError && kind !== "ambiguous" && sent) uncertain = false;
    return await recordError(services, claim, kind, err, uncertain, options);
  } finally {
    clearInterval(heartbeat);
    // The outcome's webhook messages (written with it, by the outbox triggers) may be sent now.
    services.kickWebhooks?.();
  }
}

async function recordError(services: Services, claim: store.Claim, kind: ErrorKind, err: unknown, uncertain: boolean, options: PublishOptions) {
  const { db, clock, log, queue } = services;
  const now = clock.now();
  const message = err instanceof Error ? err.message : String(err);
  const retry = isRetryable(kind) && claim.attempt < MAX_ATTEMPTS;
  const hint = err instanceof PlatformError ? err.details.retryAfterMs : undefined;
  const nextAttemptAt = retry ? new Date(now.getTime() + retryDelayMs(kind, claim.attempt, options.random, hint)) : null;
  const errorCode = uncertain && kind !== "auth" && kind !== "invalid" ? ERROR_CODE.ambiguous : ERROR_CODE[kind];
  const suffix = !retry && isRetryable(kind) ? ` Gave up after ${claim.attempt} attempts${uncertain ? "; the post may have been published" : ""}.` : "";
  const ok = await store.recordFailure(db, claim, { errorCode, errorMessage: message + suffix, nextAttemptAt, ambiguous: uncertain }, now);
  if (!ok) return { status: "lost_claim" } as const;
  const accountNews = err instanceof PlatformError || (err instanceof Precondition && err.marksAccount);
  if (kind === "auth" && accountNews) await store.markAccountNeedsReconnect(db, claim.row.userId, claim.row.accountId, message, now);
  if (!(err instanceof PlatformError) && !(err instanceof Precondition))
    log.error("delivery attempt crashed", { deliveryId: claim.row.id, error: String(err) });
  log.info("delivery attempt failed", { deliveryId: claim.row.id, attempt: claim.attempt, kind, errorCode, retryAt: nextAttemptAt?.toISOString() ?? null });
  // QStash gets a message for the retry; the poller queue tells this process's scheduler when it is due.
  if (nextAttemptAt) {
    try {
      const jobId = await queue.enqueue(claim.row.id, nextAttemptAt);
      if (jobId) await store.setJobId(db, claim.row.id, jobId, nextAttemptAt);
    } catch (e) {
      // The sweep re-queues due targets without a live job.
      log.warn("could not queue the retry; the sweep will", { deliveryId: claim.row.id, error: String(e) });
    }
  }
  return nextAttemptAt ? ({ status: "retry", errorCode, nextAttemptAt } as const) : ({ status: "failed", errorCode } as const);
}

interface Hooks {
  beforePublish(): Promise<void>;
  saveContainer(id: string | null): Promise<void>;
  isLost(): boolean;
}

async function buildContext(services: Services, claim: store.Claim, options: PublishOptions, hooks: Hooks): Promise<PublishContext> {
  const { db, clock, config, tokens } = services;
  const row = claim.row;
  if (!adapterFor(row.platform)) throw new Precondition("invalid", `No adapter for platform "${row.platform}".`);
  const { post, account } = claim.loaded ?? (await store.loadPostAndAccount(db, row));
  if (!post) throw new Precondition("invalid", "The post no longer exists.");
  if (!account) throw new Precondition("auth", "The account is no longer connected; reconnect it in the social hub.");
  if (account.tokenStatus !== "active") throw new Precondition("auth", `The account needs to be reconnected (token ${account.tokenStatus}).`);
  let token: string;
  try {
    token = await tokens.decrypt(account.tokenCiphertext);
  } catch {
    throw new Precondition("auth", "The stored access token cannot be read; reconnect the account.", true);
  }
  let known: Set<string> | null = null;
  return {
    graph: {
      baseUrl: graphBaseUrl(config),
      version: config.graph.version,
      fetch: services.platformFetch,
      deadline: services.platformDeadline,
      token,
      timeoutMs: options.timeoutMs ?? 15_000,
    },
    platformAccountId: account.platformAccountId,
    text: composeCaption(post.caption, post.hashtags),
    imageUrls: post.images.map((i) => i.url),
    since: row.createdAt,
    containerId: row.providerContainerId,
    saveContainer: hooks.saveContainer,
    beforePublish: async () => {
      if (hooks.isLost()) throw new LostClaim();
      await hooks.beforePublish();
    },
    knownPostIds: async () => (known ??= await store.knownProviderPostIds(db, row)),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    now: () => clock.now(),
    poll: options.poll ?? { intervalMs: 1000, maxWaitMs: 60_000 },
  };
}
