/**
 * The QStash callback: `POST /api/internal/deliveries/publish`, body `{"deliveryId": "..."}`.
 * The `Upstash-Signature` JWT is verified with the Receiver against the current and the next signing key,
 * over the raw body and bound to this URL; anything else is 401 before the body is even parsed.
 *
 * Answers: 2xx whenever the delivery's fate is recorded (published, failed, retry queued, or nothing to do:
 * a duplicate message, a cancelled post), so QStash stops; 5xx only when we could not do our part (the
 * database is down), so QStash delivers again later.
 */
import { Hono } from "hono";
import type { AppEnv } from "../../http/env";
import { verifiedQStashBody } from "../../http/qstash-callback";
import { publishCallbackUrl } from "../../adapters/queue/qstash";
import { publishDelivery } from "./publish";
import { rescheduleIfEarly } from "./early";

export function createDeliveryRoutes(): Hono<AppEnv> {
  const router = new Hono<AppEnv>();

  router.post("/publish", async (c) => {
    const services = c.get("services");
    const raw = await verifiedQStashBody(c, publishCallbackUrl(services.config));

    const deliveryId = parseDeliveryId(raw);
    if (!deliveryId) {
      // Signed by QStash but not ours to act on: answering 2xx ends it instead of retrying a poison message.
      services.log.warn("qstash message without a delivery id", { messageId: c.req.header("upstash-message-id") });
      return c.json({ data: { outcome: "ignored" } });
    }
    const outcome = await publishDelivery(services, deliveryId);
    if (outcome.status === "skipped") await rescheduleIfEarly(services, deliveryId, c.req.header("upstash-message-id") ?? null);
    return c.json({ data: { deliveryId, outcome: outcome.status } });
  });
  return router;
}

function parseDeliveryId(raw: string): string | null {
  try {
    const body = JSON.parse(raw) as { deliveryId?: unknown };
    return typeof body?.deliveryId === "string" ? body.deliveryId : null;
  } catch {
    return null;
  }
}
