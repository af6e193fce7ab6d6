/**
 * Area B request and response schemas, written from section B of the contract. They validate the POST body
 * (shape, enums, ranges, text lengths) and describe the API in its OpenAPI document. The rules that need the
 * configured catalogue (a known promptId, a resolution the model supports, the model's batch size) are
 * checked in request.ts.
 *
 * @example
 * const body = PhotoRequestSchema.parse(json);
 */
import { z } from "@hono/zod-openapi";
import { WELL_FORMED, wholeNumberParam } from "../http/validate";
import { ASPECT_RATIOS, LOGO_PLACEMENTS, MODEL_SLUGS, RESOLUTIONS } from "./types";

/** 10 MB of image as Base64 plus a data-URI prefix; the 20 MB body limit bounds the sum. */
const MAX_INLINE_CHARS = 14_000_100;
const MAX_URL_CHARS = 2048;
export const MAX_PRODUCTS = 10;
export const MAX_OVERLAY_TEXT = 80;
export const MAX_MARKETING_TEXT = 240;
export const MAX_SCENE_PROMPT = 2000;

// NUL and other control characters are never meaningful in these fields (Postgres cannot even store NUL).
const NO_CONTROL = /^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]*$/;
const text = (max: number) =>
  z
    .string()
    .trim()
    .min(1, "must not be empty")
    .max(max, `must be at most ${max} characters`)
    .regex(NO_CONTROL, "must not contain control characters")
    .refine(WELL_FORMED.check, WELL_FORMED.message);

const httpsUrl = z
  .string()
  .max(MAX_URL_CHARS, `must be at most ${MAX_URL_CHARS} characters`)
  .refine((v) => /^https:\/\//i.test(v) && URL.canParse(v), "must be a public https:// URL")
  .refine(WELL_FORMED.check, WELL_FORMED.message);

const dataUri = z
  .string()
  .max(MAX_INLINE_CHARS, "is larger than 10 MB of image")
  .refine((v) => /^data:image\/(png|jpeg|jpg|webp);base64,/i.test(v.slice(0, 40)), "must be a data URI: data:image/png|jpeg|webp;base64,...");

/** A data URI or a public https URL (logo and reference images). */
const imageRef = z
  .string()
  .max(MAX_INLINE_CHARS, "is larger than 10 MB of image")
  .refine(
    (v) => (v.startsWith("data:") ? dataUri.safeParse(v).success : httpsUrl.safeParse(v).success),
    "must be a data URI (data:image/png;base64,...) or a public https:// URL",
  );

export const ProductImageSchema = z
  .object({
    dataUrl: dataUri.optional().openapi({ description: "Base64 data URI of a JPEG, PNG or WebP. One of dataUrl or url." }),
    url: httpsUrl.optional().openapi({ description: "Public https URL of a JPEG, PNG or WebP. One of dataUrl or url." }),
    label: text(100).optional().openapi({ description: "Your identifier for this product; echoed in the result." }),
    prompt: text(500).optional().openapi({ description: "Extra instructions for this product only." }),
  })
  .strict()
  .superRefine((item, ctx) => {
    const given = Number(item.dataUrl !== undefined) + Number(item.url !== undefined);
    if (given !== 1) ctx.addIssue({ code: "custom", path: given ? ["url"] : ["dataUrl"], message: "give exactly one of dataUrl or url" });
  })
  .openapi("ProductImage");

export const PhotoRequestSchema = z
  .object({
    productImages: z
      .array(ProductImageSchema)
      .min(1, "must hold at least one product image")
      .max(MAX_PRODUCTS, `must hold at most ${MAX_PRODUCTS} product images`),
    promptId: z
      .string()
      .max(64, "is not a known template id")
      .optional()
      .openapi({ example: "studio-white-sweep", description: "A template id from GET /api/image/product-photography-prompts." }),
    scenePrompt: text(MAX_SCENE_PROMPT).optional().openapi({ description: "Free-text scene; alone, or with promptId to adjust the template." }),
    logoImage: imageRef.optional().openapi({ description: "Data URI or public https URL; PNG transparency is kept." }),
    logoPlacement: z.enum(LOGO_PLACEMENTS).optional().openapi({ description: "Default bottom-right." }),
    logoSize: z
      .number({ error: "must be a number from 0.1 to 0.8" })
      .min(0.1, "must be at least 0.1")
      .max(0.8, "must be at most 0.8")
      .optional()
      .openapi({ description: "Logo width as a fraction of the image width; 0.1 to 0.8, default 0.15." }),
    referenceImage: imageRef.optional().openapi({ description: "Data URI or public https URL guiding style, lighting and palette." }),
    overlayText: text(MAX_OVERLAY_TEXT).optional().openapi({ description: "Short prominent text (banner, badge, tagline), drawn by the service." }),
    marketingText: text(MAX_MARKETING_TEXT).optional().openapi({ description: "Longer slogan, drawn by the service." }),
    model: z.enum(MODEL_SLUGS).optional().openapi({ description: "Default pro." }),
    resolution: z.enum(RESOLUTIONS).optional().openapi({ description: "Long edge: 1K 1024, 2K 1536, 4K 2048 px. Default: the model's highest." }),
    aspectRatio: z.enum(ASPECT_RATIOS).optional().openapi({ description: "Default 1:1." }),
    outputResult: z.enum(["base64", "url"]).optional().openapi({ description: "base64 (default): photoDataUri; url: imageUrl and thumbnailUrl." }),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.promptId === undefined && body.scenePrompt === undefined) {
      ctx.addIssue({ code: "custom", path: ["promptId"], message: "give promptId or scenePrompt (or both)" });
    }
  })
  .openapi("ProductPhotographyRequest");

export type PhotoRequestBody = z.infer<typeof PhotoRequestSchema>;

const Money = z.object({ credits: z.number().int(), usd: z.number(), inr: z.number() }).openapi("Money");

export const TemplateSchema = z
  .object({ id: z.string(), title: z.string(), categoryId: z.string(), categoryTitle: z.string(), demoImageUrl: z.string().url() })
  .openapi("SceneTemplate");

export const ModelOptionSchema = z
  .object({
    model: z.enum(MODEL_SLUGS),
    modelId: z.string(),
    name: z.string(),
    provider: z.string(),
    description: z.string(),
    badge: z.string(),
    supportedResolutions: z.array(z.enum(RESOLUTIONS)),
    supportsVariableResolution: z.boolean(),
    supportsBatchGeneration: z.boolean(),
    maxBatchSize: z.number().int(),
    defaultResolution: z.enum(RESOLUTIONS),
    estimatedCost: Money,
    pricingPerResolution: z.partialRecord(z.enum(RESOLUTIONS), Money),
  })
  .openapi("ImageModelOption");

const ItemError = z.object({ code: z.string(), message: z.string() });

export const PhotoItemSchema = z
  .object({
    label: z.string().nullable(),
    status: z.enum(["succeeded", "failed"]),
    imageUrl: z.string().optional(),
    thumbnailUrl: z.string().optional(),
    photoDataUri: z.string().optional(),
    width: z.number().int().optional(),
    height: z.number().int().optional(),
    error: ItemError.optional(),
  })
  .openapi("ProductPhotoItem");

const BalanceAfter = z.number().int().optional().openapi({ description: "Your credit balance after this request was charged." });
const Refunded = Money.optional().openapi({ description: "What the failed items had held and got back at once (they are not charged)." });

export const PhotoResultSchema = z
  .union([
    z.object({ imageUrl: z.string(), thumbnailUrl: z.string(), width: z.number().int(), height: z.number().int(), cost: Money, balance: BalanceAfter }),
    z.object({ photoDataUri: z.string(), width: z.number().int(), height: z.number().int(), cost: Money, balance: BalanceAfter }),
    z.object({ images: z.array(PhotoItemSchema), cost: Money, refunded: Refunded, balance: BalanceAfter }),
  ])
  .openapi("ProductPhotographyResult");

export const JobSchema = z
  .object({
    id: z.string().uuid(),
    status: z.enum(["queued", "running", "succeeded", "failed"]),
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
    result: PhotoResultSchema.optional(),
    error: ItemError.optional(),
  })
  .openapi("ProductPhotographyJob");

// ---------------------------------------------------------------- credits and gallery

export const PAGE_DEFAULT_LIMIT = 20;
export const PAGE_MAX_LIMIT = 100;
export const PAGE_MAX_OFFSET = 10_000;

const pageParams = {
  limit: wholeNumberParam(1, PAGE_MAX_LIMIT)
    .optional()
    .openapi({
      type: "integer",
      minimum: 1,
      maximum: PAGE_MAX_LIMIT,
      description: `1 to ${PAGE_MAX_LIMIT}; default ${PAGE_DEFAULT_LIMIT}.`,
      param: { example: 20 },
    }),
  offset: wholeNumberParam(0, PAGE_MAX_OFFSET)
    .optional()
    .openapi({ type: "integer", minimum: 0, maximum: PAGE_MAX_OFFSET, description: `0 to ${PAGE_MAX_OFFSET}; default 0.`, param: { example: 0 } }),
};

export const PageQuerySchema = z.strictObject(pageParams);

function isDateOrTimestamp(value: string): boolean {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return z.iso.date().safeParse(value).success;
  return z.iso.datetime({ offset: true }).safeParse(value).success;
}

const DateFilter = z.string().refine(isDateOrTimestamp, { error: "must be an ISO-8601 date (2030-05-01) or timestamp with Z or an offset" }).optional();

export const GalleryQuerySchema = z.strictObject({
  templateId: z
    .string()
    .max(64, { error: "must be at most 64 characters" })
    .optional()
    .openapi({ param: { example: "studio-plinth" }, description: "Only images made from this template." }),
  fromDate: DateFilter.openapi({
    description: "ISO-8601 date or timestamp with Z or an offset; inclusive; compared with createdAt. A date means its start (UTC).",
    param: { example: "2030-05-01" },
  }),
  toDate: DateFilter.openapi({
    description: "ISO-8601 date or timestamp with Z or an offset; inclusive; a date means its whole day (UTC).",
    param: { example: "2030-05-31" },
  }),
  ...pageParams,
});
export type GalleryQueryInput = z.infer<typeof GalleryQuerySchema>;

const Page = { total: z.number().int(), hasMore: z.boolean(), limit: z.number().int(), offset: z.number().int() };

export const MovementSchema = z
  .object({
    id: z.number().int(),
    kind: z.enum(["grant", "charge"]).openapi({ description: "grant: sign-up grant or top-up; charge: one delivered image." }),
    amount: z.number().int().openapi({ description: "Credits; negative for a charge." }),
    balanceAfter: z.number().int(),
    jobId: z.string().nullable(),
    model: z.string().nullable(),
    resolution: z.string().nullable(),
    note: z.string().nullable(),
    createdAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("CreditMovement");

export const CreditsSchema = z
  .object({
    balance: z.number().int().openapi({ description: "Credits: the sum of the movements." }),
    reserved: z.number().int().openapi({ description: "Held for images being made; charged or given back when each is done." }),
    available: z.number().int().openapi({ description: "balance - reserved: what a new request may spend." }),
    movements: z.object({ items: z.array(MovementSchema), ...Page }),
  })
  .openapi("Credits");

export const GalleryItemSchema = z
  .object({
    id: z.string().uuid(),
    label: z.string().nullable(),
    templateId: z.string().nullable(),
    scenePrompt: z.string().nullable(),
    model: z.string(),
    resolution: z.string(),
    aspectRatio: z.string(),
    width: z.number().int(),
    height: z.number().int(),
    cost: Money,
    imageUrl: z.string(),
    thumbnailUrl: z.string(),
    createdAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("GalleryItem");

export const GalleryListSchema = z.object({ items: z.array(GalleryItemSchema), ...Page }).openapi("GalleryList");

export const GalleryDeletedSchema = z
  .object({
    id: z.string().uuid(),
    deleted: z.literal(true),
    filesKept: z.boolean().openapi({ description: "true when a post names the image's URL, so its files stay." }),
  })
  .openapi("GalleryItemDeleted");
