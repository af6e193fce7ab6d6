/**
 * Area C router, mounted at /api/v1/social. Every operation is a `createRoute` definition (openapi.ts), so the
 * zod schemas that validate requests also describe them in the API's one OpenAPI 3.1 document (/openapi.json,
 * reference page /docs). This area's former /openapi.json and /docs answer 301 to those two; everything else
 * needs a Bearer credential and counts against the user's read or write budget. Every response is `Cache-Control: no-store`; there is no CORS for area C
 * (keys belong on servers, never in browsers).
 *
 * @example
 * app.route("/api/v1/social", createSocialRoutes());
 */
import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/env";
import { requireAuth } from "../http/auth";
import { rateLimit } from "../http/rate-limit";
import { inlineImageBody } from "../http/inline-images";
import { validationHook } from "../http/validate";
import { listAccounts } from "./accounts";
import { parseIdempotencyKey } from "./idempotency";
import { createMedia, getMedia } from "./media";
import { movedTo, OPENAPI_PATH, REFERENCE_PATH } from "../http/api-document";
import { registerComponents, routes, SOCIAL_BASE_PATH } from "./openapi";
import { cancelPost, createPost, getPost, listPosts } from "./posts";
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

const noStore: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  c.res.headers.set("Cache-Control", "no-store");
};

const READS = new Set(["GET", "HEAD", "OPTIONS"]);
const budget: MiddlewareHandler<AppEnv> = (c, next) => rateLimit(READS.has(c.req.method) ? "social-read" : "social-write")(c, next);

export function createSocialRoutes(): OpenAPIHono<AppEnv> {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: validationHook() });
  registerComponents(router);
  router.use("*", noStore);

  // Public, and registered before the auth middleware: these handlers answer without calling next().
  router.get("/openapi.json", movedTo(OPENAPI_PATH));
  router.get("/docs", movedTo(REFERENCE_PATH));

  router.use("*", requireAuth("social"));
  router.use("*", budget);

  router.openapi(
    routes.listAccounts,
    async (c) => {
      const accounts = await listAccounts(c.get("services").db, c.get("userId"));
      return c.json({ data: { connectionStatus: "connected", accounts } }, 200);
    },
    validated(routes.listAccounts),
  );

  router.openapi(
    // The image, given inline, is decoded as the body streams in (src/http/inline-images.ts).
    { ...routes.createMedia, middleware: [inlineImageBody([{ path: [], kind: "image-or-url" }, { path: ["base64"], kind: "base64" }])] },
    async (c) => {
      const media = await createMedia(c.get("services"), c.get("userId"), c.req.valid("json"));
      c.header("Location", `${SOCIAL_BASE_PATH}/media/${media.id}`);
      return c.json({ data: media }, 201);
    },
    validated(routes.createMedia),
  );

  router.openapi(
    routes.getMedia,
    async (c) => {
      const media = await getMedia(c.get("services").db, c.get("userId"), c.req.valid("param").id);
      return c.json({ data: media }, 200);
    },
    validated(routes.getMedia),
  );

  router.openapi(
    // Images given inline are decoded as the body streams in (src/http/inline-images.ts).
    { ...routes.createPost, middleware: [inlineImageBody([{ path: ["images", "*"], kind: "image-or-url" }, { path: ["images", "*", "base64"], kind: "base64" }])] },
    async (c) => {
      const key = parseIdempotencyKey(c.req.valid("header")["Idempotency-Key"]);
      const result = await createPost(c.get("services"), c.get("userId"), key, c.req.valid("json"));
      c.header("Location", `${SOCIAL_BASE_PATH}/posts/${result.post.id}`);
      if (result.replayed) c.header("Idempotency-Replayed", "true");
      return c.json({ data: result.post }, result.status);
    },
    validated(routes.createPost),
  );

  router.openapi(
    routes.listPosts,
    async (c) => {
      const { items, ...page } = await listPosts(c.get("services"), c.get("userId"), c.req.valid("query"));
      // The items come as JSON text from the database (post-record.ts `recordJson`); the rest are numbers and a boolean.
      const body = `{"data":{"items":[${items}],${JSON.stringify(page).slice(1)}}`;
      return c.body(body, 200, { "content-type": "application/json" }) as never;
    },
    validated(routes.listPosts),
  );

  router.openapi(
    routes.getPost,
    async (c) => {
      const post = await getPost(c.get("services"), c.get("userId"), c.req.valid("param").id);
      return c.json({ data: post }, 200);
    },
    validated(routes.getPost),
  );

  router.openapi(
    routes.cancelPost,
    async (c) => {
      const post = await cancelPost(c.get("services"), c.get("userId"), c.req.valid("param").id);
      return c.json({ data: post }, 200);
    },
    validated(routes.cancelPost),
  );

  return router;
}
