/**
 * `Cache-Control: no-store` on every answer of an API router, set after the handler so it holds for errors
 * and 404s too: answers that carry a user's data are never kept by a cache.
 *
 * @example
 * router.use("*", noStore);
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./env";

export const noStore: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  c.res.headers.set("Cache-Control", "no-store");
};
