/**
 * Area C request and response schemas, written from section C of spec/interface.md. The same objects validate
 * requests (through @hono/zod-openapi's validators) and generate the OpenAPI 3.1 document, so the document
 * cannot drift from what the API accepts. Request schemas are pure (no transforms, no clock): the
 * normalisation of a valid submission and every time- or database-dependent rule live in posts.ts.
 *
 * @example
 * const parsed = PostCreateSchema.safeParse(body);
 */
import { z } from "@hono/zod-openapi";
import { wholeNumberParam, WELL_FORMED } from "../http/validate";
import { PLATFORMS } from "./accounts";

export const POST_STATUSES = ["scheduled", "queued", "publishing", "published", "partially_published", "failed", "cancelled"] as const;
export type PostStatus = (typeof POST_STATUSES)[number];

export const DELIVERY_STATUSES = ["pending", "publishing", "published", "failed", "cancelled"] as const;

export const IMAGE_MIME_TYPES = ["image/jpeg", "image/png", "image/webp"] as const;

export const MAX_TARGETS = 20;
export const MAX_IMAGES = 10;
export const LIST_DEFAULT_LIMIT = 20;
export const LIST_MAX_LIMIT = 100;
export const LIST_MAX_OFFSET = 10_000;

// Control characters cannot be stored in Postgres text (NUL) or are never meaningful in an id.
const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;

// ---------------------------------------------------------------- accounts

export const CapabilitiesSchema = z
  .object({
    text: z.boolean().openapi({ description: "Whether a post without images is accepted." }),
    maxImages: z.number().int(),
    maxCaptionLength: z.number().int().openapi({ description: "Characters (Unicode code points), hashtags included." }),
  })
  .openapi("Capabilities");

export const AccountSchema = z
  .object({
    id: z.string().openapi({ example: "pageplatform:104238472", description: "`<platform>:<platform_account_id>`; stable across reconnection." }),
    platform: z.enum(PLATFORMS),
    platformAccountId: z.string(),
    name: z.string().openapi({ description: "Human label; never an identifier." }),
    selected: z.boolean(),
    canPublish: z.boolean().openapi({ description: "Connection readiness; the platform may still refuse a publish." }),
    tokenStatus: z.string().openapi({ example: "active" }),
    capabilities: CapabilitiesSchema,
  })
  .openapi("Account");

export const AccountsResponseSchema = z
  .object({
    data: z.object({
      connectionStatus: z.string().openapi({ example: "connected" }),
      accounts: z.array(AccountSchema),
    }),
  })
  .openapi("AccountsResponse");

// ---------------------------------------------------------------- media

export const MediaSchema = z
  .object({
    id: z.uuid(),
    url: z.string().openapi({ description: "The prepared JPEG, served by this service or the bucket." }),
    mimeType: z.literal("image/jpeg"),
    width: z.number().int(),
    height: z.number().int(),
    bytes: z.number().int(),
    createdAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("Media");

export const MediaResponseSchema = z.object({ data: MediaSchema }).openapi("MediaResponse");

const UrlImageSchema = z
  .strictObject({
    url: z
      .string()
      .min(1, { error: "must not be empty" })
      .openapi({ description: "Public https URL served on port 443; no redirects, no credentials.", example: "https://cdn.example.com/shoe.jpg" }),
  })
  .openapi("UrlImage");

const Base64ImageSchema = z
  .strictObject({
    base64: z.string().min(1, { error: "must not be empty" }).openapi({ description: "Bare Base64 (standard or URL-safe) or a data URI." }),
    mimeType: z.enum(IMAGE_MIME_TYPES).optional().openapi({ description: "Informative only: the real format is read from the bytes." }),
  })
  .openapi("Base64Image");

const MediaIdImageSchema = z
  .strictObject({ mediaId: z.string().min(1, { error: "must not be empty" }).openapi({ description: "Id of a media asset of the same owner (POST /media)." }) })
  .openapi("MediaIdImage");

const GalleryIdImageSchema = z
  .strictObject({
    galleryId: z.string().min(1, { error: "must not be empty" }).openapi({
      description: "Id of an image of your gallery (GET /api/image/gallery); copied into media, so deleting the item later does not change the post.",
    }),
  })
  .openapi("GalleryIdImage");

export const MediaCreateSchema = z
  .union(
    [
      UrlImageSchema,
      Base64ImageSchema,
      z.string().min(1, { error: "must not be empty" }).openapi({
        description: "A JSON string holding a data URI (a bare Base64 string or an https URL is accepted too).",
        example: "data:image/png;base64,iVBORw0KGgo...",
      }),
    ],
    { error: "send {url}, {base64, mimeType?} or a JSON string holding a data URI" },
  )
  .openapi("MediaCreate");
export type MediaCreate = z.infer<typeof MediaCreateSchema>;

// ---------------------------------------------------------------- posts

const AccountIdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(NO_CONTROL, { error: "must not contain control characters" })
  .refine(WELL_FORMED.check, { error: WELL_FORMED.message })
  .openapi({ example: "photoplatform:17841400000000000" });

export const ImageItemSchema = z
  .union(
    [
      z.string().min(1, { error: "must not be empty" }).openapi({ description: "An https URL, a data URI, or bare Base64." }),
      UrlImageSchema,
      Base64ImageSchema,
      MediaIdImageSchema,
      GalleryIdImageSchema,
    ],
    { error: "must be an https URL, a Base64 or data URI string, {url}, {base64, mimeType?}, {mediaId} or {galleryId}" },
  )
  .openapi("ImageItem");
export type ImageItem = z.infer<typeof ImageItemSchema>;

const HashtagSchema = z
  .string()
  .regex(/^#?[\p{L}\p{M}\p{N}_]{1,100}$/u, { error: "must be one word of letters, digits or underscores (1 to 100), with or without a leading #" })
  // The generator would print the regex flags into the pattern; JSON Schema patterns are Unicode-aware already.
  .openapi({ pattern: "^#?[\\p{L}\\p{M}\\p{N}_]{1,100}$" });

export const PostCreateSchema = z
  .strictObject({
    accountIds: z
      .union(
        [
          AccountIdSchema,
          z
            .array(AccountIdSchema)
            .min(1, { error: "must name at least one account" })
            .max(MAX_TARGETS, { error: `must name at most ${MAX_TARGETS} accounts` }),
        ],
        {
          error: `must be an account id or an array of 1 to ${MAX_TARGETS} account ids`,
        },
      )
      .refine((v) => typeof v === "string" || new Set(v).size === v.length, { error: "must not name the same account twice" })
      .openapi({ description: `One account id or 1 to ${MAX_TARGETS} distinct ids from GET /accounts.` }),
    caption: z
      .string()
      .regex(/^[^\u0000]*$/, { error: "must not contain NUL characters" })
      .refine(WELL_FORMED.check, { error: WELL_FORMED.message })
      .optional()
      .openapi({ description: "Post text. Its length limit is the target platform's, counted with the hashtags as posted." }),
    hashtags: z
      .array(HashtagSchema)
      .max(100, { error: "must hold at most 100 hashtags" })
      .optional()
      .openapi({
        description: "Appended to the caption as `#tag` words, space-separated, after a blank line. photoplatform accepts at most 30.",
        example: ["summer", "#sale"],
      }),
    images: z
      .array(ImageItemSchema)
      .max(MAX_IMAGES, { error: `must hold at most ${MAX_IMAGES} images` })
      .optional()
      .openapi({ description: "pageplatform: up to 10; photoplatform: exactly 1 (aspect ratio 4:5 to 1.91:1 after normalisation)." }),
    scheduledFor: z.iso
      .datetime({
        offset: true,
        error: (issue) =>
          `must be an ISO-8601 timestamp with Z or an explicit offset, e.g. ${aWeekAhead()}${issue.input === null ? " (leave it out to publish now)" : ""}`,
      })
      .optional()
      .openapi({ description: "A future instant; omit for immediate delivery." }),
  })
  .openapi("PostCreate");
export type PostCreate = z.infer<typeof PostCreateSchema>;

/** 09:30 UTC a week from now: an example `scheduledFor` that is in the future whenever it is read. */
function aWeekAhead(): string {
  const day = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10);
  return `${day}T09:30:00Z`;
}

export const IdempotencyHeaderSchema = z.object({
  "Idempotency-Key": z.string().openapi({
    param: { name: "Idempotency-Key", in: "header", required: true, example: "5f0c9a4e-3b7d-4f7e-9c1a-2d8e6b4a1f00" },
    description: "1 to 255 visible ASCII characters (a UUID is a good choice), unique per post you mean to create; an RFC 8941 quoted string is accepted too.",
  }),
});

const DeliverySchema = z
  .object({
    accountId: z.string(),
    platform: z.enum(PLATFORMS),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    nextAttemptAt: z.string().nullable().openapi({ format: "date-time", description: "When the target is next due; null once final." }),
    jobId: z.string().nullable(),
    providerPostId: z.string().nullable(),
    publishedAt: z.string().nullable().openapi({ format: "date-time" }),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .openapi("Delivery");

export const PostImageSchema = z
  .object({ url: z.string(), width: z.number().int(), height: z.number().int(), mediaId: z.string().nullable() })
  .openapi("PostImage");

export const PostSchema = z
  .object({
    id: z.uuid(),
    status: z
      .enum(POST_STATUSES)
      .openapi({ description: "Derived from the targets: scheduled, queued, publishing, published, partially_published, failed, cancelled." }),
    caption: z.string(),
    hashtags: z.array(z.string()).openapi({ description: "Without the leading #." }),
    imageUrls: z.array(z.string()),
    images: z.array(PostImageSchema),
    scheduledFor: z.string().nullable().openapi({ format: "date-time" }),
    createdAt: z.string().openapi({ format: "date-time" }),
    updatedAt: z.string().openapi({ format: "date-time" }),
    cancelledAt: z.string().nullable().openapi({ format: "date-time" }),
    accounts: z.array(DeliverySchema),
  })
  .openapi("Post");
export type PostRecord = z.infer<typeof PostSchema>;

export const PostResponseSchema = z.object({ data: PostSchema }).openapi("PostResponse");

const DateFilter = z.string().refine(isDateOrTimestamp, { error: "must be an ISO-8601 date (2030-05-01) or timestamp with Z or an offset" }).optional();

/** Each parameter at most once; any other parameter is refused (src/http/validate.ts). */
export const PostListQuerySchema = z.strictObject({
  status: z
    .enum(POST_STATUSES, { error: `must be one of ${POST_STATUSES.join(", ")}` })
    .optional()
    .openapi({ param: { example: "scheduled" } }),
  platform: z
    .enum(PLATFORMS, { error: `must be one of ${PLATFORMS.join(", ")}` })
    .optional()
    .openapi({ param: { example: "pageplatform" } }),
  fromDate: DateFilter.openapi({
    description: "ISO-8601 date or timestamp with Z or an offset; inclusive; compared with scheduledFor, else createdAt. A date means its start (UTC).",
    param: { example: "2030-05-01" },
  }),
  toDate: DateFilter.openapi({
    description: "ISO-8601 date or timestamp with Z or an offset; inclusive; a date means its whole day (UTC).",
    param: { example: "2030-05-31" },
  }),
  limit: wholeNumberParam(1, LIST_MAX_LIMIT)
    .optional()
    .openapi({
      type: "integer",
      minimum: 1,
      maximum: LIST_MAX_LIMIT,
      description: `1 to ${LIST_MAX_LIMIT}; default ${LIST_DEFAULT_LIMIT}.`,
      param: { example: 20 },
    }),
  offset: wholeNumberParam(0, LIST_MAX_OFFSET)
    .optional()
    .openapi({ type: "integer", minimum: 0, maximum: LIST_MAX_OFFSET, description: `0 to ${LIST_MAX_OFFSET}; default 0.`, param: { example: 0 } }),
});
export type PostListQuery = z.infer<typeof PostListQuerySchema>;

export const PostListResponseSchema = z
  .object({
    data: z.object({
      items: z.array(PostSchema),
      total: z.number().int(),
      hasMore: z.boolean(),
      limit: z.number().int(),
      offset: z.number().int(),
    }),
  })
  .openapi("PostList");

export const IdParamSchema = z.object({
  id: z.string().openapi({
    param: { name: "id", in: "path", example: "0b9f7a52-4c53-4c5e-9d0e-5d7c0f6a8e11" },
    description: "The id returned when it was created (a UUID); ids of other users' resources are not found (404).",
  }),
});

export function isDateOrTimestamp(value: string): boolean {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return z.iso.date().safeParse(value).success;
  return z.iso.datetime({ offset: true }).safeParse(value).success;
}
