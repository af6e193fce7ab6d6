/**
 * Area C router, mounted at /api/v1/social. Every operation is a `createRoute` definition (openapi.ts: schemas,
 * access, middleware), so the zod schemas that validate requests also describe them in the API's one OpenAPI
 * 3.1 document (/openapi.json, reference page /docs); its handler is in handlers.ts. This area's former
 * /openapi.json and /docs answer 301 to those two; everything else needs a Bearer credential and counts
 * against the user's read or write budget, unknown paths included (401 before 404). Every response is
 * `Cache-Control: no-store`; there is no CORS for area C (keys belong on servers, never in browsers).
 *
 * @example
 * app.route("/api/v1/social", createSocialRoutes());
 */
import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import { movedTo, OPENAPI_PATH, REFERENCE_PATH } from "../http/api-document";
import type { AppEnv } from "../http/env";
import { noStore } from "../http/no-store";
import { authenticatedNotFound } from "../http/openapi";
import { validationHook } from "../http/validate";
import * as handlers from "./handlers";
import { parseIdempotencyKey } from "./idempotency";
import { registerComponents, routes } from "./openapi";
import { assertSupportedKind } from "./unsupported";

/**
 * Every operation validates through the house hook bound to its own schemas (unknown and repeated fields are
 * named). Before that, bodies that ask for video, carousels, stories, reels or messages get "unsupported",
 * valid or not (on failure the validator still hands the hook the raw input as `data`), and a missing
 * Idempotency-Key is the contract's 400 rather than a 422.
 */
const validated = (route: RouteConfig) =>
  validationHook(route, (result) => {
    if (result.target === "json") assertSupportedKind((result as { data?: unknown }).data);
    if (!result.success && result.target === "header") parseIdempotencyKey(undefined);
  });

export function createSocialRoutes(): OpenAPIHono<AppEnv> {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: validationHook() });
  registerComponents(router);
  router.use("*", noStore);

  // Public: the former document paths.
  router.get("/openapi.json", movedTo(OPENAPI_PATH));
  router.get("/docs", movedTo(REFERENCE_PATH));

  router.openapi(routes.listAccounts, handlers.listAccounts, validated(routes.listAccounts));
  router.openapi(routes.createMedia, handlers.createMedia, validated(routes.createMedia));
  router.openapi(routes.getMedia, handlers.getMedia, validated(routes.getMedia));
  router.openapi(routes.createPost, handlers.createPost, validated(routes.createPost));
  router.openapi(routes.listPosts, handlers.listPosts, validated(routes.listPosts));
  router.openapi(routes.getPost, handlers.getPost, validated(routes.getPost));
  router.openapi(routes.cancelPost, handlers.cancelPost, validated(routes.cancelPost));

  // Any other path or method: the credential first, counted as a read (GET, HEAD, OPTIONS) or a write, then 404.
  router.all("*", ...authenticatedNotFound({ scope: "social", rateLimit: { read: "social-read", write: "social-write" } }));
  return router;
}
