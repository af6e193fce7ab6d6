/**
 * The webhooks area's operations as `createRoute` definitions, and the top-level `webhooks` section of the
 * OpenAPI document: one entry per event type with its message's schema, what a receiver is sent. Every
 * operation needs a key with the `social` scope and counts against the social read or write budget.
 *
 * @example
 * router.openapi(routes.createWebhook, handlers.createWebhook, validationHook(routes.createWebhook));
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { authenticated, errorResponse, internalError, json, type Access } from "../http/openapi";
import { strictUtf8Json } from "../http/json";
import { NoQuerySchema } from "../http/validate";
import { EVENT_DESCRIPTIONS, WEBHOOK_EVENT_TYPES } from "./events";
import {
  DeliveryListQuerySchema,
  DeliveryParamSchema,
  EndpointParamSchema,
  EVENT_SCHEMAS,
  MAX_ENDPOINTS_PER_USER,
  WebhookCreatedSchema,
  WebhookCreateSchema,
  WebhookDeliveryListResponseSchema,
  WebhookDeliveryResponseSchema,
  WebhookListResponseSchema,
  WebhookResponseSchema,
  WebhookSecretResponseSchema,
  WebhookUpdateSchema,
} from "./schemas";

export const WEBHOOKS_BASE_PATH = "/api/v1/webhooks";

const security = [{ bearerAuth: [] }];
const read: Access = { scope: "social", rateLimit: "social-read" };
const write: Access = { scope: "social", rateLimit: "social-write" };

const ENDPOINT_ID = "6f1c2b9a-0d3e-4f5a-8b7c-9d0e1f2a3b4c";
const DELIVERY_ID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw8Aqe2BRMn3o=";

const endpointExample = {
  id: ENDPOINT_ID,
  url: "https://shop.example.com/hooks/shopkit",
  events: ["post.published", "post.failed", "post.target.failed"],
  description: "Order system",
  enabled: true,
  disabledReason: null,
  failingSince: null,
  createdAt: "2030-05-01T09:00:00.000Z",
  updatedAt: "2030-05-01T09:00:00.000Z",
};

const deliveryExample = {
  id: DELIVERY_ID,
  webhookId: "msg_2b1c0e7f9a4d4e6b8c3f5a7d9e1b3c5d",
  eventType: "post.published",
  status: "delivered",
  attempts: [
    { at: "2030-05-01T09:05:00.120Z", status: 500, error: null, durationMs: 84 },
    { at: "2030-05-01T09:05:05.700Z", status: 200, error: null, durationMs: 41 },
  ],
  nextAttemptAt: null,
  createdAt: "2030-05-01T09:05:00.100Z",
};

const pendingTest = {
  id: DELIVERY_ID,
  webhookId: "msg_7d3e5a1c9b2f4e8a6c0d2b4f6a8c0e2d",
  eventType: "webhook.test",
  status: "pending",
  attempts: [],
  nextAttemptAt: "2030-05-01T09:10:00.000Z",
  createdAt: "2030-05-01T09:10:00.000Z",
};

const notFound = errorResponse(
  "No such endpoint or delivery for the key's owner.",
  ["WEBHOOK_NOT_FOUND", `No webhook endpoint with id "${ENDPOINT_ID}" belongs to this API key's owner.`],
  ["WEBHOOK_DELIVERY_NOT_FOUND", `No delivery with id "${DELIVERY_ID}" belongs to this endpoint.`],
);
const endpointNotFound = errorResponse("No such endpoint for the key's owner.", [
  "WEBHOOK_NOT_FOUND",
  `No webhook endpoint with id "${ENDPOINT_ID}" belongs to this API key's owner.`,
]);
const invalid = errorResponse(
  "An invalid field, or a URL that is not allowed (not https on port 443, a private or loopback address, a local name).",
  [
    "VALIDATION_FAILED",
    "url: the host is a private network address; only public addresses may receive webhooks",
    [{ path: "url", message: "the host is a private network address; only public addresses may receive webhooks" }],
  ],
  ["VALIDATION_FAILED", "events.0: must be one of post.published, …", [{ path: "events.0", message: "must be one of post.published, …" }]],
);
const disabledConflict = errorResponse("The endpoint is disabled.", [
  "WEBHOOK_DISABLED",
  'The webhook endpoint is disabled (its receiver answered 410 Gone); enable it first (PATCH with "enabled": true).',
]);
const common = {
  401: errorResponse("Missing or invalid credentials.", ["UNAUTHORIZED", "Missing or invalid credentials: send Authorization: Bearer <API key>."]),
  429: errorResponse("The per-user request budget is used up; wait Retry-After seconds.", [
    "RATE_LIMITED",
    "Rate limit of 60 requests per minute reached; retry in 17 s.",
  ]),
  500: internalError,
};
const bodyErrors = {
  400: errorResponse("The body is not valid JSON.", ["INVALID_JSON", "The request body is not valid JSON."]),
  415: errorResponse("The body is not JSON.", ["UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with Content-Type: application/json."]),
};

const SIGNING = [
  "Every message is a POST with a JSON body `{type, timestamp, data}` (the `webhooks` section of this document gives each event's schema) and the Standard Webhooks headers:",
  "`webhook-id` (the same on every retry and replay: de-duplicate on it), `webhook-timestamp` (unix seconds) and `webhook-signature`: `v1,<Base64 of HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}` keyed with the Base64-decoded secret after `whsec_`>`; two signatures, space-separated, for 24 hours after a rotation.",
  "Verify with any Standard Webhooks library (`new Webhook(secret).verify(body, headers)` of the npm package `standardwebhooks`) and refuse timestamps more than 5 minutes away.",
  "Answer 2xx within 15 seconds. Anything else is retried at once, after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (with jitter; a `Retry-After` is honoured up to 24 h); `410 Gone` disables the endpoint at once; an endpoint whose every attempt fails for 5 days is disabled. Redirects are not followed.",
].join(" ");

export const routes = {
  createWebhook: authenticated(
    write,
    createRoute({
      method: "post",
      path: "/",
      // After the key and the rate limit (authenticated puts a route's own middleware last).
      middleware: [strictUtf8Json],
      operationId: "createWebhook",
      tags: ["Webhooks"],
      summary: "Add a webhook endpoint",
      description: `Registers a URL to receive the chosen events (every event when \`events\` is left out). At most ${MAX_ENDPOINTS_PER_USER} endpoints per user. The answer holds the signing \`secret\`, shown only here. ${SIGNING}`,
      security,
      request: {
        query: NoQuerySchema,
        body: {
          required: true,
          content: json(WebhookCreateSchema, {
            all: { summary: "Every event", value: { url: "https://shop.example.com/hooks/shopkit" } },
            some: {
              summary: "Some events, with a description",
              value: {
                url: "https://shop.example.com/hooks/shopkit",
                events: ["post.published", "post.failed", "post.target.failed"],
                description: "Order system",
              },
            },
          }),
        },
      },
      responses: {
        201: {
          description: "The endpoint, with its secret (shown once).",
          headers: z.object({ Location: z.string() }),
          content: json(WebhookCreatedSchema, { created: { value: { data: { ...endpointExample, secret: SECRET } } } }),
        },
        ...bodyErrors,
        409: errorResponse("The user has the most endpoints allowed.", [
          "WEBHOOK_LIMIT_REACHED",
          `A user may have at most ${MAX_ENDPOINTS_PER_USER} webhook endpoints; delete one first.`,
        ]),
        422: invalid,
        ...common,
      },
    }),
  ),

  listWebhooks: authenticated(
    read,
    createRoute({
      method: "get",
      path: "/",
      operationId: "listWebhooks",
      tags: ["Webhooks"],
      summary: "List webhook endpoints",
      description: "Oldest first; never the secrets.",
      security,
      request: { query: NoQuerySchema },
      responses: {
        200: { description: "The user's endpoints.", content: json(WebhookListResponseSchema, { list: { value: { data: { items: [endpointExample] } } } }) },
        422: invalid,
        ...common,
      },
    }),
  ),

  getWebhook: authenticated(
    read,
    createRoute({
      method: "get",
      path: "/{id}",
      operationId: "getWebhook",
      tags: ["Webhooks"],
      summary: "Get a webhook endpoint",
      security,
      request: { query: NoQuerySchema, params: EndpointParamSchema },
      responses: {
        200: { description: "The endpoint.", content: json(WebhookResponseSchema, { endpoint: { value: { data: endpointExample } } }) },
        404: endpointNotFound,
        422: invalid,
        ...common,
      },
    }),
  ),

  updateWebhook: authenticated(
    write,
    createRoute({
      method: "patch",
      path: "/{id}",
      // After the key and the rate limit (authenticated puts a route's own middleware last).
      middleware: [strictUtf8Json],
      operationId: "updateWebhook",
      tags: ["Webhooks"],
      summary: "Change a webhook endpoint",
      description:
        "Changes the URL, the events, the description, or pauses (`enabled: false`) and resumes it. Enabling an endpoint disabled by 410 or by failures clears the reason, and the messages that waited are sent.",
      security,
      request: {
        query: NoQuerySchema,
        params: EndpointParamSchema,
        body: {
          required: true,
          content: json(WebhookUpdateSchema, {
            events: { summary: "Every event from now on", value: { events: null } },
            enable: { summary: "Enable it again", value: { enabled: true } },
          }),
        },
      },
      responses: {
        200: { description: "The endpoint as changed.", content: json(WebhookResponseSchema, { changed: { value: { data: endpointExample } } }) },
        ...bodyErrors,
        404: endpointNotFound,
        422: invalid,
        ...common,
      },
    }),
  ),

  deleteWebhook: authenticated(
    write,
    createRoute({
      method: "delete",
      path: "/{id}",
      operationId: "deleteWebhook",
      tags: ["Webhooks"],
      summary: "Delete a webhook endpoint",
      description: "The endpoint and its delivery log are removed; nothing more is sent to it.",
      security,
      request: { query: NoQuerySchema, params: EndpointParamSchema },
      responses: {
        204: { description: "Deleted." },
        404: endpointNotFound,
        422: invalid,
        ...common,
      },
    }),
  ),

  rotateWebhookSecret: authenticated(
    write,
    createRoute({
      method: "post",
      path: "/{id}/rotate-secret",
      operationId: "rotateWebhookSecret",
      tags: ["Webhooks"],
      summary: "Rotate an endpoint's signing secret",
      description:
        "Makes a new secret, shown only in this answer. For 24 hours both the previous and the new secret sign every message (two signatures in `webhook-signature`), then only the new one.",
      security,
      request: { query: NoQuerySchema, params: EndpointParamSchema },
      responses: {
        200: {
          description: "The new secret.",
          content: json(WebhookSecretResponseSchema, {
            rotated: { value: { data: { id: ENDPOINT_ID, secret: SECRET, previousSecretExpiresAt: "2030-05-02T09:00:00.000Z" } } },
          }),
        },
        404: endpointNotFound,
        422: invalid,
        ...common,
      },
    }),
  ),

  testWebhook: authenticated(
    write,
    createRoute({
      method: "post",
      path: "/{id}/test",
      operationId: "testWebhook",
      tags: ["Webhooks"],
      summary: "Send a test message",
      description: "Sends a `webhook.test` message to this endpoint at once, whatever events it takes. Follow it in the deliveries.",
      security,
      request: { query: NoQuerySchema, params: EndpointParamSchema },
      responses: {
        202: { description: "The test message, on its way.", content: json(WebhookDeliveryResponseSchema, { queued: { value: { data: pendingTest } } }) },
        404: endpointNotFound,
        409: disabledConflict,
        422: invalid,
        ...common,
      },
    }),
  ),

  listWebhookDeliveries: authenticated(
    read,
    createRoute({
      method: "get",
      path: "/{id}/deliveries",
      operationId: "listWebhookDeliveries",
      tags: ["Webhooks"],
      summary: "List an endpoint's deliveries",
      description:
        "Newest first: each message's event type, `webhook-id`, state (pending, delivered, failed), every attempt (time, the receiver's HTTP status or why no answer came, duration) and the next attempt.",
      security,
      request: { query: DeliveryListQuerySchema, params: EndpointParamSchema },
      responses: {
        200: {
          description: "One page of deliveries.",
          content: json(WebhookDeliveryListResponseSchema, {
            page: { value: { data: { items: [deliveryExample], total: 1, hasMore: false, limit: 20, offset: 0 } } },
          }),
        },
        404: endpointNotFound,
        422: invalid,
        ...common,
      },
    }),
  ),

  replayWebhookDelivery: authenticated(
    write,
    createRoute({
      method: "post",
      path: "/{id}/deliveries/{deliveryId}/replay",
      operationId: "replayWebhookDelivery",
      tags: ["Webhooks"],
      summary: "Send a message again",
      description: "Sends the message again now, with the same `webhook-id` and body, through a new round of the retry schedule.",
      security,
      request: { query: NoQuerySchema, params: DeliveryParamSchema },
      responses: {
        202: {
          description: "The delivery, due at once.",
          content: json(WebhookDeliveryResponseSchema, {
            replayed: { value: { data: { ...deliveryExample, status: "pending", nextAttemptAt: "2030-05-01T10:00:00.000Z" } } },
          }),
        },
        404: notFound,
        409: disabledConflict,
        422: invalid,
        ...common,
      },
    }),
  ),
};

/**
 * The document's top-level `webhooks`: for each event type, the POST a receiver gets, with its message's
 * schema and an answer of 2xx expected. Registered on the app itself (a router's would be given its prefix).
 */
// biome-ignore lint/suspicious/noExplicitAny: any app, whatever its environment type
export function registerWebhookEvents(app: OpenAPIHono<any>): void {
  for (const type of WEBHOOK_EVENT_TYPES) {
    app.openAPIRegistry.registerWebhook({
      method: "post",
      path: type,
      operationId: `${type.replaceAll(".", "_")}_event`,
      tags: ["Webhooks"],
      summary: type,
      description: `${EVENT_DESCRIPTIONS[type]}\n\n${SIGNING}`,
      request: {
        headers: z.object({
          "webhook-id": z.string().openapi({ description: "The message's id: the same on every retry and replay." }),
          "webhook-timestamp": z.string().openapi({ description: "Unix seconds of this attempt." }),
          "webhook-signature": z.string().openapi({ description: "`v1,<signature>`, one per signing secret, space-separated." }),
        }),
        body: { required: true, content: { "application/json": { schema: EVENT_SCHEMAS[type] } } },
      },
      responses: {
        200: { description: "Any 2xx answer within 15 seconds acknowledges the message." },
        410: { description: "The endpoint is disabled; nothing more is sent to it." },
      },
    });
  }
}
