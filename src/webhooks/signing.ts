/**
 * Standard Webhooks signing: `webhook-id`, `webhook-timestamp` (seconds) and `webhook-signature`, the
 * `v1,<Base64 HMAC-SHA256 of id.timestamp.body>` of each secret that signs, space-separated (the new and the
 * previous secret during a rotation's overlap). The HMAC is the `standardwebhooks` package's own `sign`
 * (pure JavaScript, so the same code signs on Node and in workerd), the package receivers verify with.
 *
 * @example
 * const secret = newSecret();                     // "whsec_…"
 * signedHeaders("msg_1", new Date(), body, [secret]);
 */
import { Webhook } from "standardwebhooks";
import { base64FromBytes } from "../lib/encoding";

const SECRET_BYTES = 32;

/** `whsec_` + Base64 of 32 random bytes. */
export function newSecret(): string {
  return `whsec_${base64FromBytes(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)))}`;
}

/** The `webhook-id` of a message: the same on every retry and replay, and for every endpoint it goes to. */
export function webhookIdOf(messageId: string): string {
  return `msg_${messageId.replaceAll("-", "")}`;
}

export function signedHeaders(webhookId: string, at: Date, body: string, secrets: readonly string[]): Record<string, string> {
  return {
    "webhook-id": webhookId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": secrets.map((secret) => new Webhook(secret).sign(webhookId, at, body)).join(" "),
  };
}
