/**
 * A user's webhook endpoints and their deliveries: create (the secret shown once), list, read, change,
 * delete, rotate the secret, send a test message, list the deliveries, replay one. Another user's endpoint or
 * delivery is not found (404), as is an id that is not a UUID.
 *
 * @example
 * const created = await createEndpoint(services, userId, { url: "https://shop.example.com/hooks" });
 * created.secret; // "whsec_…", never shown again
 */
import { and, count, desc, eq, ne, sql } from "drizzle-orm";
import { webhookDeliveries, webhookEndpoints, webhookMessages } from "../../db/schema";
import { checkWebhookUrl } from "../adapters/fetch/url-policy";
import { ApiError, invalidField } from "../http/errors";
import { CONTROL_CHARACTER, isUuid } from "../lib/encoding";
import type { Services } from "../services";
import type { WebhookEventType } from "./events";
import { DELIVERIES_DEFAULT_LIMIT, MAX_ENDPOINTS_PER_USER } from "./schemas";
import { disableEndpoint, unparkEndpoint } from "./send";
import { newSecret, webhookIdOf } from "./signing";

type EndpointRow = typeof webhookEndpoints.$inferSelect;
type DeliveryRow = typeof webhookDeliveries.$inferSelect;

export interface EndpointRecord {
  id: string;
  url: string;
  events: WebhookEventType[] | null;
  description: string;
  enabled: boolean;
  disabledReason: "manual" | "gone" | "failing" | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface DeliveryRecord {
  id: string;
  webhookId: string;
  eventType: WebhookEventType;
  status: "pending" | "delivered" | "failed";
  attempts: Array<{ at: string; status: number | null; error: string | null; durationMs: number }>;
  nextAttemptAt: string | null;
  createdAt: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toEndpointRecord(row: EndpointRow): EndpointRecord {
  return {
    id: row.id,
    url: row.url,
    events: row.events as WebhookEventType[] | null,
    description: row.description,
    enabled: row.enabled,
    disabledReason: row.disabledReason as EndpointRecord["disabledReason"],
    failingSince: iso(row.failingSince),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

function toDeliveryRecord(row: DeliveryRow, type: string): DeliveryRecord {
  return {
    id: row.id,
    webhookId: webhookIdOf(row.messageId),
    eventType: type as WebhookEventType,
    status: row.status === "sending" ? "pending" : (row.status as DeliveryRecord["status"]),
    attempts: row.log,
    nextAttemptAt: iso(row.nextAttemptAt),
    createdAt: row.createdAt.toISOString(),
  };
}

/** Distinct types in the document's order; null stays null (every type). */
const normaliseEvents = (events: readonly WebhookEventType[] | null | undefined) => (events ? [...new Set(events)] : null);

export interface EndpointInput {
  url: string;
  events?: WebhookEventType[] | null;
  description?: string;
}

/** An endpoint's label, from the API or the hub: no control character (PostgreSQL cannot even store NUL). */
function checkDescription(description: string): string {
  if (CONTROL_CHARACTER.test(description)) throw invalidField("description", "must not contain control characters");
  return description;
}

export async function createEndpoint(services: Services, userId: string, input: EndpointInput): Promise<EndpointRecord & { secret: string }> {
  const url = checkWebhookUrl(input.url, services.config.webhooks.allowLoopback).href;
  const description = checkDescription(input.description ?? "");
  const secret = newSecret();
  const now = services.clock.now();
  const ciphertext = await services.tokens.encrypt(secret);
  // The count and the insert in one statement: two creations at once cannot both pass the limit unseen
  // (they may both see 9, which the lock on the user's row below prevents).
  const row = await services.db.transaction(async (tx) => {
    await tx.execute(sql`select 1 from users where id = ${userId} for update`);
    const [{ n }] = (await tx.select({ n: count() }).from(webhookEndpoints).where(eq(webhookEndpoints.userId, userId))) as [{ n: number }];
    if (Number(n) >= MAX_ENDPOINTS_PER_USER) {
      throw new ApiError("WEBHOOK_LIMIT_REACHED", `A user may have at most ${MAX_ENDPOINTS_PER_USER} webhook endpoints; delete one first.`);
    }
    const [created] = await tx
      .insert(webhookEndpoints)
      .values({
        userId,
        url,
        events: normaliseEvents(input.events),
        description,
        secretCiphertext: ciphertext,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return created!;
  });
  return { ...toEndpointRecord(row), secret };
}

export async function listEndpoints(services: Services, userId: string): Promise<EndpointRecord[]> {
  const rows = await services.db
    .select()
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.userId, userId))
    .orderBy(webhookEndpoints.createdAt, webhookEndpoints.id);
  return rows.map(toEndpointRecord);
}

async function endpointRow(services: Services, userId: string, id: string): Promise<EndpointRow> {
  const [row] = isUuid(id)
    ? await services.db
        .select()
        .from(webhookEndpoints)
        .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.userId, userId)))
    : [];
  if (!row) throw endpointNotFound(id);
  return row;
}

const endpointNotFound = (id: string) => new ApiError("WEBHOOK_NOT_FOUND", `No webhook endpoint with id "${id.slice(0, 64)}" belongs to this API key's owner.`);

export async function getEndpoint(services: Services, userId: string, id: string): Promise<EndpointRecord> {
  return toEndpointRecord(await endpointRow(services, userId, id));
}

export interface EndpointChange {
  url?: string;
  events?: WebhookEventType[] | null;
  description?: string;
  enabled?: boolean;
}

export async function updateEndpoint(services: Services, userId: string, id: string, change: EndpointChange): Promise<EndpointRecord> {
  await endpointRow(services, userId, id);
  const values: Partial<EndpointRow> = { updatedAt: services.clock.now() };
  if (change.url !== undefined) values.url = checkWebhookUrl(change.url, services.config.webhooks.allowLoopback).href;
  if (change.events !== undefined) values.events = normaliseEvents(change.events);
  if (change.description !== undefined) values.description = checkDescription(change.description);
  if (change.enabled === true) Object.assign(values, { enabled: true, disabledReason: null, failingSince: null, lastFailureAt: null });
  if (change.enabled === false) Object.assign(values, { enabled: false, disabledReason: "manual" });
  const [row] = await services.db
    .update(webhookEndpoints)
    .set(values)
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.userId, userId)))
    .returning();
  if (!row) throw new ApiError("WEBHOOK_NOT_FOUND", `No webhook endpoint with id "${id}" belongs to this API key's owner.`);
  // Enabled again: what waited for it is due now; disabled: what waits for it is parked.
  if (change.enabled === true) {
    await unparkEndpoint(services.db, id, services.clock.now());
    services.kickWebhooks?.();
  }
  if (change.enabled === false) await disableEndpoint(services.db, id, "manual", services.clock.now());
  return toEndpointRecord(row);
}

export async function deleteEndpoint(services: Services, userId: string, id: string): Promise<void> {
  await endpointRow(services, userId, id);
  await services.db.delete(webhookEndpoints).where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.userId, userId)));
}

/** Secrets rotated out within one overlap that still sign; past this many, the oldest stops first. */
export const MAX_EARLIER_SECRETS = 5;

/**
 * A new secret; the one it replaces keeps signing beside it for the configured overlap (24 h by default), as
 * do secrets rotated out before it whose overlap has not ended: a second rotation (a retried call whose answer
 * was lost, say) takes no secret away from a receiver that has not yet switched.
 */
export async function rotateSecret(services: Services, userId: string, id: string) {
  if (!isUuid(id)) throw endpointNotFound(id);
  const secret = newSecret();
  const ciphertext = await services.tokens.encrypt(secret);
  const now = services.clock.now();
  const until = new Date(now.getTime() + services.config.webhooks.rotationOverlapMs);
  // The row locked while it changes: two rotations at once (a call and its retry) each keep the other's secret.
  await services.db.transaction(async (tx) => {
    const [row] = await tx
      .select()
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.userId, userId)))
      .for("update");
    if (!row) throw endpointNotFound(id);
    const earlier = [
      ...row.earlierSecrets.filter((e) => Date.parse(e.until) > now.getTime()),
      { ciphertext: row.secretCiphertext, until: until.toISOString() },
    ];
    await tx
      .update(webhookEndpoints)
      .set({ secretCiphertext: ciphertext, earlierSecrets: earlier.slice(-MAX_EARLIER_SECRETS), updatedAt: now })
      .where(eq(webhookEndpoints.id, id));
  });
  return { id, secret, previousSecretExpiresAt: until.toISOString() };
}

/** A `webhook.test` message to this endpoint alone, due at once. */
export async function sendTest(services: Services, userId: string, id: string): Promise<DeliveryRecord> {
  const endpoint = await endpointRow(services, userId, id);
  if (!endpoint.enabled) throw disabled(endpoint);
  const now = services.clock.now();
  const delivery = await services.db.transaction(async (tx) => {
    const [message] = await tx.insert(webhookMessages).values({ userId, type: "webhook.test", subjectId: id, createdAt: now }).returning();
    const [row] = await tx
      .insert(webhookDeliveries)
      .values({ messageId: message!.id, endpointId: id, userId, nextAttemptAt: now, createdAt: now, updatedAt: now })
      .returning();
    return row!;
  });
  services.kickWebhooks?.();
  return toDeliveryRecord(delivery, "webhook.test");
}

export async function listDeliveries(services: Services, userId: string, id: string, page: { limit?: number; offset?: number }) {
  await endpointRow(services, userId, id);
  const limit = page.limit ?? DELIVERIES_DEFAULT_LIMIT;
  const offset = page.offset ?? 0;
  const owned = and(eq(webhookDeliveries.endpointId, id), eq(webhookDeliveries.userId, userId));
  const [rows, counted] = await Promise.all([
    services.db
      .select({ delivery: webhookDeliveries, type: webhookMessages.type })
      .from(webhookDeliveries)
      .innerJoin(webhookMessages, eq(webhookMessages.id, webhookDeliveries.messageId))
      .where(owned)
      .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
      .limit(limit)
      .offset(offset),
    services.db.select({ n: count() }).from(webhookDeliveries).where(owned),
  ]);
  const total = Number(counted[0]?.n ?? 0);
  return { items: rows.map((r) => toDeliveryRecord(r.delivery, r.type)), total, hasMore: offset + rows.length < total, limit, offset };
}

/**
 * Sends a delivered or failed message again, with the same `webhook-id` and body, through a new round of the
 * retry schedule; a message still pending is made due at once.
 */
export async function replayDelivery(services: Services, userId: string, id: string, deliveryId: string): Promise<DeliveryRecord> {
  const endpoint = await endpointRow(services, userId, id);
  if (!endpoint.enabled) throw disabled(endpoint);
  const notFound = new ApiError("WEBHOOK_DELIVERY_NOT_FOUND", `No delivery with id "${deliveryId.slice(0, 64)}" belongs to this endpoint.`);
  if (!isUuid(deliveryId)) throw notFound;
  const now = services.clock.now();
  const mine = and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.endpointId, id), eq(webhookDeliveries.userId, userId));
  // A message being sent right now is left to that attempt (its outcome is recorded under its claim).
  let [row] = await services.db
    .update(webhookDeliveries)
    .set({ status: "pending", nextAttemptAt: now, roundAttempts: 0, jobId: null, updatedAt: now })
    .where(and(mine, ne(webhookDeliveries.status, "sending")))
    .returning();
  row ??= (await services.db.select().from(webhookDeliveries).where(mine))[0];
  if (!row) throw notFound;
  const [message] = await services.db.select({ type: webhookMessages.type }).from(webhookMessages).where(eq(webhookMessages.id, row.messageId));
  services.kickWebhooks?.();
  return toDeliveryRecord(row, message?.type ?? "webhook.test");
}

function disabled(endpoint: EndpointRow): ApiError {
  const why =
    endpoint.disabledReason === "gone"
      ? " (its receiver answered 410 Gone)"
      : endpoint.disabledReason === "failing"
        ? " (every attempt failed for 5 days)"
        : "";
  return new ApiError("WEBHOOK_DISABLED", `The webhook endpoint is disabled${why}; enable it first (PATCH with "enabled": true).`);
}
