/**
 * Area B routes, mounted at /api/image:
 * - GET  /product-photography-prompts        scene templates (public, cacheable, ETag)
 * - GET  /image-model-options                models and prices (public, cacheable, ETag)
 * - POST /product-photography                generate (Bearer; Idempotency-Key and Prefer: respond-async optional)
 * - GET  /product-photography/jobs/{id}      an async job (Bearer, owner only)
 * - GET  /demo/{templateId}.png              a template's demo image, made by the local compositor
 * - GET  /credits                            the credit balance and its movements (Bearer)
 * - GET  /gallery, GET|DELETE /gallery/{id}  the user's generated images (Bearer, owner only)
 * - GET  /openapi.json                       moved: 301 to the API's one document, /openapi.json
 *
 * Each operation is its definition (openapi.ts: schemas, access, middleware), its handler (handlers.ts) and
 * its validation hook, wired here. Validation failures are thrown by the hook (bound to the route's own
 * schemas); the app's onError renders them.
 *
 * @example
 * app.route("/api/image", createPhotoRoutes());
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { movedTo, OPENAPI_PATH } from "../http/api-document";
import type { AppEnv } from "../http/env";
import { authenticatedNotFound } from "../http/openapi";
import { validationHook } from "../http/validate";
import * as handlers from "./handlers";
import { photoRoutes } from "./openapi";

export function createPhotoRoutes(): OpenAPIHono<AppEnv> {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: validationHook() });
  router.get("/openapi.json", movedTo(OPENAPI_PATH));
  router.openapi(photoRoutes.demoImage, handlers.demoImage, validationHook(photoRoutes.demoImage));
  router.openapi(photoRoutes.listTemplates, handlers.listTemplates, validationHook(photoRoutes.listTemplates));
  router.openapi(photoRoutes.listModels, handlers.listModels, validationHook(photoRoutes.listModels));
  router.openapi(photoRoutes.createPhoto, handlers.createPhoto, validationHook(photoRoutes.createPhoto));
  router.openapi(photoRoutes.getJob, handlers.getJob, validationHook(photoRoutes.getJob));
  router.openapi(photoRoutes.getCredits, handlers.getCredits, validationHook(photoRoutes.getCredits));
  router.openapi(photoRoutes.listGallery, handlers.listGallery, validationHook(photoRoutes.listGallery));
  router.openapi(photoRoutes.getGalleryItem, handlers.getGalleryItem, validationHook(photoRoutes.getGalleryItem));
  router.openapi(photoRoutes.deleteGalleryItem, handlers.deleteGalleryItem, validationHook(photoRoutes.deleteGalleryItem));
  // Other methods on the generation path, and other paths under the jobs, want the same key first.
  router.all("/product-photography", ...authenticatedNotFound({ scope: "photo", rateLimit: "photo" }));
  router.all("/product-photography/jobs/*", ...authenticatedNotFound({ scope: "photo", rateLimit: "photo-read" }));
  router.all("/credits", ...authenticatedNotFound({ scope: "photo", rateLimit: "photo-read" }));
  router.all("/gallery", ...authenticatedNotFound({ scope: "photo", rateLimit: "photo-read" }));
  router.all("/gallery/*", ...authenticatedNotFound({ scope: "photo", rateLimit: "photo-read" }));
  return router;
}
