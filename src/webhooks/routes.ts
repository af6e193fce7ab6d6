/**
 * The webhooks router, mounted at /api/v1/webhooks: the operations of openapi.ts (each validated by the house
 * hook), `Cache-Control: no-store` on every answer, and for any other path the credential check, then 404.
 * `createWebhookCallbackRoutes` is QStash's signed callback that sends one message (/api/internal/webhooks).
 *
 * @example
 * app.route("/api/v1/webhooks", createWebhookRoutes());
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { Hono } from "hono";
import type { AppEnv } from "../http/env";
import { noStore } from "../http/no-store";
import { authenticatedNotFound } from "../http/openapi";
import { verifiedQStashBody } from "../http/qstash-callback";
import { validationHook } from "../http/validate";
import { webhookCallbackUrl } from "../adapters/queue/qstash";
import * as handlers from "./handlers";
import { routes } from "./openapi";
import { sendWebhookDelivery } from "./send";

export function createWebhookRoutes(): OpenAPIHono<AppEnv> {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: validationHook() });
  router.use("*", noStore);
  router.openapi(routes.createWebhook, handlers.createWebhook, validationHook(routes.createWebhook));
  router.openapi(routes.listWebhooks, handlers.listWebhooks, validationHook(routes.listWebhooks));
  router.openapi(routes.getWebhook, handlers.getWebhook, validationHook(routes.getWebhook));
  router.openapi(routes.updateWebhook, handlers.updateWebhook, validationHook(routes.updateWebhook));
  router.openapi(routes.deleteWebhook, handlers.deleteWebhook, validationHook(routes.deleteWebhook));
  router.openapi(routes.rotateWebhookSecret, handlers.rotateWebhookSecret, validationHook(routes.rotateWebhookSecret));
  router.openapi(routes.testWebhook, handlers.testWebhook, validationHook(routes.testWebhook));
  router.openapi(routes.listWebhookDeliveries, handlers.listWebhookDeliveries, validationHook(routes.listWebhookDeliveries));
  router.openapi(routes.replayWebhookDelivery, handlers.replayWebhookDelivery, validationHook(routes.replayWebhookDelivery));
  router.all("*", ...authenticatedNotFound({ scope: "social", rateLimit: { read: "social-read", write: "social-write" } }));
  return router;
}

/**
 * `POST /api/internal/webhooks/send`, body `{"webhookDeliveryId": "..."}`: QStash's message for one delivery,
 * verified as the publish callback is (verifiedQStashBody: both signing keys, the raw body, this URL). It answers
 * 2xx once the attempt is recorded, whatever the receiver said (the retry is a new QStash message), and 5xx
 * only when the attempt could not be made or recorded, so QStash brings it again.
 */
export function createWebhookCallbackRoutes(): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  router.post("/send", async (c) => {
    const services = c.get("services");
    const raw = await verifiedQStashBody(c, webhookCallbackUrl(services.config));
    let id: unknown;
    try {
      id = (JSON.parse(raw) as { webhookDeliveryId?: unknown })?.webhookDeliveryId;
    } catch {
      id = undefined;
    }
    if (typeof id !== "string") return c.json({ data: { outcome: "ignored" } });
    const outcome = await sendWebhookDelivery(services, id);
    return c.json({ data: { webhookDeliveryId: id, outcome: outcome?.status ?? "skipped" } });
  });
  return router;
}
