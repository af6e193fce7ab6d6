/**
 * createApp(services): the whole HTTP API, the same on Workers and Node.
 * Middleware order: request id -> services -> access log -> security headers (API and files) -> body limit ->
 * areas (the hub sets its own headers, with a nonce CSP); one onError renders every
 * error as the envelope, one notFound answers unknown routes. The app is an `OpenAPIHono`, so mounting the
 * areas' routers gathers their operations into the one OpenAPI document (/openapi.json, /docs).
 *
 * @example
 * const app = createApp(services);
 * const res = await app.request("/health");
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, Hono } from "hono";
import { requestId } from "hono/request-id";
import { cors } from "hono/cors";
import { secureHeaders } from "hono/secure-headers";
import type { Services } from "./services";
import type { AppEnv } from "./http/env";
import { ApiError, renderError } from "./http/errors";
import { redactSecrets } from "./adapters/logger";
import { createSocialRoutes } from "./social/routes";
import { createQrRoutes, qrNotFoundHint } from "./qr";
import { createPhotoRoutes } from "./photo/routes";
import { createPredictionCallbackRoutes } from "./photo/callback";
import { createFilesRoutes } from "./http/files";
import { createDeliveryRoutes } from "./social/delivery/routes";
import { createSandboxRoutes } from "./social/sandbox";
import { createHubRoutes } from "./hub";
import { createWebhookCallbackRoutes, createWebhookRoutes } from "./webhooks/routes";
import { registerWebhookEvents } from "./webhooks/openapi";
import { checkHealth, frontDoor, serviceRoutes } from "./http/front-door";
import { mountApiDocument } from "./http/api-document";
import { allowedMethods } from "./http/allowed-methods";
import { validationHook } from "./http/validate";
import { declaredBodyLimit } from "./http/body-limit";

export const MAX_BODY_BYTES = 20 * 1024 * 1024;

/**
 * Hono's secureHeaders for every API and file answer, errors included: nosniff, no-referrer (paths may hold a
 * key or a capability URL), not framed, no scripts or subresources should an answer ever be rendered as a
 * page. Cross-Origin-Resource-Policy is cross-origin: QR PNGs and stored images are meant for <img> on the
 * customers' own sites. Not for /hub (its own CSP with nonces, Referrer-Policy same-origin for its forms).
 * Left out, as OWASP's REST cheat sheet leaves them out of API answers: the legacy headers that act only on
 * HTML pages or on long-gone browsers and plug-ins (X-XSS-Protection, X-DNS-Prefetch-Control,
 * X-Download-Options, X-Permitted-Cross-Domain-Policies, Origin-Agent-Cluster); each costs every answer a
 * header to set and to send.
 */
export const apiSecurityHeaders = secureHeaders({
  contentSecurityPolicy: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
  crossOriginResourcePolicy: "cross-origin",
  referrerPolicy: "no-referrer",
  xFrameOptions: "DENY",
  xXssProtection: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  originAgentCluster: false,
});

/** The headers a page's script may read from an area A answer. */
const QR_EXPOSED_HEADERS = [
  "X-Request-Id",
  "X-QR-Warnings",
  "ETag",
  "Retry-After",
  "RateLimit-Policy",
  "RateLimit",
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
];

/** Area A's CORS; a preflight names the methods of the path asked about (`allowed`), as `Allow` does. */
const qrCorsFor = (allowed: (path: string) => string[] | null) =>
  cors({
    origin: "*",
    allowMethods: (_origin, c) => allowed(c.req.path) ?? [],
    allowHeaders: ["Authorization", "Content-Type"],
    exposeHeaders: QR_EXPOSED_HEADERS,
    maxAge: 600,
  });

/**
 * The two constant headers Hono's cors() gives any other request with `origin: "*"`, set with `c.header`
 * before the route answers, so they join its answer as it is made. cors() sets them on `c.res` before the
 * route runs, which makes Hono build every answer a second time to copy them over, a part of a QR GET's CPU
 * in workerd that shows in the edge bench.
 */
const QR_SIMPLE_CORS = { "Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": QR_EXPOSED_HEADERS.join(",") };

export type ServicesProvider = Services | ((c: Context<AppEnv>) => Services);

/** Extra routers an entry point mounts (e.g. the Node-only admin routes). */
export interface AppExtras {
  mount?: (app: Hono<AppEnv>) => void;
}

export function createApp(provider: ServicesProvider, extras: AppExtras = {}): Hono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook() });

  app.use("*", requestId({ headerName: "X-Request-Id", generator: () => crypto.randomUUID() }));
  app.use("*", async (c, next) => {
    c.set("services", typeof provider === "function" ? provider(c) : provider);
    await next();
  });
  app.use("*", async (c, next) => {
    const started = Date.now();
    await next();
    c.get("services").log.info("request", {
      requestId: c.get("requestId"),
      method: c.req.method,
      path: redactSecrets(c.req.path),
      status: c.res.status,
      ms: Date.now() - started,
    });
  });
  app.use("/api/*", apiSecurityHeaders);
  app.use("/files/*", apiSecurityHeaders);
  // OPTIONS on an operation's path names its methods, before any area's credentials are asked for: the
  // document at /openapi.json says as much to anyone.
  const allowed = allowedMethods(app);
  const qrCors = qrCorsFor(allowed);
  app.use("*", async (c, next) => {
    const allow = c.req.method === "OPTIONS" ? allowed(c.req.path) : null;
    if (!allow) return next();
    c.header("Allow", allow.join(", "));
    return c.req.path.startsWith("/api/qr-code/") ? qrCors(c, next) : c.body(null, 204);
  });
  // Area A is the one meant for web pages (a `qr` key in an <img>, or a page's script): any origin may call it
  // from a browser; a key held to its pages' origins is checked against the request's Origin as always. No
  // cookies are read, so no credentials are allowed. Every answer carries it (a constant `*`), so a copy an
  // <img> load left in a cache serves a page's fetch() too.
  app.use("/api/qr-code/*", async (c, next) => {
    if (c.req.method === "OPTIONS") return qrCors(c, next);
    for (const [name, value] of Object.entries(QR_SIMPLE_CORS)) c.header(name, value);
    await next();
  });
  // A body larger than 20 MB is refused, from its declared length where it has one (src/http/body-limit.ts).
  app.use(
    "/api/*",
    declaredBodyLimit(MAX_BODY_BYTES, () => new ApiError("PAYLOAD_TOO_LARGE", "The request body is larger than 20 MB.")),
  );

  app.openapi(serviceRoutes.frontDoor, (c) => c.json({ data: frontDoor() }, 200));
  app.openapi(serviceRoutes.health, async (c) => {
    const { healthy, report } = await checkHealth(c.get("services"));
    c.header("Cache-Control", "no-store");
    return c.json({ data: report }, healthy ? 200 : 503);
  });
  app.route("/files", createFilesRoutes());
  app.route("/api/qr-code", createQrRoutes());
  app.route("/api/image", createPhotoRoutes());
  app.route("/api/v1/social", createSocialRoutes());
  app.route("/api/v1/webhooks", createWebhookRoutes());
  app.route("/api/internal/deliveries", createDeliveryRoutes());
  app.route("/api/internal/photo", createPredictionCallbackRoutes());
  app.route("/api/internal/webhooks", createWebhookCallbackRoutes());
  app.route("/sandbox", createSandboxRoutes());
  app.route("/hub", createHubRoutes());
  registerWebhookEvents(app);
  mountApiDocument(app);
  extras.mount?.(app);

  app.notFound((c) => {
    const allow = allowed(c.req.path);
    if (allow && !allow.includes(c.req.method)) {
      const message = `This path takes ${allow.join(", ")}, not ${c.req.method}.${qrNotFoundHint(c.req.method, c.req.path)}`;
      throw new ApiError("METHOD_NOT_ALLOWED", message, { headers: { Allow: allow.join(", ") } });
    }
    throw new ApiError("NOT_FOUND", `No route matches this method and path.${qrNotFoundHint(c.req.method, c.req.path)}`);
  });
  app.onError((err, c) => renderError(err, c, c.get("services")?.log));
  return app;
}
