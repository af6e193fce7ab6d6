/**
 * Area B's operations as `createRoute` definitions, part of the API's one OpenAPI 3.1 document (served at
 * /openapi.json; src/http/api-document.ts). The error responses use the one error envelope
 * (src/http/openapi.ts).
 *
 * @example
 * router.openapi(photoRoutes.createPhoto, handler);
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ErrorSchema } from "../http/openapi";
import { CLOSED_INPUT_RULE, NoQuerySchema } from "../http/validate";
import { JobSchema, ModelOptionSchema, PhotoRequestSchema, PhotoResultSchema, TemplateSchema } from "./schemas";

export const PHOTO_BASE_PATH = "/api/image";

const json = <T extends z.ZodType>(schema: T) => ({ "application/json": { schema } });
const err = (description: string) => ({ description, content: json(ErrorSchema) });
const cacheHeaders = z.object({ ETag: z.string(), "Cache-Control": z.string() });
const security = [{ bearerAuth: [] }];

export const photoRoutes = {
  listTemplates: createRoute({
    method: "get",
    path: "/product-photography-prompts",
    operationId: "listSceneTemplates",
    tags: ["Product photography"],
    summary: "List scene templates",
    description: "Studio setups, lifestyle scenes, outdoor scenes, holiday themes and e-commerce backgrounds, each with a demo image made by the service. Public; cacheable for an hour (ETag).",
    request: { query: NoQuerySchema },
    responses: {
      200: { description: "The templates.", headers: cacheHeaders, content: json(z.object({ data: z.array(TemplateSchema) })) },
      304: { description: "Not modified." },
      422: err("A query parameter was given; this operation takes none."),
    },
  }),
  listModels: createRoute({
    method: "get",
    path: "/image-model-options",
    operationId: "listImageModels",
    tags: ["Product photography"],
    summary: "List image models and prices",
    description: "pro (highest quality, default), standard (1K bulk, batches up to 10) and flash (balanced), with resolutions, batch sizes and the estimated cost per image at each resolution in credits, USD and INR. Public; cacheable for an hour (ETag).",
    request: { query: NoQuerySchema },
    responses: {
      200: { description: "The models.", headers: cacheHeaders, content: json(z.object({ data: z.array(ModelOptionSchema) })) },
      304: { description: "Not modified." },
      422: err("A query parameter was given; this operation takes none."),
    },
  }),
  createPhoto: createRoute({
    method: "post",
    path: "/product-photography",
    operationId: "createProductPhoto",
    tags: ["Product photography"],
    summary: "Generate product photos",
    description:
      "Puts each product image into the scene (template and/or free text), then draws the logo, overlayText and marketingText itself at the exact placement and size. One product answers `{data:{photoDataUri}}` or `{data:{imageUrl, thumbnailUrl}}`; several answer `{data:{images:[{label, status, ...}]}}` where a failed product carries its own `error`. Optional `Idempotency-Key` replays the stored result (no second charge). `Prefer: respond-async` answers 202 with the Location of a job to poll.",
    security,
    request: {
      query: NoQuerySchema,
      headers: z.object({
        "Idempotency-Key": z.string().optional().openapi({ description: "1 to 255 visible characters; the same key with the same body replays, with another body is 409." }),
        Prefer: z.string().optional().openapi({ description: "`respond-async`: answer 202 at once and run the generation as a job." }),
      }),
      body: { required: true, content: json(PhotoRequestSchema) },
    },
    responses: {
      200: { description: "The generated image(s).", content: json(z.object({ data: PhotoResultSchema })) },
      202: { description: "Accepted as a job (Prefer: respond-async); poll its Location.", content: json(z.object({ data: JobSchema })) },
      400: err("Invalid JSON or Idempotency-Key."),
      401: err("Missing or invalid Bearer credentials."),
      409: err("Idempotency-Key reused with another body, or still in progress (Retry-After)."),
      413: err("An image over 10 MB or a body over 20 MB."),
      415: err("The body is not JSON."),
      422: err("Invalid fields or images, an unknown field or query parameter; `details` names each field. Also GENERATION_REFUSED when the model refused the content."),
      429: err("Rate limit reached; wait Retry-After seconds."),
      502: err("The image model failed (GENERATION_FAILED); nothing was charged."),
      503: err("The image model is rate limited (UPSTREAM_RATE_LIMITED); retry later."),
      504: err("The image model did not finish in time (GENERATION_TIMEOUT); nothing was charged."),
    },
  }),
  demoImage: createRoute({
    method: "get",
    // Hono's pattern for the last segment; the document writes the path `/demo/{file}`.
    path: "/demo/{file{[a-z0-9-]+\\.png}}",
    operationId: "getSceneTemplateDemo",
    tags: ["Product photography"],
    summary: "A scene template's demo image",
    description: "The PNG each template links as `demoImageUrl`, made once by the service's local compositor and then served from storage. Public; cacheable for a day (ETag).",
    request: {
      params: z.object({
        file: z
          .string()
          .regex(/^[a-z0-9-]+\.png$/)
          .openapi({ param: { name: "file", in: "path", description: "`<templateId>.png`, a template id from the prompts list.", example: "studio-white-sweep.png" } }),
      }),
    },
    responses: {
      200: { description: "The demo image.", headers: cacheHeaders, content: { "image/png": { schema: { type: "string", contentMediaType: "image/png" } } } },
      304: { description: "Not modified." },
      404: err("No template with this id."),
      429: err("Too many demo images are being made at once; wait Retry-After seconds."),
    },
  }),
  getJob: createRoute({
    method: "get",
    path: "/product-photography/jobs/{id}",
    operationId: "getProductPhotoJob",
    tags: ["Product photography"],
    summary: "Poll a product-photography job",
    description: "Status of a `Prefer: respond-async` request (owner only), and its result once done.",
    security,
    request: { query: NoQuerySchema, params: z.object({ id: z.string().uuid().openapi({ param: { name: "id", in: "path" } }) }) },
    responses: {
      200: { description: "The job.", content: json(z.object({ data: JobSchema })) },
      401: err("Missing or invalid Bearer credentials."),
      404: err("No such job for this key's owner."),
      422: err("The id is not a UUID, or a query parameter was given."),
    },
  }),
};
