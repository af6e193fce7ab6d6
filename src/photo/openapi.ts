/**
 * Area B's operations as `createRoute` definitions, part of the API's one OpenAPI 3.1 document (served at
 * /openapi.json; src/http/api-document.ts), with each operation's middleware. The catalogue and the demo
 * images are public; generating and polling are `authenticated` (key, then the `photo` or `photo-read` rate
 * limit, before the body is looked at). The error responses use the one error envelope (src/http/openapi.ts).
 *
 * @example
 * router.openapi(photoRoutes.createPhoto, handlers.createPhoto, validationHook(photoRoutes.createPhoto));
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { etag } from "hono/etag";
import type { AppEnv } from "../http/env";
import { ApiError } from "../http/errors";
import { inlineImageBody } from "../http/inline-images";
import { isJsonContentType } from "../http/json";
import { authenticated, errorResponse, internalError, json, type ErrorExample } from "../http/openapi";
import { NoQuerySchema } from "../http/validate";
import {
  CreditsSchema,
  GalleryDeletedSchema,
  GalleryItemSchema,
  GalleryListSchema,
  GalleryQuerySchema,
  JobSchema,
  ModelOptionSchema,
  PageQuerySchema,
  PhotoRequestSchema,
  PhotoResultSchema,
  TemplateSchema,
} from "./schemas";

export const PHOTO_BASE_PATH = "/api/image";

const cacheHeaders = z.object({ ETag: z.string(), "Cache-Control": z.string() });
const security = [{ bearerAuth: [] }];

// ---------------------------------------------------------------- examples

const BASE = "https://api.example.com";
const JOB_ID = "7c1e4b2a-9d3f-4a6e-b8c5-2f0d1e3a4b5c";
/** What a malformed job id is told (the 404 is for a well-formed id this owner has no job under). */
const JOB_ID_MESSAGE = "must be a job id: the UUID `id` of a 202 answer (its Location ends with it)";
const cost = (credits: number, usd: number, inr: number) => ({ credits, usd, inr });

const template = (id: string, title: string, categoryId: string, categoryTitle: string) => ({
  id,
  title,
  categoryId,
  categoryTitle,
  demoImageUrl: `${BASE}/api/image/demo/${id}.png`,
});

const standardModel = {
  model: "standard",
  modelId: "google/nano-banana",
  name: "Standard",
  provider: "replicate",
  description: "Fast bulk generation at 1K, up to 10 products per request.",
  badge: "Bulk",
  supportedResolutions: ["1K"],
  supportsVariableResolution: false,
  supportsBatchGeneration: true,
  maxBatchSize: 10,
  defaultResolution: "1K",
  estimatedCost: cost(4, 0.039, 3.45),
  pricingPerResolution: { "1K": cost(4, 0.039, 3.45) },
};

const image = (n: number) => ({
  imageUrl: `${BASE}/files/photo/${JOB_ID}/${n}.png`,
  thumbnailUrl: `${BASE}/files/photo/${JOB_ID}/${n}-thumb.jpg`,
});

const noQuery: ErrorExample = [
  "VALIDATION_FAILED",
  "page: is not a known query parameter; this operation takes none",
  [{ path: "page", message: "is not a known query parameter; this operation takes none" }],
];
const unauthorized = errorResponse("Missing or invalid Bearer credentials.", [
  "UNAUTHORIZED",
  "Missing or invalid credentials: send Authorization: Bearer <API key>.",
]);

const insufficientCredits = errorResponse(
  "The request's price (every item of a batch, priced up front) is more than the credits available; nothing was generated.",
  [
    "INSUFFICIENT_CREDITS",
    "This request costs 60 credits (4 images of pro at 2K, 15 each) and 45 of your 45 credits are available. Ask the service's operator for more credits; GET /api/image/credits shows your balance.",
    [
      { path: "cost", message: "60 credits" },
      { path: "balance", message: "45 credits, 45 available" },
    ],
  ],
);
const imageRemoved = errorResponse("A replay or job whose base64 image was deleted from the gallery since.", [
  "ORIGINAL_REMOVED",
  "An image of this request was deleted from the gallery; its answer cannot be given again.",
]);
const GALLERY_ID = "3f6c2a1e-8b4d-4e7f-9a2b-5c1d0e9f8a7b";
const GALLERY_ID_MESSAGE = "must be a gallery item id: the UUID `id` of GET /api/image/gallery";
const galleryItem = {
  id: GALLERY_ID,
  label: "serum",
  templateId: "studio-plinth",
  scenePrompt: null,
  model: "pro",
  resolution: "2K",
  aspectRatio: "4:5",
  width: 1229,
  height: 1536,
  cost: cost(15, 0.15, 13.28),
  imageUrl: `${BASE}/files/photo/out/${JOB_ID}/0.png`,
  thumbnailUrl: `${BASE}/files/photo/out/${JOB_ID}/0-thumb.jpg`,
  createdAt: "2030-05-01T09:30:41.000Z",
};
const galleryIdParams = z.object({
  id: z
    .string()
    .uuid({ error: GALLERY_ID_MESSAGE })
    .openapi({ param: { name: "id", in: "path", example: GALLERY_ID } }),
});
const galleryNotFound = errorResponse("No gallery item with this id for this key's owner.", [
  "GALLERY_ITEM_NOT_FOUND",
  `No gallery item "${GALLERY_ID}" for this key's owner.`,
]);
const badGalleryId = errorResponse("The id is not a UUID, or a query parameter was given.", [
  "VALIDATION_FAILED",
  `id: ${GALLERY_ID_MESSAGE}`,
  [{ path: "id", message: GALLERY_ID_MESSAGE }],
]);
const readLimited = errorResponse("Rate limit reached; wait Retry-After seconds.", [
  "RATE_LIMITED",
  "Rate limit of 300 requests per minute reached; retry in 8 s.",
]);

/** The contract says a non-JSON body is 415; Hono's json validator would otherwise skip it. */
const jsonOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!isJsonContentType(c.req.header("content-type"))) {
    throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with Content-Type: application/json.");
  }
  await next();
};

/** Images given inline are decoded as the body streams in (src/http/inline-images.ts). */
const inlineImages = inlineImageBody([
  { path: ["productImages", "*", "dataUrl"], kind: "base64" },
  { path: ["logoImage"], kind: "image-or-url" },
  { path: ["referenceImage"], kind: "image-or-url" },
]);

export const photoRoutes = {
  listTemplates: createRoute({
    method: "get",
    path: "/product-photography-prompts",
    // A strong ETag from the answer's digest, and 304 when If-None-Match has it.
    middleware: [etag()],
    operationId: "listSceneTemplates",
    tags: ["Product photography"],
    summary: "List scene templates",
    description:
      "Studio setups, lifestyle scenes, outdoor scenes, holiday themes and e-commerce backgrounds, each with a demo image made by the service. Public; cacheable for an hour (ETag).",
    request: { query: NoQuerySchema },
    responses: {
      200: {
        description: "The templates.",
        headers: cacheHeaders,
        content: json(z.object({ data: z.array(TemplateSchema) }), {
          templates: {
            summary: "Two of the templates",
            value: {
              data: [
                template("studio-white-sweep", "Seamless White Sweep", "studio", "Studio"),
                template("studio-grey-gradient", "Soft Grey Gradient", "studio", "Studio"),
              ],
            },
          },
        }),
      },
      304: { description: "Not modified." },
      422: errorResponse("A query parameter was given; this operation takes none.", noQuery),
      500: internalError,
    },
  }),
  listModels: createRoute({
    method: "get",
    path: "/image-model-options",
    middleware: [etag()],
    operationId: "listImageModels",
    tags: ["Product photography"],
    summary: "List image models and prices",
    description:
      "pro (highest quality, default), standard (1K bulk, batches up to 10) and flash (balanced), with resolutions, batch sizes and the estimated cost per image at each resolution in credits, USD and INR. Public; cacheable for an hour (ETag).",
    request: { query: NoQuerySchema },
    responses: {
      200: {
        description: "The models.",
        headers: cacheHeaders,
        content: json(z.object({ data: z.array(ModelOptionSchema) }), { standard: { summary: "One of the models", value: { data: [standardModel] } } }),
      },
      304: { description: "Not modified." },
      422: errorResponse("A query parameter was given; this operation takes none.", noQuery),
      500: internalError,
    },
  }),
  createPhoto: authenticated(
    { scope: "photo", rateLimit: "photo" },
    createRoute({
      method: "post",
      path: "/product-photography",
      middleware: [jsonOnly, inlineImages],
      operationId: "createProductPhoto",
      tags: ["Product photography"],
      summary: "Generate product photos",
      description:
        "Puts each product image into the scene (template and/or free text), then draws the logo, overlayText and marketingText itself at the exact placement and size. One product answers `{data:{photoDataUri}}` or `{data:{imageUrl, thumbnailUrl}}`; several answer `{data:{images:[{label, status, ...}]}}` where a failed product carries its own `error`. Optional `Idempotency-Key` replays the stored result (no second charge). `Prefer: respond-async` answers 202 with the Location of a job to poll.",
      security,
      request: {
        query: NoQuerySchema,
        headers: z.object({
          "Idempotency-Key": z
            .string()
            .optional()
            .openapi({
              param: { example: "a3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d" },
              description: "1 to 255 visible characters; the same key with the same body replays, with another body is 409.",
            }),
          Prefer: z
            .string()
            .optional()
            .openapi({ param: { example: "respond-async" }, description: "`respond-async`: answer 202 at once and run the generation as a job." }),
        }),
        body: {
          required: true,
          content: json(PhotoRequestSchema, {
            template: {
              summary: "One product on a template, as hosted URLs",
              value: {
                productImages: [{ url: "https://cdn.example.com/products/mug.jpg", label: "mug" }],
                promptId: "studio-white-sweep",
                outputResult: "url",
              },
            },
            scene: {
              summary: "A free-text scene with a logo and a tagline",
              value: {
                productImages: [{ url: "https://cdn.example.com/products/candle.png" }],
                scenePrompt: "On a rustic oak table by a window, warm morning light, dried flowers in the background",
                logoImage: "https://cdn.example.com/brand/logo.png",
                logoPlacement: "top-right",
                overlayText: "New: Amber & Oak",
                aspectRatio: "4:5",
                model: "flash",
              },
            },
            batch: {
              summary: "Three products at once with the standard model",
              value: {
                productImages: [
                  { url: "https://cdn.example.com/products/red-sneaker.jpg", label: "red" },
                  { url: "https://cdn.example.com/products/blue-sneaker.jpg", label: "blue" },
                  { url: "https://cdn.example.com/products/green-sneaker.jpg", label: "green", prompt: "Add a few water droplets" },
                ],
                promptId: "studio-grey-gradient",
                model: "standard",
                outputResult: "url",
              },
            },
          }),
        },
      },
      responses: {
        200: {
          description: "The generated image(s).",
          content: json(z.object({ data: PhotoResultSchema }), {
            url: {
              summary: "One product, outputResult url",
              value: { data: { ...image(1), width: 2048, height: 2048, cost: cost(15, 0.15, 13.28), balance: 85 } },
            },
            base64: {
              summary: "One product, outputResult base64 (shortened)",
              value: {
                data: { photoDataUri: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA", width: 1024, height: 1024, cost: cost(4, 0.039, 3.45), balance: 96 },
              },
            },
            batch: {
              summary: "Several products; one failed, was not charged and got its credits back",
              value: {
                data: {
                  images: [
                    { label: "red", status: "succeeded", ...image(1), width: 1024, height: 1024 },
                    { label: "blue", status: "succeeded", ...image(2), width: 1024, height: 1024 },
                    {
                      label: "green",
                      status: "failed",
                      error: { code: "INVALID_IMAGE_URL", message: "The image URL answered HTTP 404; it must answer 200 with the image." },
                    },
                  ],
                  cost: cost(8, 0.078, 6.9),
                  refunded: cost(4, 0.039, 3.45),
                  balance: 92,
                },
              },
            },
          }),
        },
        202: {
          description: "Accepted as a job (Prefer: respond-async); poll its Location.",
          content: json(z.object({ data: JobSchema }), {
            queued: { value: { data: { id: JOB_ID, status: "queued", createdAt: "2030-05-01T09:30:00.000Z", finishedAt: null } } },
          }),
        },
        400: errorResponse(
          "Invalid JSON or Idempotency-Key.",
          ["INVALID_JSON", "The request body is not valid JSON."],
          ["IDEMPOTENCY_KEY_REQUIRED", "The Idempotency-Key header must be 1 to 255 visible ASCII characters (no spaces or control characters)."],
        ),
        401: unauthorized,
        402: insufficientCredits,
        409: errorResponse(
          "Idempotency-Key reused with another body or the other Prefer: respond-async mode, or still in progress (Retry-After).",
          ["IDEMPOTENCY_KEY_REUSED", "This Idempotency-Key was used with a different request body; use a new key for a new request."],
          ["REQUEST_IN_PROGRESS", "A request with this Idempotency-Key is still being processed; retry in 10 seconds."],
        ),
        410: imageRemoved,
        413: errorResponse("An image over 10 MB or a body over 20 MB.", ["PAYLOAD_TOO_LARGE", "The image is 12.4 MB; images may be at most 10 MB."]),
        415: errorResponse("The body is not JSON.", ["UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with Content-Type: application/json."]),
        422: errorResponse(
          "Invalid fields or images, an unknown field or query parameter; `details` names each field. Also GENERATION_REFUSED when the model refused the content.",
          [
            "VALIDATION_FAILED",
            'promptId: "studio-blue" is not a template id; GET /api/image/product-photography-prompts lists them',
            [{ path: "promptId", message: '"studio-blue" is not a template id; GET /api/image/product-photography-prompts lists them' }],
          ],
          ["INVALID_IMAGE", "No product image could be used: productImages.0: The image is empty (0 bytes)."],
          [
            "GENERATION_REFUSED",
            "The image model's safety filter refused this scene; change the prompt, the product image or the reference image and try again.",
          ],
        ),
        429: errorResponse("Rate limit reached; wait Retry-After seconds.", ["RATE_LIMITED", "Rate limit of 20 requests per minute reached; retry in 31 s."]),
        500: internalError,
        502: errorResponse(
          "The image model failed (GENERATION_FAILED) or could not be reached (UPSTREAM_UNAVAILABLE); nothing was charged.",
          ["GENERATION_FAILED", "This image could not be generated because of a failure on our side; retry the request."],
          ["UPSTREAM_UNAVAILABLE", "The image model's provider is unavailable; try again shortly."],
        ),
        503: errorResponse("The image model is rate limited (UPSTREAM_RATE_LIMITED); retry later.", [
          "UPSTREAM_RATE_LIMITED",
          "The image model's provider is rate limiting this service; try again in about 20 s.",
        ]),
        504: errorResponse("The image model did not finish in time (GENERATION_TIMEOUT); nothing was charged.", [
          "GENERATION_TIMEOUT",
          "The image model did not finish within 120 s; try again, or pick a faster model or a lower resolution.",
        ]),
      },
    }),
  ),
  demoImage: createRoute({
    method: "get",
    // Hono's pattern for the last segment; the document writes the path `/demo/{file}`.
    path: "/demo/{file{[a-z0-9-]+\\.png}}",
    // The handler's ETag names the image's version, so etag() compares it rather than hashing the PNG.
    middleware: [etag()],
    operationId: "getSceneTemplateDemo",
    tags: ["Product photography"],
    summary: "A scene template's demo image",
    description:
      "The PNG each template links as `demoImageUrl`, made once by the service's local compositor and then served from storage. Public; cacheable for a day (ETag).",
    request: {
      params: z.object({
        file: z
          .string()
          .regex(/^[a-z0-9-]+\.png$/)
          .openapi({
            param: { name: "file", in: "path", description: "`<templateId>.png`, a template id from the prompts list.", example: "studio-white-sweep.png" },
          }),
      }),
    },
    responses: {
      200: { description: "The demo image.", headers: cacheHeaders, content: { "image/png": { schema: { type: "string", contentMediaType: "image/png" } } } },
      304: { description: "Not modified." },
      404: errorResponse("No template with this id.", ["TEMPLATE_NOT_FOUND", 'No template "studio-blue".']),
      429: errorResponse("Too many demo images are being made at once; wait Retry-After seconds.", [
        "RATE_LIMITED",
        "The service is busy with image work; retry in 5 s.",
      ]),
      500: internalError,
    },
  }),
  getJob: authenticated(
    { scope: "photo", rateLimit: "photo-read" },
    createRoute({
      method: "get",
      path: "/product-photography/jobs/{id}",
      operationId: "getProductPhotoJob",
      tags: ["Product photography"],
      summary: "Poll a product-photography job",
      description: "Status of a `Prefer: respond-async` request (owner only), and its result once done.",
      security,
      request: {
        query: NoQuerySchema,
        params: z.object({
          id: z
            .string()
            .uuid({ error: JOB_ID_MESSAGE })
            .openapi({ param: { name: "id", in: "path", example: JOB_ID } }),
        }),
      },
      responses: {
        200: {
          description: "The job.",
          content: json(z.object({ data: JobSchema }), {
            running: { summary: "Still running", value: { data: { id: JOB_ID, status: "running", createdAt: "2030-05-01T09:30:00.000Z", finishedAt: null } } },
            succeeded: {
              summary: "Done, with its result",
              value: {
                data: {
                  id: JOB_ID,
                  status: "succeeded",
                  createdAt: "2030-05-01T09:30:00.000Z",
                  finishedAt: "2030-05-01T09:30:41.000Z",
                  result: { ...image(1), width: 2048, height: 2048, cost: cost(24, 0.24, 21.22) },
                },
              },
            },
            failed: {
              summary: "Failed, with the error",
              value: {
                data: {
                  id: JOB_ID,
                  status: "failed",
                  createdAt: "2030-05-01T09:30:00.000Z",
                  finishedAt: "2030-05-01T09:31:02.000Z",
                  error: {
                    code: "GENERATION_TIMEOUT",
                    message: "The image model did not finish within 120 s; try again, or pick a faster model or a lower resolution.",
                  },
                },
              },
            },
          }),
        },
        401: unauthorized,
        404: errorResponse("No such job for this key's owner.", ["JOB_NOT_FOUND", "No product-photography job with this id for this key's owner."]),
        410: imageRemoved,
        422: errorResponse("The id is not a UUID, or a query parameter was given.", [
          "VALIDATION_FAILED",
          `id: ${JOB_ID_MESSAGE}`,
          [{ path: "id", message: JOB_ID_MESSAGE }],
        ]),
        429: errorResponse("Rate limit reached; wait Retry-After seconds.", ["RATE_LIMITED", "Rate limit of 300 requests per minute reached; retry in 8 s."]),
        500: internalError,
      },
    }),
  ),
  getCredits: authenticated(
    { scope: "photo", rateLimit: "photo-read" },
    createRoute({
      method: "get",
      path: "/credits",
      operationId: "getCredits",
      tags: ["Product photography"],
      summary: "Your credit balance and its movements",
      description:
        "The AI generation credits each image draws on (its model's `credits` at its resolution, from GET /api/image/image-model-options): the balance, what is held for images being made, what is available, and the movements (grants and charges), newest first, paginated.",
      security,
      request: { query: PageQuerySchema },
      responses: {
        200: {
          description: "The balance and a page of movements.",
          content: json(z.object({ data: CreditsSchema }), {
            credits: {
              summary: "After a sign-up grant and one image",
              value: {
                data: {
                  balance: 85,
                  reserved: 0,
                  available: 85,
                  movements: {
                    items: [
                      {
                        id: 2,
                        kind: "charge",
                        amount: -15,
                        balanceAfter: 85,
                        jobId: JOB_ID,
                        model: "pro",
                        resolution: "2K",
                        note: null,
                        createdAt: "2030-05-01T09:30:41.000Z",
                      },
                      {
                        id: 1,
                        kind: "grant",
                        amount: 100,
                        balanceAfter: 100,
                        jobId: null,
                        model: null,
                        resolution: null,
                        note: "sign-up grant",
                        createdAt: "2030-05-01T09:29:00.000Z",
                      },
                    ],
                    total: 2,
                    hasMore: false,
                    limit: 20,
                    offset: 0,
                  },
                },
              },
            },
          }),
        },
        401: unauthorized,
        422: errorResponse("A bad limit or offset, or an unknown query parameter.", [
          "VALIDATION_FAILED",
          "limit: must be a whole number from 1 to 100",
          [{ path: "limit", message: "must be a whole number from 1 to 100" }],
        ]),
        429: readLimited,
        500: internalError,
      },
    }),
  ),
  listGallery: authenticated(
    { scope: "photo", rateLimit: "photo-read" },
    createRoute({
      method: "get",
      path: "/gallery",
      operationId: "listGallery",
      tags: ["Product photography"],
      summary: "List your generated images",
      description:
        "Every image area B made for you (base64 answers included), newest first; filter by template and creation date, paginate with limit and offset.",
      security,
      request: { query: GalleryQuerySchema },
      responses: {
        200: {
          description: "A page of gallery items.",
          content: json(z.object({ data: GalleryListSchema }), {
            page: { summary: "One item", value: { data: { items: [galleryItem], total: 1, hasMore: false, limit: 20, offset: 0 } } },
          }),
        },
        401: unauthorized,
        422: errorResponse("A bad filter or page, or an unknown query parameter.", [
          "VALIDATION_FAILED",
          "fromDate: must be an ISO-8601 date (2030-05-01) or timestamp with Z or an offset",
          [{ path: "fromDate", message: "must be an ISO-8601 date (2030-05-01) or timestamp with Z or an offset" }],
        ]),
        429: readLimited,
        500: internalError,
      },
    }),
  ),
  getGalleryItem: authenticated(
    { scope: "photo", rateLimit: "photo-read" },
    createRoute({
      method: "get",
      path: "/gallery/{id}",
      operationId: "getGalleryItem",
      tags: ["Product photography"],
      summary: "One generated image",
      description: "A gallery item of yours; another user's id is 404.",
      security,
      request: { query: NoQuerySchema, params: galleryIdParams },
      responses: {
        200: { description: "The item.", content: json(z.object({ data: GalleryItemSchema }), { item: { value: { data: galleryItem } } }) },
        401: unauthorized,
        404: galleryNotFound,
        422: badGalleryId,
        429: readLimited,
        500: internalError,
      },
    }),
  ),
  deleteGalleryItem: authenticated(
    { scope: "photo", rateLimit: "photo" },
    createRoute({
      method: "delete",
      path: "/gallery/{id}",
      operationId: "deleteGalleryItem",
      tags: ["Product photography"],
      summary: "Delete a generated image",
      description:
        "Removes the item and its image and thumbnail files, unless a post names them (`filesKept`). A post made from the item (`{galleryId}` in POST /api/v1/social/posts) holds its own copy and is not affected.",
      security,
      request: { query: NoQuerySchema, params: galleryIdParams },
      responses: {
        200: {
          description: "Deleted.",
          content: json(z.object({ data: GalleryDeletedSchema }), { deleted: { value: { data: { id: GALLERY_ID, deleted: true, filesKept: false } } } }),
        },
        401: unauthorized,
        404: galleryNotFound,
        422: badGalleryId,
        429: errorResponse("Rate limit reached; wait Retry-After seconds.", ["RATE_LIMITED", "Rate limit of 20 requests per minute reached; retry in 31 s."]),
        500: internalError,
      },
    }),
  ),
};
