/**
 * The webhook event types, what each means, and the message every event is sent as:
 * `{"type": "<event type>", "timestamp": "<ISO-8601 of the change>", "data": <the resource as the API returns it>}`.
 */

export const WEBHOOK_EVENT_TYPES = [
  "post.published",
  "post.partially_published",
  "post.failed",
  "post.cancelled",
  "post.target.published",
  "post.target.failed",
  "account.reconnect_required",
  "photo.job.succeeded",
  "photo.job.failed",
  "webhook.test",
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export function isWebhookEventType(value: string): value is WebhookEventType {
  return (WEBHOOK_EVENT_TYPES as readonly string[]).includes(value);
}

/** One sentence per event type: the reference page and the hub show them. */
export const EVENT_DESCRIPTIONS: Record<WebhookEventType, string> = {
  "post.published": "Every target of a post is published. `data` is the post as GET /api/v1/social/posts/{id} returns it.",
  "post.partially_published": "Every target of a post is final and some, not all, are published. `data` is the post.",
  "post.failed": "Every target of a post failed for good. `data` is the post.",
  "post.cancelled": "A post was cancelled with none of its targets published. `data` is the post.",
  "post.target.published": "One target of a post is published. `data` holds the target (with its platform post id) and the post.",
  "post.target.failed":
    "One target of a post failed for good (no retry follows). `data` holds the target, whose `error` has the code and message, and the post.",
  "account.reconnect_required":
    "A connected account's token expired or was revoked; publishing to it needs a reconnect in the hub. `data` is the account as GET /api/v1/social/accounts lists it.",
  "photo.job.succeeded":
    "An asynchronous product-photography job (Prefer: respond-async) succeeded. `data` is the job as GET /api/image/product-photography/jobs/{id} returns it, result included.",
  "photo.job.failed": "An asynchronous product-photography job failed. `data` is the job, with its error.",
  "webhook.test": "Sent by POST /api/v1/webhooks/{id}/test, to this endpoint only, whatever events it takes.",
};
