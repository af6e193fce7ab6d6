/**
 * Area B routes, mounted at /api/image:
 * - GET  /product-photography-prompts        scene templates (public, cacheable, ETag)
 * - GET  /image-model-options                models and prices (public, cacheable, ETag)
 * - POST /product-photography                generate (Bearer; Idempotency-Key and Prefer: respond-async optional)
 * - GET  /product-photography/jobs/{id}      an async job (Bearer, owner only)
 * - GET  /demo/{templateId}.png              a template's demo image, made by the local compositor
 * - GET  /openapi.json                       moved: 301 to the API's one document, /openapi.json
 *
 * @example
 * app.route("/api/image", createPhotoRoutes());
 */
import { etag } from "hono/etag";
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { requireAuth } from "../http/auth";
import type { AppEnv } from "../http/env";
import { ApiError } from "../http/errors";
import { readIdempotencyKey } from "../http/idempotency-key";
import { inlineImageBody } from "../http/inline-images";
import { streamedJson } from "../http/streamed-json";
import { isJsonContentType } from "../http/json";
import { rateLimit } from "../http/rate-limit";
import { validationHook } from "../http/validate";
import { listTemplates } from "./catalog";
import { demoImage } from "./demo";
import { modelView } from "../lib/model-catalog";
import { movedTo, OPENAPI_PATH } from "../http/api-document";
import { photoRoutes } from "./openapi";
import { createPhoto, jobStatus } from "./service";

/** The contract says a non-JSON body is 415; Hono's json validator would otherwise skip it. */
const jsonOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.method === "POST" && !isJsonContentType(c.req.header("content-type"))) {
    throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with Content-Type: application/json.");
  }
  await next();
};

const PUBLIC_CACHE = "public, max-age=3600";

/** A public JSON list; the route's etag() middleware gives it a strong ETag and answers 304. */
function cacheable(c: Context<AppEnv>, data: unknown): Response {
  c.header("Cache-Control", PUBLIC_CACHE);
  return c.body(JSON.stringify({ data }), 200, { "Content-Type": "application/json" });
}

function prefersAsync(header: string | undefined): boolean {
  return !!header && header.split(",").some((p) => p.trim().toLowerCase().split(";")[0]!.trim() === "respond-async");
}

export function createPhotoRoutes(): OpenAPIHono<AppEnv> {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: validationHook() });

  router.get("/openapi.json", movedTo(OPENAPI_PATH));
  router.openapi(
    { ...photoRoutes.demoImage, middleware: [etag()] },
    async (c) => {
      const id = c.req.valid("param").file.replace(/\.png$/, "");
      const png = await demoImage(c.get("services"), id);
      c.header("Cache-Control", "public, max-age=86400");
      // The image's version names it, so etag() compares this rather than hashing the PNG.
      c.header("ETag", `"demo-${id}-${png.version}"`);
      return c.body(png.bytes as Uint8Array<ArrayBuffer>, 200, { "Content-Type": "image/png" }) as never;
    },
    validationHook(photoRoutes.demoImage),
  );

  // Validation failures are thrown by the hook (bound to the route's own schemas); onError renders them.
  router.openapi(
    { ...photoRoutes.listTemplates, middleware: [etag()] },
    (c) => cacheable(c, listTemplates(c.get("services").config.publicBaseUrl)) as never,
    validationHook(photoRoutes.listTemplates),
  );
  router.openapi(
    { ...photoRoutes.listModels, middleware: [etag()] },
    (c) => cacheable(c, c.get("services").config.photoModels.models.map(modelView)) as never,
    validationHook(photoRoutes.listModels),
  );

  router.use("/product-photography", requireAuth("photo"), rateLimit("photo"), jsonOnly);
  // Images given inline are decoded as the body streams in (src/http/inline-images.ts).
  const images = inlineImageBody([
    { path: ["productImages", "*", "dataUrl"], kind: "base64" },
    { path: ["logoImage"], kind: "image-or-url" },
    { path: ["referenceImage"], kind: "image-or-url" },
  ]);
  // Only the job poll: "/product-photography/*" would match the POST above too and count it twice.
  router.use("/product-photography/jobs/*", requireAuth("photo"), rateLimit("photo-read"));

  router.openapi(
    { ...photoRoutes.createPhoto, middleware: [images] },
    async (c) => {
      const answer = await createPhoto(c.get("services"), c.get("userId"), c.req.valid("json"), {
        idempotencyKey: readIdempotencyKey(c.req.header("idempotency-key")),
        respondAsync: prefersAsync(c.req.header("prefer")),
      });
      for (const [name, value] of Object.entries(answer.headers)) c.header(name, value);
      c.header("Cache-Control", "no-store");
      return streamedJson(c, answer.body, answer.status) as never;
    },
    validationHook(photoRoutes.createPhoto),
  );

  router.openapi(
    photoRoutes.getJob,
    async (c) => {
      c.header("Cache-Control", "no-store");
      return streamedJson(c, { data: await jobStatus(c.get("services"), c.get("userId"), c.req.valid("param").id) }, 200) as never;
    },
    validationHook(photoRoutes.getJob),
  );

  return router;
}
