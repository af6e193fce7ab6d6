/**
 * The area C operations as `createRoute` definitions (the single description both the validators and the
 * API's OpenAPI 3.1 document are built from) and the error responses they share, as named components.
 *
 * @example
 * router.openapi(routes.getPost, handler);
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import {
  AccountsResponseSchema,
  IdempotencyHeaderSchema,
  IdParamSchema,
  MediaCreateSchema,
  MediaResponseSchema,
  PostCreateSchema,
  PostListQuerySchema,
  PostListResponseSchema,
  PostResponseSchema,
} from "./schemas";
import { NoQuerySchema } from "../http/validate";

export const SOCIAL_BASE_PATH = "/api/v1/social";

const json = <T extends z.ZodType>(schema: T) => ({ "application/json": { schema } });
const ref = (name: ErrorResponseName) => ({ $ref: `#/components/responses/${name}` });
const security = [{ bearerAuth: [] }];

const ERROR_RESPONSES = {
  BadRequest: "400: the body is not valid JSON, or the Idempotency-Key header is missing or malformed.",
  Unauthorized: "401: missing or invalid Bearer credentials (API key or identity-provider ID token).",
  NotFound: "404: the account, media or post is not found for the key's owner.",
  Conflict: "409: reconnect required (ACCOUNT_NEEDS_RECONNECT), key reused with another body (IDEMPOTENCY_KEY_REUSED), request still processing (REQUEST_IN_PROGRESS, with Retry-After: 10), or a post that cannot be cancelled (POST_NOT_CANCELLABLE).",
  Gone: "410: the post created with this Idempotency-Key was removed (ORIGINAL_REMOVED); the key stays consumed.",
  PayloadTooLarge: "413: an image over 10 MB or a request over 20 MB.",
  UnsupportedMediaType: "415: the body is not JSON.",
  ValidationFailed: "422: invalid fields, image content, image URL, dimensions or schedule; an unknown body field, an unknown query parameter, or a query parameter given more than once. `details` names each field.",
  RateLimited: "429: the per-user request budget is used up; wait Retry-After seconds.",
  Internal: "500: an internal failure; retry the same request (with the same Idempotency-Key).",
} as const;
type ErrorResponseName = keyof typeof ERROR_RESPONSES;

const common = { 401: ref("Unauthorized"), 429: ref("RateLimited"), 500: ref("Internal") };

const locationHeader = z.object({
  Location: z.string().openapi({ description: "Path of the created resource." }),
});

export const routes = {
  listAccounts: createRoute({
    method: "get",
    path: "/accounts",
    operationId: "listAccounts",
    tags: ["Accounts"],
    summary: "List connected accounts",
    description: "The key owner's connected pageplatform pages and photoplatform accounts, with what each accepts.",
    security,
    request: { query: NoQuerySchema },
    responses: { 200: { description: "Connected accounts.", content: json(AccountsResponseSchema) }, 422: ref("ValidationFailed"), ...common },
  }),

  createMedia: createRoute({
    method: "post",
    path: "/media",
    operationId: "createMedia",
    tags: ["Media"],
    summary: "Upload an image",
    description:
      "Fetches `{url}` (public https on port 443; no redirects, credentials or private addresses) or decodes `{base64}` / a data URI, checks it is a static JPEG, PNG or WebP of at most 10 MB and 40 million pixels, and stores it normalised: JPEG, upright, at most 1440 x 1800, at least 320 wide, under 8 MB.",
    security,
    request: { query: NoQuerySchema, body: { required: true, content: json(MediaCreateSchema) } },
    responses: {
      201: { description: "The stored media asset.", headers: locationHeader, content: json(MediaResponseSchema) },
      400: ref("BadRequest"),
      413: ref("PayloadTooLarge"),
      415: ref("UnsupportedMediaType"),
      422: ref("ValidationFailed"),
      ...common,
    },
  }),

  getMedia: createRoute({
    method: "get",
    path: "/media/{id}",
    operationId: "getMedia",
    tags: ["Media"],
    summary: "Get a media asset",
    security,
    request: { query: NoQuerySchema, params: IdParamSchema },
    responses: { 200: { description: "The media metadata.", content: json(MediaResponseSchema) }, 404: ref("NotFound"), 422: ref("ValidationFailed"), ...common },
  }),

  createPost: createRoute({
    method: "post",
    path: "/posts",
    operationId: "createPost",
    tags: ["Posts"],
    summary: "Publish or schedule a post",
    description: [
      "Validates every target first (404 not connected, 409 reconnect needed, 422 platform rules), then prepares the images and queues one delivery per account.",
      "Without `scheduledFor` delivery is queued at once (202); with it, for that time (201). Delivery runs in the background: poll GET /posts/{id}.",
      "The Idempotency-Key makes retries safe: the same key and body replay the original post (200, `Idempotency-Replayed: true`) and never create a second one; keys are per user and stay consumed. The fingerprint treats equivalent spellings as the same body (a string accountIds and a one-element array, `#tag` and `tag`, an image URL string and `{url}`, a data URI string and `{base64}`, an omitted and an empty list, one instant with different offsets); key order and whitespace never matter.",
      "Video, carousels, stories, reels and direct messages are not supported (422).",
    ].join("\n\n"),
    security,
    request: { query: NoQuerySchema, headers: IdempotencyHeaderSchema, body: { required: true, content: json(PostCreateSchema) } },
    responses: {
      200: {
        description: "Replay of the original post for a retried key.",
        headers: z.object({ "Idempotency-Replayed": z.literal("true"), Location: z.string() }),
        content: json(PostResponseSchema),
      },
      201: { description: "Scheduled.", headers: locationHeader, content: json(PostResponseSchema) },
      202: { description: "Queued for immediate delivery.", headers: locationHeader, content: json(PostResponseSchema) },
      400: ref("BadRequest"),
      404: ref("NotFound"),
      409: ref("Conflict"),
      410: ref("Gone"),
      413: ref("PayloadTooLarge"),
      415: ref("UnsupportedMediaType"),
      422: ref("ValidationFailed"),
      ...common,
    },
  }),

  listPosts: createRoute({
    method: "get",
    path: "/posts",
    operationId: "listPosts",
    tags: ["Posts"],
    summary: "List posts",
    description: "Newest first. Dates are inclusive and apply to scheduledFor, else createdAt. Each parameter may be given once; a repeated or unknown parameter is refused (422 naming it).",
    security,
    request: { query: PostListQuerySchema },
    responses: { 200: { description: "One page of posts.", content: json(PostListResponseSchema) }, 422: ref("ValidationFailed"), ...common },
  }),

  getPost: createRoute({
    method: "get",
    path: "/posts/{id}",
    operationId: "getPost",
    tags: ["Posts"],
    summary: "Get a post and its delivery status",
    security,
    request: { query: NoQuerySchema, params: IdParamSchema },
    responses: { 200: { description: "The post record.", content: json(PostResponseSchema) }, 404: ref("NotFound"), 422: ref("ValidationFailed"), ...common },
  }),

  cancelPost: createRoute({
    method: "delete",
    path: "/posts/{id}",
    operationId: "cancelPost",
    tags: ["Posts"],
    summary: "Cancel a post's outstanding deliveries",
    description:
      "Cancels every target not yet published; published targets stay published and live posts are not removed from the platforms. Refused (409 POST_NOT_CANCELLABLE) while a target is being published or when the whole post is published. The record is kept.",
    security,
    request: { query: NoQuerySchema, params: IdParamSchema },
    responses: {
      200: { description: "The post after cancellation.", content: json(PostResponseSchema) },
      404: ref("NotFound"),
      409: ref("Conflict"),
      422: ref("ValidationFailed"),
      ...common,
    },
  }),
};

/** The error responses area C's routes refer to, as components (the Error schema itself is the API's, src/http/openapi.ts). */
export function registerComponents(router: OpenAPIHono<never> | OpenAPIHono<any>): void {
  const registry = router.openAPIRegistry;
  for (const [name, description] of Object.entries(ERROR_RESPONSES)) {
    const headers: Record<string, { description: string; schema: { type: "string" } }> = {};
    if (name === "RateLimited" || name === "Conflict") headers["Retry-After"] = { description: "Seconds to wait before retrying.", schema: { type: "string" } };
    if (name === "Unauthorized") headers["WWW-Authenticate"] = { description: "Bearer challenge.", schema: { type: "string" } };
    registry.registerComponent("responses", name, {
      description,
      ...(Object.keys(headers).length ? { headers } : {}),
      content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
    });
  }
}
