/**
 * Replicate's webhook: `POST /api/internal/photo/predictions`, called once a prediction created with
 * `webhook_events_filter: ["completed"]` has ended; the body is the prediction. Internal: not in the API
 * document, and no API key; what authenticates it is the Standard Webhooks signature.
 *
 * - `webhook-id`, `webhook-timestamp` and `webhook-signature` are required; a timestamp more than five
 *   minutes from our clock is refused (a replay of an old capture), and the signature (HMAC-SHA256 of
 *   `id.timestamp.body` with the account's signing secret, checked by the `replicate` client's
 *   validateWebhook) must match one of those sent. Anything else is 401 and changes nothing.
 * - Each `webhook-id` is taken once: a redelivery or a replay answers 200 and does nothing. Each item is
 *   finished once whatever number of deliveries name its prediction (claimFinish).
 * - 2xx once the prediction's fate is recorded, or when it is nobody's (an unknown prediction, a
 *   synchronous request's, which that request polls itself); 5xx when we could not do our part, so Replicate
 *   delivers again (the webhook-id is then given back).
 */
import { Hono } from "hono";
import { validateWebhook } from "replicate";
import { and, eq } from "drizzle-orm";
import { photoJobs, photoWebhookDeliveries } from "../../db/schema";
import type { AppEnv } from "../http/env";
import { ApiError } from "../http/errors";
import type { PredictionState } from "../services";
import { finishItem } from "./async-jobs";
import { ENDED, itemByPrediction } from "./items";

/** Standard Webhooks' tolerance for the timestamp, either way. */
const TOLERANCE_SECONDS = 5 * 60;

export function createPredictionCallbackRoutes(): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  router.post("/predictions", async (c) => {
    const services = c.get("services");
    const predictions = services.generator.predictions;
    if (!predictions) throw new ApiError("NOT_FOUND", "No route matches this method and path.");
    const id = c.req.header("webhook-id");
    const timestamp = c.req.header("webhook-timestamp");
    const signature = c.req.header("webhook-signature");
    if (!id || !timestamp || !signature) throw new ApiError("UNAUTHORIZED", "Missing webhook-id, webhook-timestamp or webhook-signature.");
    const seconds = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : Number.NaN;
    if (!(Math.abs(services.clock.now().getTime() / 1000 - seconds) <= TOLERANCE_SECONDS)) {
      services.log.warn("prediction webhook refused", { reason: "timestamp", webhookId: id.slice(0, 64) });
      throw new ApiError("UNAUTHORIZED", "The webhook-timestamp is more than five minutes away from this service's clock.");
    }
    const raw = await c.req.text();
    const verify = (secret: string) => validateWebhook({ id, timestamp, signature, body: raw, secret }).catch(() => false);
    const secret = await predictions.webhookSecret();
    let valid = await verify(secret);
    if (!valid) {
      // The account's secret may have been rotated since it was read: read it again (at most every SECRET_REFRESH_MS).
      const fresh = await predictions.webhookSecret({ fresh: true });
      if (fresh !== secret) valid = await verify(fresh);
    }
    if (!valid) {
      services.log.warn("prediction webhook refused", { reason: "signature", webhookId: id.slice(0, 64) });
      throw new ApiError("UNAUTHORIZED", "The webhook-signature is not valid for this request.");
    }

    const prediction = parsePrediction(raw);
    if (!prediction) return c.json({ data: { outcome: "ignored" } });
    const [fresh] = await services.db
      .insert(photoWebhookDeliveries)
      .values({ webhookId: id, predictionId: prediction.id })
      .onConflictDoNothing()
      .returning({ webhookId: photoWebhookDeliveries.webhookId });
    if (!fresh) return c.json({ data: { outcome: "duplicate" } });
    try {
      const item = await itemByPrediction(services.db, prediction.id);
      if (!item || !ENDED.has(prediction.status)) return c.json({ data: { outcome: "ignored" } });
      const [job] = await services.db
        .select({ async: photoJobs.async })
        .from(photoJobs)
        .where(and(eq(photoJobs.id, item.jobId)))
        .limit(1);
      if (!job?.async) return c.json({ data: { outcome: "ignored" } });
      const finished = await finishItem(services, item.jobId, item.itemIndex, prediction);
      return c.json({ data: { outcome: finished ? "finished" : "already finished" } });
    } catch (err) {
      await services.db.delete(photoWebhookDeliveries).where(eq(photoWebhookDeliveries.webhookId, id));
      throw err;
    }
  });
  return router;
}

const STATUSES = new Set(["starting", "processing", "succeeded", "failed", "canceled", "aborted"]);

function parsePrediction(raw: string): PredictionState | null {
  try {
    const body = JSON.parse(raw) as { id?: unknown; status?: unknown; output?: unknown; error?: unknown };
    if (typeof body?.id !== "string" || typeof body.status !== "string" || !STATUSES.has(body.status)) return null;
    return { id: body.id, status: body.status as PredictionState["status"], output: body.output, error: body.error };
  } catch {
    return null;
  }
}
