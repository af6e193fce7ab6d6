/**
 * The webhooks area's request and response schemas, and the schema of every event's message (the OpenAPI
 * document's top-level `webhooks` section). Messages carry area C's and area B's resources as those areas'
 * schemas describe them, so a receiver gets exactly what the API would answer.
 */
import { z } from "@hono/zod-openapi";
import { AccountSchema, PostSchema } from "../social/schemas";
import { JobSchema } from "../photo/schemas";
import { wholeNumberParam } from "../http/validate";
import { EVENT_DESCRIPTIONS, WEBHOOK_EVENT_TYPES, type WebhookEventType } from "./events";

export const MAX_ENDPOINTS_PER_USER = 10;
export const DELIVERIES_DEFAULT_LIMIT = 20;
export const DELIVERIES_MAX_LIMIT = 100;
export const DELIVERIES_MAX_OFFSET = 10_000;
const MAX_DESCRIPTION = 500;

const EventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES, { error: `must be one of ${WEBHOOK_EVENT_TYPES.join(", ")}` }).openapi("WebhookEventType");

const EventsField = z
  .array(EventTypeSchema)
  .min(1, { error: "must name at least one event; leave it out (or null) for every event" })
  .max(WEBHOOK_EVENT_TYPES.length)
  .nullable()
  .openapi({ description: "The event types sent to this endpoint; null or left out: every type." });

const UrlField = z
  .string({ error: "must be a string" })
  .min(1, { error: "must not be empty" })
  .max(2048, { error: "must be at most 2048 characters" })
  .openapi({
    description:
      "Where messages are POSTed: https on port 443 to a public host; redirects are not followed. With WEBHOOK_ALLOW_LOOPBACK=on (local development only) also http://127.0.0.1:<port>/… and http://localhost:<port>/….",
    example: "https://shop.example.com/hooks/shopkit",
  });

const DescriptionField = z
  .string({ error: "must be a string" })
  .max(MAX_DESCRIPTION, { error: `must be at most ${MAX_DESCRIPTION} characters` })
  .openapi({ description: `At most ${MAX_DESCRIPTION} characters.`, example: "Order system" });

export const WebhookCreateSchema = z
  .strictObject({ url: UrlField, events: EventsField.optional(), description: DescriptionField.optional() })
  .openapi("WebhookCreate");

export const WebhookUpdateSchema = z
  .strictObject({
    url: UrlField.optional(),
    events: EventsField.optional(),
    description: DescriptionField.optional(),
    enabled: z.boolean().optional().openapi({ description: "false pauses the endpoint; true enables it again and clears the reason it was disabled." }),
  })
  .openapi("WebhookUpdate");

export const WebhookEndpointSchema = z
  .object({
    id: z.uuid(),
    url: z.string(),
    events: z.array(EventTypeSchema).nullable().openapi({ description: "null: every event type." }),
    description: z.string(),
    enabled: z.boolean(),
    disabledReason: z.enum(["manual", "gone", "failing"]).nullable().openapi({
      description:
        "Why the endpoint is disabled: manual (PATCH enabled false), gone (the receiver answered 410 Gone), failing (every attempt failed for 5 days); null while enabled.",
    }),
    failingSince: z.string().nullable().openapi({
      format: "date-time",
      description:
        "The first failed attempt of the endpoint's current run of failures (since it last answered 2xx, with no two days between failures); 5 days of it disable the endpoint.",
    }),
    createdAt: z.string().openapi({ format: "date-time" }),
    updatedAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("WebhookEndpoint");

const SecretField = z.string().openapi({
  description: "The signing secret, `whsec_` + Base64 of 32 random bytes. Shown only in this answer: keep it.",
  example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw8Aqe2BRMn3o=",
});

export const WebhookCreatedSchema = z
  .object({ data: z.object({ ...WebhookEndpointSchema.shape, secret: SecretField }).openapi("WebhookEndpointWithSecret") })
  .openapi("WebhookCreated");
export const WebhookResponseSchema = z.object({ data: WebhookEndpointSchema }).openapi("WebhookResponse");
export const WebhookListResponseSchema = z.object({ data: z.object({ items: z.array(WebhookEndpointSchema) }) }).openapi("WebhookList");

export const WebhookSecretResponseSchema = z
  .object({
    data: z.object({
      id: z.uuid(),
      secret: SecretField,
      previousSecretExpiresAt: z.string().openapi({
        format: "date-time",
        description: "Until then the secret this rotation replaced also signs every message, as does any secret rotated out before it, until its own time.",
      }),
    }),
  })
  .openapi("WebhookSecret");

const AttemptSchema = z
  .object({
    at: z.string().openapi({ format: "date-time" }),
    status: z.number().int().nullable().openapi({ description: "The receiver's HTTP status; null when no answer came." }),
    error: z.string().nullable().openapi({ description: "Why the attempt failed when no answer came (timeout, connection refused, …)." }),
    durationMs: z.number().int(),
  })
  .openapi("WebhookAttempt");

export const WebhookDeliverySchema = z
  .object({
    id: z.uuid(),
    webhookId: z
      .string()
      .openapi({ description: "The message's `webhook-id` header: the same on every retry and replay.", example: "msg_2b1c0e7f9a4d4e6b8c3f5a7d9e1b3c5d" }),
    eventType: EventTypeSchema,
    status: z.enum(["pending", "delivered", "failed"]),
    attempts: z.array(AttemptSchema),
    nextAttemptAt: z
      .string()
      .nullable()
      .openapi({ format: "date-time", description: "When the next attempt is due; null once delivered or failed, and while the endpoint is disabled." }),
    createdAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("WebhookDelivery");

export const WebhookDeliveryResponseSchema = z.object({ data: WebhookDeliverySchema }).openapi("WebhookDeliveryResponse");
export const WebhookDeliveryListResponseSchema = z
  .object({
    data: z.object({ items: z.array(WebhookDeliverySchema), total: z.number().int(), hasMore: z.boolean(), limit: z.number().int(), offset: z.number().int() }),
  })
  .openapi("WebhookDeliveryList");

export const DeliveryListQuerySchema = z.strictObject({
  limit: wholeNumberParam(1, DELIVERIES_MAX_LIMIT)
    .optional()
    .openapi({
      type: "integer",
      minimum: 1,
      maximum: DELIVERIES_MAX_LIMIT,
      description: `1 to ${DELIVERIES_MAX_LIMIT}; default ${DELIVERIES_DEFAULT_LIMIT}.`,
      param: { example: 20 },
    }),
  offset: wholeNumberParam(0, DELIVERIES_MAX_OFFSET)
    .optional()
    .openapi({ type: "integer", minimum: 0, maximum: DELIVERIES_MAX_OFFSET, description: `0 to ${DELIVERIES_MAX_OFFSET}; default 0.`, param: { example: 0 } }),
});

const uuidParam = (name: string, example: string) =>
  z.string().openapi({ param: { name, in: "path", example }, description: "A UUID; ids of other users' resources are not found (404)." });

export const EndpointParamSchema = z.object({ id: uuidParam("id", "6f1c2b9a-0d3e-4f5a-8b7c-9d0e1f2a3b4c") });
export const DeliveryParamSchema = z.object({
  id: uuidParam("id", "6f1c2b9a-0d3e-4f5a-8b7c-9d0e1f2a3b4c"),
  deliveryId: uuidParam("deliveryId", "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"),
});

// ---------------------------------------------------------------- the messages

const TargetSchema = PostSchema.shape.accounts.element;

const TestDataSchema = z.object({ endpointId: z.uuid(), message: z.string() }).openapi("WebhookTestData");

const TargetDataSchema = z
  .object({ target: TargetSchema.openapi({ description: "The target whose state changed (an entry of the post's `accounts`)." }), post: PostSchema })
  .openapi("PostTargetEventData");

/** The `data` of each event type. */
const EVENT_DATA: Record<WebhookEventType, z.ZodType> = {
  "post.published": PostSchema,
  "post.partially_published": PostSchema,
  "post.failed": PostSchema,
  "post.cancelled": PostSchema,
  "post.target.published": TargetDataSchema,
  "post.target.failed": TargetDataSchema,
  "account.reconnect_required": AccountSchema,
  "photo.job.succeeded": JobSchema,
  "photo.job.failed": JobSchema,
  "webhook.test": TestDataSchema,
};

/** `post.target.failed` -> `PostTargetFailedEvent`: the component name of an event's message schema. */
export function eventSchemaName(type: WebhookEventType): string {
  return `${type
    .split(/[._]/)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join("")}Event`;
}

/** The message schema of each event type (named components of the document). */
export const EVENT_SCHEMAS = Object.fromEntries(
  WEBHOOK_EVENT_TYPES.map((type) => [
    type,
    z
      .object({
        type: z.literal(type),
        timestamp: z.string().openapi({ format: "date-time", description: "When the change happened." }),
        data: EVENT_DATA[type],
      })
      .openapi(eventSchemaName(type), { description: EVENT_DESCRIPTIONS[type] }),
  ]),
) as unknown as Record<WebhookEventType, z.ZodType>;
