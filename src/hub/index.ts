/**
 * The web hub at /hub: server-rendered pages (Hono JSX) for signing in, API keys, connected accounts, posts,
 * the gallery and credits of area B, webhooks and getting started. Cookies are read here only; the API under /api keeps requiring a Bearer credential.
 *
 * @example
 * app.route("/hub", createHubRoutes());
 */
import { Hono } from "hono";
import { declaredBodyLimit } from "../http/body-limit";
import type { AppEnv } from "../http/env";
import { createAccountRoutes } from "./accounts";
import type { HubEnv } from "./env";
import { HubError, renderHubError } from "./errors";
import { HUB_MAX_BODY_BYTES, tooLarge } from "./form";
import { csrfGuard, hubSecurityHeaders, loadHubSession, noStore, requireSession } from "./guard";
import { createKeyRoutes } from "./keys";
import { createPostRoutes } from "./posts";
import { createGalleryRoutes } from "./gallery";
import { createCreditRoutes } from "./credits";
import { createSignInRoutes } from "./signin";
import { createStartRoutes } from "./start";
import { createWebhookHubRoutes } from "./webhooks";
import { FAVICON_PATH, FAVICON_SVG, HUB_CSS } from "./ui/styles";

export function createHubRoutes(): Hono<AppEnv> {
  const hub = new Hono<HubEnv>();
  hub.use("*", hubSecurityHeaders());
  hub.get("/assets/hub.css", (c) => {
    c.header("Cache-Control", "public, max-age=3600");
    return c.body(HUB_CSS, 200, { "Content-Type": "text/css; charset=utf-8" });
  });
  hub.get(FAVICON_PATH.slice("/hub".length), (c) => {
    c.header("Cache-Control", "public, max-age=86400");
    return c.body(FAVICON_SVG, 200, { "Content-Type": "image/svg+xml" });
  });
  hub.use("*", noStore);
  // Before anything reads a body: a declared length over 64 KB is refused from its header, a chunked body is
  // cut off once it passes 64 KB (src/http/body-limit.ts).
  hub.use("*", declaredBodyLimit(HUB_MAX_BODY_BYTES, tooLarge));
  hub.use("*", loadHubSession);
  hub.use("*", csrfGuard);

  hub.route("/", createSignInRoutes());
  for (const path of [
    "/keys",
    "/keys/*",
    "/accounts",
    "/accounts/*",
    "/posts",
    "/posts/*",
    "/gallery",
    "/gallery/*",
    "/credits",
    "/webhooks",
    "/webhooks/*",
    "/start",
  ])
    hub.use(path, requireSession);
  hub.route("/keys", createKeyRoutes());
  hub.route("/accounts", createAccountRoutes());
  hub.route("/posts", createPostRoutes());
  hub.route("/gallery", createGalleryRoutes());
  hub.route("/credits", createCreditRoutes());
  hub.route("/webhooks", createWebhookHubRoutes());
  hub.route("/", createStartRoutes());
  hub.all("*", () => {
    throw new HubError(404, "There is no hub page at this address.");
  });
  hub.onError(renderHubError);
  return hub as unknown as Hono<AppEnv>;
}
