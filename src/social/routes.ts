/**
 * Area C router, mounted at /api/v1/social. Every response is `Cache-Control: no-store`; reads and writes
 * have their own per-user budgets.
 */
import { Hono } from "hono";
import type { AppEnv } from "../http/env";
import { requireAuth } from "../http/auth";
import { rateLimit } from "../http/rate-limit";
import { listAccounts } from "./accounts";

export function createSocialRoutes(): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  router.use("*", async (c, next) => {
    await next();
    c.res.headers.set("Cache-Control", "no-store");
  });
  router.use("*", requireAuth());
  router.use("*", async (c, next) => {
    const bucket = c.req.method === "GET" || c.req.method === "HEAD" ? "social-read" : "social-write";
    return rateLimit(bucket)(c, next);
  });

  router.get("/accounts", async (c) => {
    const accounts = await listAccounts(c.var.services.db, c.var.userId);
    return c.json({ data: { connectionStatus: "connected", accounts } });
  });
  return router;
}
