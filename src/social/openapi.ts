/**
 * The area C operations as `createRoute` definitions (the single description both the validators and the
 * API's OpenAPI 3.1 document are built from), with each operation's middleware, and the error responses they
 * share, as named components. Every operation is `authenticated`: a Bearer credential with the `social`
 * scope, counted against the user's read budget (GET) or write budget, before its body is read.
 *
 * @example
 * router.openapi(routes.getPost, handlers.getPost, validated(routes.getPost));
 */
import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { inlineImageBody } from "../http/inline-images";
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
import { authenticated, errorBody, json, type Access, type ErrorExample } from "../http/openapi";
import { NoQuerySchema } from "../http/validate";

export const SOCIAL_BASE_PATH = "/api/v1/social";

/** The scheduled request example's time: 3 May of next year, so the example as copied is always ahead. */
const NEXT_MAY = `${new Date().getUTCFullYear() + 1}-05-03T08:00:00Z`;

/** A whole image for the media examples, so they work as copied: 320x320 px of one orange, 107 bytes. */
const EXAMPLE_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAUAAAAFAAQMAAAD3XjfpAAAAA1BMVEXoXSrUJVYNAAAAI0lEQVR42u3BAQ0AAADCoPdPbQ8HFAAAAAAAAAAAAAAAAPwaM0AAAWQoMfMAAAAASUVORK5CYII=";
const ref = (name: ErrorResponseName) => ({ $ref: `#/components/responses/${name}` });
const security = [{ bearerAuth: [] }];
const read: Access = { scope: "social", rateLimit: "social-read" };
const write: Access = { scope: "social", rateLimit: "social-write" };

const ERROR_RESPONSES = {
  BadRequest: {
    description: "400: the body is not valid JSON, or the Idempotency-Key header is missing or malformed.",
    examples: [
      ["INVALID_JSON", "The request body is not valid JSON."],
      [
        "IDEMPOTENCY_KEY_REQUIRED",
        "The Idempotency-Key header is required: send a unique value (e.g. a UUID) per post you create, and the same value when you retry it.",
      ],
    ],
  },
  Unauthorized: {
    description: "401: missing or invalid Bearer credentials (API key or identity-provider ID token).",
    examples: [["UNAUTHORIZED", "Missing or invalid credentials: send Authorization: Bearer <API key>."]],
  },
  NotFound: {
    description: "404: the account, media, gallery item or post is not found for the key's owner.",
    examples: [
      ["POST_NOT_FOUND", 'No post with id "0b9f7a52-4c53-4c5e-9d0e-5d7c0f6a8e11" belongs to this API key\'s owner.'],
      ["MEDIA_NOT_FOUND", 'No media with id "3d6f1a2b-8c4e-4f5a-9b7c-1e2d3f4a5b6c" belongs to this API key\'s owner.'],
      ["GALLERY_ITEM_NOT_FOUND", 'No gallery item "3f6c2a1e-8b4d-4e7f-9a2b-5c1d0e9f8a7b" for this key\'s owner.'],
      [
        "ACCOUNT_NOT_FOUND",
        'No connected account "pageplatform:999" for this API key\'s owner; use ids from GET /api/v1/social/accounts.',
        [{ path: "accountIds", message: "pageplatform:999 is not connected" }],
      ],
    ],
  },
  Conflict: {
    description:
      "409: reconnect required (ACCOUNT_NEEDS_RECONNECT), key reused with another body (IDEMPOTENCY_KEY_REUSED), request still processing (REQUEST_IN_PROGRESS, with Retry-After: 10), or a post that cannot be cancelled (POST_NOT_CANCELLABLE).",
    examples: [
      [
        "ACCOUNT_NEEDS_RECONNECT",
        "Reconnect pageplatform:104238472 in the social hub before publishing to it.",
        [{ path: "accountIds", message: "pageplatform:104238472 must be reconnected" }],
      ],
      [
        "IDEMPOTENCY_KEY_REUSED",
        "This Idempotency-Key was already used for a different request body. Use a new key for a new post, or resend the original body unchanged.",
      ],
      ["REQUEST_IN_PROGRESS", "A request with this Idempotency-Key is still being processed; retry in 10 seconds with the same key and body."],
      ["POST_NOT_CANCELLABLE", "The post is already published to every target; cancelling does not remove live posts from the platforms."],
    ],
  },
  Gone: {
    description: "410: the post created with this Idempotency-Key was removed (ORIGINAL_REMOVED); the key stays consumed.",
    examples: [["ORIGINAL_REMOVED", "The post created with this Idempotency-Key has been removed; the key stays consumed."]],
  },
  PayloadTooLarge: {
    description: "413: an image over 10 MB or a request over 20 MB.",
    examples: [["PAYLOAD_TOO_LARGE", "The image is 12.4 MB; images may be at most 10 MB."]],
  },
  UnsupportedMediaType: {
    description: "415: the body is not JSON.",
    examples: [["UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with Content-Type: application/json."]],
  },
  ValidationFailed: {
    description:
      "422: invalid fields, image content, image URL, dimensions or schedule; an unknown body field, an unknown query parameter, or a query parameter given more than once. `details` names each field.",
    examples: [
      ["VALIDATION_FAILED", "scheduledFor: must be in the future", [{ path: "scheduledFor", message: "must be in the future" }]],
      ["VALIDATION_FAILED", "limit: was given 2 times; give it once", [{ path: "limit", message: "was given 2 times; give it once" }]],
      ["INVALID_IMAGE_URL", "The image URL answered with a redirect (HTTP 302); redirects are not followed. Give the final URL of the image."],
    ],
  },
  RateLimited: {
    description: "429: the per-user request budget is used up; wait Retry-After seconds.",
    examples: [["RATE_LIMITED", "Rate limit of 60 requests per minute reached; retry in 17 s."]],
  },
  Internal: {
    description: "500: an internal failure; retry the same request (with the same Idempotency-Key).",
    examples: [["INTERNAL", "Something went wrong on our side. Retry the same request; quote request id 5f0c2d9e-7b1a-4c3e-9a56-0d4b8e2f1c77 if it persists."]],
  },
} satisfies Record<string, { description: string; examples: ErrorExample[] }>;
type ErrorResponseName = keyof typeof ERROR_RESPONSES;

// ---------------------------------------------------------------- examples

const PAGE = "pageplatform:104238472";
const PHOTO = "photoplatform:17841400000000000";
const POST_ID = "0b9f7a52-4c53-4c5e-9d0e-5d7c0f6a8e11";
const MEDIA_ID = "3d6f1a2b-8c4e-4f5a-9b7c-1e2d3f4a5b6c";
const MEDIA_URL = `https://api.example.com/files/media/${MEDIA_ID}.jpg`;

const accountsExample = {
  data: {
    connectionStatus: "connected",
    accounts: [
      {
        id: PAGE,
        platform: "pageplatform",
        platformAccountId: "104238472",
        name: "Corner Shop",
        selected: true,
        canPublish: true,
        tokenStatus: "active",
        capabilities: { text: true, maxImages: 10, maxCaptionLength: 63206 },
      },
      {
        id: PHOTO,
        platform: "photoplatform",
        platformAccountId: "17841400000000000",
        name: "cornershop",
        selected: true,
        canPublish: true,
        tokenStatus: "active",
        capabilities: { text: false, maxImages: 1, maxCaptionLength: 2200 },
      },
    ],
  },
};

const mediaExample = {
  data: { id: MEDIA_ID, url: MEDIA_URL, mimeType: "image/jpeg", width: 1080, height: 1350, bytes: 184320, createdAt: "2030-05-01T09:00:00.000Z" },
};

const delivery = (accountId: string, status: string, extra: Record<string, unknown> = {}) => ({
  accountId,
  platform: accountId.split(":")[0],
  status,
  attempts: 0,
  nextAttemptAt: null,
  jobId: null,
  providerPostId: null,
  publishedAt: null,
  error: null,
  ...extra,
});

const post = (status: string, accounts: unknown[], extra: Record<string, unknown> = {}) => ({
  data: {
    id: POST_ID,
    status,
    caption: "Summer sale starts today",
    hashtags: ["summer", "sale"],
    imageUrls: [MEDIA_URL],
    images: [{ url: MEDIA_URL, width: 1080, height: 1350, mediaId: MEDIA_ID }],
    scheduledFor: null,
    createdAt: "2030-05-01T09:00:00.000Z",
    updatedAt: "2030-05-01T09:00:00.000Z",
    cancelledAt: null,
    accounts,
    ...extra,
  },
});

const queuedPost = post("queued", [
  delivery(PAGE, "pending", { nextAttemptAt: "2030-05-01T09:00:00.000Z", jobId: "msg_26hZCxZCuWyyTWPmSVBrNB" }),
  delivery(PHOTO, "pending", { nextAttemptAt: "2030-05-01T09:00:00.000Z", jobId: "msg_26hZCxZCuWyyTWPmSVBrNC" }),
]);
const scheduledPost = post("scheduled", [delivery(PAGE, "pending", { nextAttemptAt: "2030-05-03T08:00:00.000Z", jobId: "msg_26hZCxZCuWyyTWPmSVBrNB" })], {
  scheduledFor: "2030-05-03T08:00:00.000Z",
});
const publishedPost = post("partially_published", [
  delivery(PAGE, "published", { attempts: 1, providerPostId: "104238472_771522884", publishedAt: "2030-05-01T09:00:04.000Z" }),
  delivery(PHOTO, "failed", { attempts: 3, error: { code: "PLATFORM_REJECTED", message: "photoplatform refused the image: aspect ratio not supported." } }),
]);
const cancelledPost = post("cancelled", [delivery(PAGE, "cancelled")], {
  scheduledFor: "2030-05-03T08:00:00.000Z",
  cancelledAt: "2030-05-02T17:45:00.000Z",
  updatedAt: "2030-05-02T17:45:00.000Z",
});

const common = { 401: ref("Unauthorized"), 429: ref("RateLimited"), 500: ref("Internal") };

const locationHeader = z.object({
  Location: z.string().openapi({ description: "Path of the created resource." }),
});

export const routes = {
  listAccounts: authenticated(
    read,
    createRoute({
      method: "get",
      path: "/accounts",
      operationId: "listAccounts",
      tags: ["Accounts"],
      summary: "List connected accounts",
      description: "The key owner's connected pageplatform pages and photoplatform accounts, with what each accepts.",
      security,
      request: { query: NoQuerySchema },
      responses: {
        200: {
          description: "Connected accounts.",
          content: json(AccountsResponseSchema, { accounts: { summary: "A page and its photo account", value: accountsExample } }),
        },
        422: ref("ValidationFailed"),
        ...common,
      },
    }),
  ),

  createMedia: authenticated(
    write,
    createRoute({
      method: "post",
      path: "/media",
      // The image, given inline, is decoded as the body streams in (src/http/inline-images.ts).
      middleware: [
        inlineImageBody([
          { path: [], kind: "image-or-url" },
          { path: ["base64"], kind: "base64" },
        ]),
      ],
      operationId: "createMedia",
      tags: ["Media"],
      summary: "Upload an image",
      description:
        "Fetches `{url}` (public https on port 443; no redirects, credentials or private addresses) or decodes `{base64}` / a data URI, checks it is a static JPEG, PNG or WebP of at most 10 MB and 40 million pixels, and stores it normalised: JPEG, upright, at most 1440 x 1800, at least 320 wide, under 8 MB.",
      security,
      request: {
        query: NoQuerySchema,
        body: {
          required: true,
          content: json(MediaCreateSchema, {
            url: { summary: "An image URL", value: { url: "https://cdn.example.com/products/summer-dress.jpg" } },
            base64: { summary: "Base64 with its type (a 320x320 PNG)", value: { base64: EXAMPLE_PNG, mimeType: "image/png" } },
            dataUri: { summary: "A JSON string holding a data URI", value: `data:image/png;base64,${EXAMPLE_PNG}` },
          }),
        },
      },
      responses: {
        201: { description: "The stored media asset.", headers: locationHeader, content: json(MediaResponseSchema, { media: { value: mediaExample } }) },
        400: ref("BadRequest"),
        413: ref("PayloadTooLarge"),
        415: ref("UnsupportedMediaType"),
        422: ref("ValidationFailed"),
        ...common,
      },
    }),
  ),

  getMedia: authenticated(
    read,
    createRoute({
      method: "get",
      path: "/media/{id}",
      operationId: "getMedia",
      tags: ["Media"],
      summary: "Get a media asset",
      security,
      request: { query: NoQuerySchema, params: IdParamSchema },
      responses: {
        200: { description: "The media metadata.", content: json(MediaResponseSchema, { media: { value: mediaExample } }) },
        404: ref("NotFound"),
        422: ref("ValidationFailed"),
        ...common,
      },
    }),
  ),

  createPost: authenticated(
    write,
    createRoute({
      method: "post",
      path: "/posts",
      // Images given inline are decoded as the body streams in (src/http/inline-images.ts).
      middleware: [
        inlineImageBody([
          { path: ["images", "*"], kind: "image-or-url" },
          { path: ["images", "*", "base64"], kind: "base64" },
        ]),
      ],
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
      request: {
        query: NoQuerySchema,
        headers: IdempotencyHeaderSchema,
        body: {
          required: true,
          content: json(PostCreateSchema, {
            now: {
              summary: "Publish now to a page and its photo account",
              value: { accountIds: [PAGE, PHOTO], caption: "Summer sale starts today", hashtags: ["summer", "sale"], images: [{ mediaId: MEDIA_ID }] },
            },
            text: { summary: "A text post to one page", value: { accountIds: PAGE, caption: "We are open until 9 pm tonight." } },
            gallery: {
              summary: "An image of your gallery (area B), copied into media",
              value: { accountIds: [PAGE, PHOTO], caption: "Our serum, new this week", images: [{ galleryId: "3f6c2a1e-8b4d-4e7f-9a2b-5c1d0e9f8a7b" }] },
            },
            scheduled: {
              summary: "Scheduled, with an image URL",
              value: {
                accountIds: [PAGE],
                caption: "Weekend brunch menu",
                images: ["https://cdn.example.com/menus/brunch.jpg"],
                scheduledFor: NEXT_MAY,
              },
            },
          }),
        },
      },
      responses: {
        200: {
          description: "Replay of the original post for a retried key.",
          headers: z.object({ "Idempotency-Replayed": z.literal("true"), Location: z.string() }),
          content: json(PostResponseSchema, { replay: { summary: "The original post, as it is now", value: publishedPost } }),
        },
        201: { description: "Scheduled.", headers: locationHeader, content: json(PostResponseSchema, { scheduled: { value: scheduledPost } }) },
        202: { description: "Queued for immediate delivery.", headers: locationHeader, content: json(PostResponseSchema, { queued: { value: queuedPost } }) },
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
  ),

  listPosts: authenticated(
    read,
    createRoute({
      method: "get",
      path: "/posts",
      operationId: "listPosts",
      tags: ["Posts"],
      summary: "List posts",
      description:
        "Newest first. Dates are inclusive and apply to scheduledFor, else createdAt. Each parameter may be given once; a repeated or unknown parameter is refused (422 naming it).",
      security,
      request: { query: PostListQuerySchema },
      responses: {
        200: {
          description: "One page of posts.",
          content: json(PostListResponseSchema, {
            page: { summary: "The first page", value: { data: { items: [scheduledPost.data], total: 21, hasMore: true, limit: 1, offset: 0 } } },
          }),
        },
        422: ref("ValidationFailed"),
        ...common,
      },
    }),
  ),

  getPost: authenticated(
    read,
    createRoute({
      method: "get",
      path: "/posts/{id}",
      operationId: "getPost",
      tags: ["Posts"],
      summary: "Get a post and its delivery status",
      security,
      request: { query: NoQuerySchema, params: IdParamSchema },
      responses: {
        200: {
          description: "The post record.",
          content: json(PostResponseSchema, {
            queued: { summary: "Queued", value: queuedPost },
            delivered: { summary: "Delivered to one target; the other failed", value: publishedPost },
          }),
        },
        404: ref("NotFound"),
        422: ref("ValidationFailed"),
        ...common,
      },
    }),
  ),

  cancelPost: authenticated(
    write,
    createRoute({
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
        200: { description: "The post after cancellation.", content: json(PostResponseSchema, { cancelled: { value: cancelledPost } }) },
        404: ref("NotFound"),
        409: ref("Conflict"),
        422: ref("ValidationFailed"),
        ...common,
      },
    }),
  ),
};

/** The error responses area C's routes refer to, as components (the Error schema itself is the API's, src/http/openapi.ts). */
// biome-ignore lint/suspicious/noExplicitAny: any router of the app, whatever its environment type
export function registerComponents(router: OpenAPIHono<never> | OpenAPIHono<any>): void {
  const registry = router.openAPIRegistry;
  for (const [name, { description, examples }] of Object.entries(ERROR_RESPONSES)) {
    const headers: Record<string, { description: string; schema: { type: "string" } }> = {};
    if (name === "RateLimited" || name === "Conflict") headers["Retry-After"] = { description: "Seconds to wait before retrying.", schema: { type: "string" } };
    if (name === "Unauthorized") headers["WWW-Authenticate"] = { description: "Bearer challenge.", schema: { type: "string" } };
    registry.registerComponent("responses", name, {
      description,
      ...(Object.keys(headers).length ? { headers } : {}),
      content: {
        "application/json": {
          schema: { $ref: "#/components/schemas/Error" },
          examples: Object.fromEntries(
            (examples as ErrorExample[]).map(([code, message, details], i) => [
              `${code}_${i + 1}`,
              { summary: code, value: errorBody(code, message, details) },
            ]),
          ),
        },
      },
    });
  }
}
