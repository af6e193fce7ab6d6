/**
 * The edge queue: one QStash message per due delivery, POSTed back to this service's publish route
 * (`${PUBLIC_BASE_URL}/api/internal/deliveries/publish`, body `{"deliveryId": ...}`), signed by QStash and
 * verified there. `notBefore` is the due time in unix seconds, rounded up so a message never arrives early.
 * The deduplication id is the delivery plus its due time, i.e. one per attempt: a re-sent enqueue of the
 * same attempt (a retried request, two sweeps) is absorbed by QStash, while each retry gets a new message.
 *
 * @example
 * const queue = QStashQueue(config);
 * const jobId = await queue.enqueue(deliveryId, new Date(Date.now() + 60_000));
 */
import { Client } from "@upstash/qstash";
import type { Config } from "../../config";
import type { Queue } from "../../services";

export const PUBLISH_CALLBACK_PATH = "/api/internal/deliveries/publish";
/** Where QStash brings a webhook delivery's message: body `{"webhookDeliveryId": ...}`. */
export const WEBHOOK_CALLBACK_PATH = "/api/internal/webhooks/send";

/**
 * How far ahead QStash holds a message: 7 days on its free plan (a year on pay-as-you-go). A later due time
 * gets no message when it is set; the sweep queues it once it is this close (`requeueOrphans`).
 */
export const QSTASH_HORIZON_MS = 7 * 24 * 60 * 60_000;

/** How often QStash itself re-delivers when our route answers non-2xx (an infrastructure failure only). */
const DELIVERY_RETRIES = 3;

export function publishCallbackUrl(config: Pick<Config, "publicBaseUrl">): string {
  return `${config.publicBaseUrl}${PUBLISH_CALLBACK_PATH}`;
}

export function webhookCallbackUrl(config: Pick<Config, "publicBaseUrl">): string {
  return `${config.publicBaseUrl}${WEBHOOK_CALLBACK_PATH}`;
}

export function QStashQueue(config: Config): Queue {
  if (!config.qstash) throw new Error("QStashQueue needs the QSTASH_* configuration");
  const client = new Client({
    baseUrl: config.qstash.url,
    token: config.qstash.token,
    // Never let the SDK switch to its local dev server or read credentials from the environment.
    devMode: false,
    enableTelemetry: false,
    retry: { retries: 2, backoff: (n) => 100 * 2 ** n },
  });
  const url = publishCallbackUrl(config);
  const webhookUrl = webhookCallbackUrl(config);
  return {
    kind: "qstash",
    async enqueue(deliveryId, notBefore) {
      if (notBefore && notBefore.getTime() - Date.now() > QSTASH_HORIZON_MS) return null;
      const seconds = notBefore ? Math.ceil(notBefore.getTime() / 1000) : undefined;
      const res = await client.publishJSON({
        url,
        body: { deliveryId },
        notBefore: seconds,
        deduplicationId: `${deliveryId}-${seconds ?? "now"}`,
        retries: DELIVERY_RETRIES,
      });
      return (res as { messageId?: string }).messageId ?? null;
    },
    async enqueueWebhook(webhookDeliveryId, notBefore) {
      const seconds = Math.ceil(notBefore.getTime() / 1000);
      const res = await client.publishJSON({
        url: webhookUrl,
        body: { webhookDeliveryId },
        notBefore: seconds > Date.now() / 1000 ? seconds : undefined,
        // Per delivery and due instant (ms): two dispatchers queueing the same attempt make one message, a replay a new one.
        deduplicationId: `wh-${webhookDeliveryId}-${notBefore.getTime()}`,
        retries: DELIVERY_RETRIES,
      });
      return (res as { messageId?: string }).messageId ?? null;
    },
    async cancel(jobId) {
      try {
        await client.messages.cancel(jobId);
      } catch (err) {
        // Already delivered or cancelled: QStash answers 404, which is the outcome we wanted.
        if ((err as { status?: number })?.status !== 404) throw err;
      }
    },
  };
}
