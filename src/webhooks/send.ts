/**
 * Sending one webhook message to one endpoint: claim the delivery (a fenced claim, as for post deliveries:
 * `status = 'sending'` and `attempts + 1`, every later write requires both), make the message's body once
 * (kept on the message, so every retry and replay sends the same bytes), sign it with the endpoint's
 * secret(s), POST it within 15 s without following redirects, and record the outcome:
 *
 * - 2xx: delivered; the endpoint is no longer failing.
 * - 410 Gone: the endpoint is disabled at once (`gone`) and the message parked with its others; nothing more
 *   is sent to it until it is enabled again.
 * - anything else, or no answer: the next attempt of the round after the schedule's delay (at once, 5 s,
 *   5 min, 30 min, 2 h, 5 h, 10 h, 10 h by default) with up to 20 % jitter, or later when the receiver's
 *   Retry-After asks for it (capped at 24 h); failed once the schedule is spent. An endpoint whose attempts
 *   have all failed for 5 days is disabled (`failing`).
 *
 * A disabled endpoint's pending messages are parked (no due time) and become due when it is enabled again.
 *
 * @example
 * const [claim] = await claimDueWebhooks(services.db, new Date(), 1);
 * await sendClaimed(services, claim); // { status: "delivered", httpStatus: 200 }
 */
import { and, eq, gt, isNull, lt, or, sql, type SQL } from "drizzle-orm";
import { webhookDeliveries, webhookEndpoints, webhookMessages, type WebhookAttempt } from "../../db/schema";
import { executeRows, type Db } from "../../db/client";
import { groupCommit } from "../lib/group-commit";
import { isUuid, uuidArray } from "../lib/encoding";
import type { Services } from "../services";
import { buildPayloads } from "./payloads";
import { postEventBodySql } from "../social/post-record";
import { signedHeaders, webhookIdOf } from "./signing";

export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;
type MessageRow = typeof webhookMessages.$inferSelect;
type EndpointRow = typeof webhookEndpoints.$inferSelect;

/** A claimed delivery with its endpoint and message, read by the statement that claims it. */
export interface WebhookClaim {
  delivery: WebhookDeliveryRow;
  endpoint: EndpointRow;
  message: MessageRow;
}

/** A receiver has this long to answer. */
export const SEND_TIMEOUT_MS = 15_000;
/** A claim's lock: the timeout and a margin. A sender that dies leaves it to expire, then it is due again. */
export const SEND_LOCK_MS = SEND_TIMEOUT_MS + 5_000;
/** An endpoint failing every attempt for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 60 * 60_000;
/** A failure this long after the endpoint's previous one begins a new run (longer than any wait between attempts: 12 h with jitter, a Retry-After's 24 h). */
const FAILURE_GAP_MS = 2 * 24 * 60 * 60_000;
/** The longest wait a Retry-After may ask for. */
const RETRY_AFTER_CAP_MS = 24 * 60 * 60_000;
/** The attempts a delivery's log keeps (the newest). */
const LOG_KEEP = 50;
/** How much of the due queue one claim looks at, per delivery it may claim (so other endpoints' turn comes). */
const CLAIM_SCAN_PER_SLOT = 4;

export type SendOutcome =
  | { status: "delivered"; httpStatus: number }
  | { status: "retry"; nextAttemptAt: Date }
  | { status: "failed"; reason: string }
  | { status: "parked"; reason: "gone" | "failing" }
  | { status: "lost_claim" };

/**
 * Claims up to `limit` due deliveries of enabled endpoints, oldest first, at most `perEndpoint` of any one
 * endpoint, or what `room` leaves it (the sender's free slots of endpoints with sends in flight; none for 0),
 * so one slow endpoint never holds up the others.
 */
export async function claimDueWebhooks(
  db: Db,
  now: Date,
  limit: number,
  options: { perEndpoint?: number; room?: ReadonlyMap<string, number> } = {},
): Promise<WebhookClaim[]> {
  const at = sql`${now.toISOString()}::timestamptz`;
  const room = [...(options.room ?? [])];
  const busy = room.filter(([, n]) => n <= 0).map(([id]) => id);
  const partly = room.filter(([, n]) => n > 0);
  const cap = partly.length
    ? sql`coalesce((select r.n from unnest(${uuidArray(partly.map(([id]) => id))}::uuid[], ${`{${partly.map(([, n]) => n).join(",")}}`}::int[]) r(id, n) where r.id = x.endpoint_id), ${options.perEndpoint ?? limit})`
    : sql`${options.perEndpoint ?? limit}`;
  const due = sql`select x.id, x.message_id from (
      select c.id, c.message_id, c.endpoint_id, c.next_attempt_at, row_number() over (partition by c.endpoint_id order by c.next_attempt_at, c.id) as rn
        from (select w.id, w.message_id, w.endpoint_id, w.next_attempt_at from ${webhookDeliveries} w
               where w.status = 'pending' and w.next_attempt_at <= ${at} and not (w.endpoint_id = any(${uuidArray(busy)}::uuid[]))
               order by w.next_attempt_at limit ${Math.min(2000, limit * CLAIM_SCAN_PER_SLOT)}) c
        join ${webhookEndpoints} e on e.id = c.endpoint_id and e.enabled
    ) x where x.rn <= ${cap} order by x.next_attempt_at limit ${limit}`;
  return claimWhere(db, now, due);
}

/** Claims one delivery by id (a queue message), when it is due. */
export async function claimWebhook(db: Db, id: string, now: Date): Promise<WebhookClaim | null> {
  if (!isUuid(id)) return null;
  const [claim] = await claimWhere(db, now, sql`select w.id, w.message_id from ${webhookDeliveries} w where w.id = ${id}::uuid`);
  return claim ?? null;
}

/**
 * Claims the due pending deliveries among the rows `picked` selects (each one's `id` and `message_id`) whose
 * endpoint is enabled, returning each with its endpoint and message. The same statement makes and keeps the
 * bodies of the post events among them that have none yet (PostgreSQL writes the post's record as JSON text: no
 * round trip and no JSON work in the sender); a message another claim is making its body right now is skipped
 * here, and the sender makes it as it does every other event's (`payload` below). Both updates find their rows
 * by primary key from an array read once from `picked`.
 */
async function claimWhere(db: Db, now: Date, picked: SQL): Promise<WebhookClaim[]> {
  const at = sql`${now.toISOString()}::timestamptz`;
  const m = sql.raw("m");
  const pickedRows = db.$with("picked", { id: sql<string>`id`, messageId: sql<string>`message_id` }).as(sql`${picked}`);
  const kept = db.$with("kept", { id: sql<string>`id`, payload: sql<string | null>`payload` }).as(
    sql`update ${webhookMessages} ${m} set payload = ${postEventBodySql(m, at)}
         where ${m}.id in (select k.id from ${webhookMessages} k
                            where k.id = any(array(select message_id from picked))
                              and k.payload is null and k.type like 'post.%'
                              for update skip locked)
        returning ${m}.id, ${m}.payload`,
  );
  // The bodies made, looked up by message id in one jsonb object built once (an uncorrelated subquery): CTEs
  // carry no statistics, and `kept` joined to the claimed rows is planned as a nested loop reading it per row.
  const bodies = sql`(select coalesce(jsonb_object_agg(id, payload), '{}') from kept)`;
  const rows = await db
    .with(pickedRows, kept)
    .update(webhookDeliveries)
    .set({
      status: "sending",
      attempts: sql`${webhookDeliveries.attempts} + 1`,
      roundAttempts: sql`${webhookDeliveries.roundAttempts} + 1`,
      lockedUntil: new Date(now.getTime() + SEND_LOCK_MS),
      updatedAt: now,
    })
    .from(sql`${webhookEndpoints}, ${webhookMessages}`)
    .where(
      and(
        // array(...) reads `picked` once; an IN is planned as a nested loop over it for every row.
        sql`${webhookDeliveries.id} = any(array(select id from picked))`,
        sql`${webhookDeliveries.nextAttemptAt} <= ${at}`,
        eq(webhookDeliveries.status, "pending"),
        eq(webhookEndpoints.id, webhookDeliveries.endpointId),
        eq(webhookEndpoints.enabled, true),
        eq(webhookMessages.id, webhookDeliveries.messageId),
      ),
    )
    .returning({
      delivery: webhookDeliveries,
      endpoint: webhookEndpoints,
      message: webhookMessages,
      body: sql<string | null>`${bodies} ->> ${webhookMessages.id}::text`,
    });
  return (rows as unknown as Array<WebhookClaim & { body: string | null }>).map(({ body, ...claim }) =>
    body === null ? claim : { ...claim, message: { ...claim.message, payload: body } },
  );
}

/** Claims and sends one delivery (the QStash callback's work); null when it was not claimable. */
export async function sendWebhookDelivery(services: Services, id: string): Promise<SendOutcome | null> {
  const claim = await claimWebhook(services.db, id, services.clock.now());
  return claim ? sendClaimed(services, claim) : null;
}

export interface SendOptions {
  random?: () => number;
  /** Called once the receiver has answered (or failed to), before the outcome is recorded. */
  onSent?: () => void;
}

export async function sendClaimed(services: Services, claimed: WebhookClaim, options: SendOptions = {}): Promise<SendOutcome> {
  const { db, clock, log } = services;
  const { delivery: claim, endpoint } = claimed;

  const now = clock.now();
  let prepared: { body: string; headers: Record<string, string> } | null;
  try {
    prepared = await prepare(services, claimed, now);
  } catch (err) {
    // Our side failed before sending (the database, the cipher): the attempt is logged and counts on the
    // schedule, so a message that can never be made ends as failed; the endpoint is not to blame.
    options.onSent?.();
    log.error("webhook message could not be prepared", { deliveryId: claim.id, error: String(err) });
    const attempt: WebhookAttempt = { at: now.toISOString(), status: null, error: "the message could not be prepared on our side", durationMs: 0 };
    return retryOrFail(services, claim, attempt, clock.now(), null, options);
  }
  if (!prepared) {
    options.onSent?.();
    const gone: WebhookAttempt = { at: now.toISOString(), status: null, error: "the resource no longer exists", durationMs: 0 };
    if (!(await record(services, claim, gone, "failed"))) return { status: "lost_claim" };
    return { status: "failed", reason: "the resource no longer exists" };
  }
  const { body, headers } = prepared;
  const started = Date.now();
  let httpStatus: number | null = null;
  let retryAfter: string | null = null;
  let error: string | null = null;
  try {
    const answer = await services.fetcher.postWebhook({ url: endpoint.url, body, headers, timeoutMs: SEND_TIMEOUT_MS });
    httpStatus = answer.status;
    retryAfter = answer.retryAfter;
  } catch (err) {
    error = (err instanceof Error ? err.message : String(err)).slice(0, 300);
  }
  options.onSent?.();
  const attempt: WebhookAttempt = { at: now.toISOString(), status: httpStatus, error, durationMs: Date.now() - started };
  const done = clock.now();

  if (httpStatus !== null && httpStatus >= 200 && httpStatus < 300) {
    if (!(await record(services, claim, attempt, "delivered"))) return { status: "lost_claim" };
    if (endpoint.failingSince) {
      await db.update(webhookEndpoints).set({ failingSince: null, lastFailureAt: null }).where(eq(webhookEndpoints.id, endpoint.id));
    }
    return { status: "delivered", httpStatus };
  }

  const disableAs = httpStatus === 410 ? "gone" : done.getTime() - (await failingRun(db, endpoint.id, done)).getTime() >= DISABLE_AFTER_MS ? "failing" : null;
  if (disableAs) {
    // The endpoint first, then this message parked beside its others (no due time): sent once it is enabled
    // again. A crash between the two leaves the claim to expire, due, on a disabled endpoint: sent on enabling too.
    await disableEndpoint(db, endpoint.id, disableAs, done);
    log.warn("webhook endpoint disabled", { endpointId: endpoint.id, reason: disableAs });
    if (!(await record(services, claim, attempt, "pending"))) return { status: "lost_claim" };
    return { status: "parked", reason: disableAs };
  }
  return retryOrFail(services, claim, attempt, done, retryAfter, options);
}

/**
 * Records a failed attempt on its endpoint and answers when the endpoint's run of failures began: at its first
 * failure since the last success, unless two days or more passed without one (the endpoint was not being
 * tried, so it was not failing); then this failure begins a new run. Only a run of 5 days disables the endpoint.
 */
async function failingRun(db: Db, endpointId: string, at: Date): Promise<Date> {
  const { failingSince, lastFailureAt } = webhookEndpoints;
  const gapFrom = new Date(at.getTime() - FAILURE_GAP_MS).toISOString();
  const [row] = await db
    .update(webhookEndpoints)
    .set({
      failingSince: sql`case when ${failingSince} is null or ${lastFailureAt} is null or ${lastFailureAt} < ${gapFrom}::timestamptz then ${at.toISOString()}::timestamptz else ${failingSince} end`,
      lastFailureAt: at,
    })
    .where(eq(webhookEndpoints.id, endpointId))
    .returning({ failingSince });
  return row?.failingSince ?? at;
}

/** The message's body (made once, kept on the message) and its signed headers; null when its resource is gone. */
async function prepare(services: Services, { endpoint, message }: WebhookClaim, now: Date): Promise<{ body: string; headers: Record<string, string> } | null> {
  const body = message.payload ?? (await batched(services).payload(message));
  if (body === null) return null;
  // The cipher keeps what it opened lately, so a burst decrypts each endpoint's secret once.
  const secrets = [await services.tokens.decrypt(endpoint.secretCiphertext)];
  for (const earlier of endpoint.earlierSecrets) {
    if (Date.parse(earlier.until) > now.getTime()) secrets.push(await services.tokens.decrypt(earlier.ciphertext));
  }
  return { body, headers: await signedHeaders(webhookIdOf(message.id), now, body, secrets) };
}

/** A failed attempt: the next of the round after the schedule's delay (or the receiver's Retry-After), or failed once it is spent. */
async function retryOrFail(
  services: Services,
  claim: WebhookDeliveryRow,
  attempt: WebhookAttempt,
  done: Date,
  retryAfter: string | null,
  options: SendOptions,
): Promise<SendOutcome> {
  const schedule = services.config.webhooks.retryScheduleMs;
  if (claim.roundAttempts >= schedule.length) {
    if (!(await record(services, claim, attempt, "failed"))) return { status: "lost_claim" };
    return { status: "failed", reason: "every attempt of the schedule failed" };
  }
  const jitter = 1 + (options.random ?? Math.random)() * 0.2;
  const delay = Math.max(Math.round(schedule[claim.roundAttempts]! * jitter), retryAfterMs(retryAfter, done) ?? 0);
  const nextAttemptAt = new Date(done.getTime() + delay);
  if (!(await record(services, claim, attempt, "pending", nextAttemptAt))) return { status: "lost_claim" };
  await announce(services, claim.id, nextAttemptAt);
  return { status: "retry", nextAttemptAt };
}

/** The attempt's outcome, under the claim; false when the claim was lost. Outcomes recorded together are one statement. */
function record(services: Services, claim: WebhookDeliveryRow, attempt: WebhookAttempt, status: string, nextAttemptAt: Date | null = null): Promise<boolean> {
  return batched(services).record({ claim, status, nextAttemptAt, log: [...claim.log, attempt].slice(-LOG_KEEP), at: services.clock.now() });
}

interface Outcome {
  claim: WebhookDeliveryRow;
  status: string;
  nextAttemptAt: Date | null;
  log: WebhookAttempt[];
  at: Date;
}

/**
 * The statements sends that run together share (group commits, src/lib/group-commit.ts): making and keeping
 * their bodies, recording their outcomes. Per database handle, so nothing crosses a Worker's requests.
 */
const batches = new WeakMap<Db, ReturnType<typeof batchesOf>>();

function batched(services: Services) {
  let b = batches.get(services.db);
  if (!b) batches.set(services.db, (b = batchesOf(services)));
  return b;
}

function batchesOf(services: Services) {
  const { db } = services;
  return {
    // The first body made is the message's for good, whoever made it (coalesce keeps an earlier one).
    payload: groupCommit(async (messages: MessageRow[]) => {
      const unique = [...new Map(messages.map((m) => [m.id, m])).values()];
      const made = await buildPayloads(services, unique);
      const values = unique.flatMap((m) => (made.get(m.id) ? [{ id: m.id, payload: made.get(m.id)! }] : []));
      const kept = new Map<string, string>();
      if (values.length) {
        const rows = await executeRows<{ id: string; payload: string }>(
          db,
          sql`update ${webhookMessages} m set payload = coalesce(m.payload, v.payload)
                from json_to_recordset(${JSON.stringify(values)}::json) as v(id uuid, payload text)
               where m.id = v.id returning m.id, m.payload`,
        );
        for (const r of rows) kept.set(r.id, r.payload);
      }
      return messages.map((m) => kept.get(m.id) ?? made.get(m.id) ?? null);
    }, BATCH_WINDOW),
    record: groupCommit(async (outcomes: Outcome[]) => {
      const values = outcomes.map((o) => ({
        id: o.claim.id,
        attempts: o.claim.attempts,
        status: o.status,
        next_attempt_at: o.nextAttemptAt?.toISOString() ?? null,
        log: o.log,
        updated_at: o.at.toISOString(),
      }));
      const rows = await executeRows<{ id: string; attempts: number }>(
        db,
        sql`update ${webhookDeliveries} d
               set status = v.status, next_attempt_at = v.next_attempt_at, locked_until = null, log = v.log, updated_at = v.updated_at
              from json_to_recordset(${JSON.stringify(values)}::json) as v(id uuid, attempts int, status text, next_attempt_at timestamptz, log jsonb, updated_at timestamptz)
             where d.id = v.id and d.status = 'sending' and d.attempts = v.attempts
         returning d.id, d.attempts`,
      );
      const held = new Set(rows.map((r) => `${r.id}/${r.attempts}`));
      return outcomes.map((o) => held.has(`${o.claim.id}/${o.claim.attempts}`));
    }, BATCH_WINDOW),
  };
}

/** Sends that start within this many ms share their statements. */
const BATCH_WINDOW = { windowMs: 2 };

/** Disables an endpoint and parks its pending messages. */
export async function disableEndpoint(db: Db, endpointId: string, reason: "manual" | "gone" | "failing", now: Date): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.update(webhookEndpoints).set({ enabled: false, disabledReason: reason, updatedAt: now }).where(eq(webhookEndpoints.id, endpointId));
    await tx
      .update(webhookDeliveries)
      .set({ nextAttemptAt: null, jobId: null, updatedAt: now })
      .where(and(eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.status, "pending")));
  });
}

/** Pending messages of an endpoint enabled again are due now. */
export async function unparkEndpoint(db: Db, endpointId: string, now: Date): Promise<void> {
  await db
    .update(webhookDeliveries)
    .set({ nextAttemptAt: now, updatedAt: now })
    .where(and(eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.status, "pending"), isNull(webhookDeliveries.nextAttemptAt)));
}

/** Retry-After as seconds or an HTTP date, in ms from `now`, capped; null when absent or unreadable. */
export function retryAfterMs(value: string | null, now: Date): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now.getTime();
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), RETRY_AFTER_CAP_MS) : null;
}

/** Tells the queue a delivery is due at `at`: a QStash message, or the poller's sender waking. */
async function announce(services: Services, id: string, at: Date): Promise<void> {
  try {
    const jobId = await services.queue.enqueueWebhook(id, at);
    if (jobId)
      await services.db
        .update(webhookDeliveries)
        .set({ jobId })
        .where(and(eq(webhookDeliveries.id, id), eq(webhookDeliveries.nextAttemptAt, at)));
  } catch (err) {
    services.log.warn("could not queue the webhook retry; the sweep will", { deliveryId: id, error: String(err) });
  }
}

/** Claims whose sender stopped (their lock expired) are due again; with `all`, every claim (a database this process owns alone). */
export async function releaseWebhookClaims(db: Db, now: Date, all = false): Promise<number> {
  const rows = await db
    .update(webhookDeliveries)
    .set({ status: "pending", lockedUntil: null, nextAttemptAt: now, updatedAt: now })
    .where(and(eq(webhookDeliveries.status, "sending"), all ? undefined : or(isNull(webhookDeliveries.lockedUntil), lt(webhookDeliveries.lockedUntil, now))))
    .returning({ id: webhookDeliveries.id });
  return rows.length;
}

/**
 * When the next pending delivery of an enabled endpoint falls due after `after` (a claim's time), or null. The
 * sender asks after a claim that took all it could: what was due by then and not taken (an endpoint with every
 * slot in use, a disabled one's) must not count, or it would look again at once, over and over; a finished send
 * wakes it for those. Ordered and limited, the look walks the due-time index from `after`.
 */
export async function nextWebhookDueAt(db: Db, after: Date): Promise<Date | null> {
  const [row] = await db
    .select({ at: webhookDeliveries.nextAttemptAt })
    .from(webhookDeliveries)
    .innerJoin(webhookEndpoints, and(eq(webhookEndpoints.id, webhookDeliveries.endpointId), eq(webhookEndpoints.enabled, true)))
    .where(and(eq(webhookDeliveries.status, "pending"), gt(webhookDeliveries.nextAttemptAt, after)))
    .orderBy(webhookDeliveries.nextAttemptAt)
    .limit(1);
  return row?.at ? new Date(row.at) : null;
}

/** Messages older than the retention period with nothing left to send are removed, their deliveries with them. */
export async function purgeOldWebhookMessages(db: Db, now: Date, retentionDays: number): Promise<number> {
  const cutoff = new Date(now.getTime() - retentionDays * 24 * 60 * 60_000);
  const rows = await db
    .delete(webhookMessages)
    .where(
      and(
        lt(webhookMessages.createdAt, cutoff),
        sql`not exists (select 1 from ${webhookDeliveries} d where d.message_id = ${webhookMessages.id} and d.status in ('pending', 'sending'))`,
      ),
    )
    .returning({ id: webhookMessages.id });
  return rows.length;
}
