/**
 * Standard Webhooks signing: `webhook-id`, `webhook-timestamp` (seconds) and `webhook-signature`, the
 * `v1,<Base64 HMAC-SHA256 of id.timestamp.body>` of each secret that signs, space-separated (the new and the
 * previous secret during a rotation's overlap). The HMAC is WebCrypto's, native on Node and in workerd (a
 * burst's thousands of messages are signed beside everything else the thread does); the tests verify every
 * message with the `standardwebhooks` package, the one receivers use.
 *
 * @example
 * const secret = newSecret();                     // "whsec_…"
 * await signedHeaders("msg_1", new Date(), body, [secret]);
 */
import { base64FromBytes, decodeBase64 } from "../lib/encoding";
import { keptLookups } from "../lib/kept-lookups";

const SECRET_BYTES = 32;

/** `whsec_` + Base64 of 32 random bytes. */
export function newSecret(): string {
  return `whsec_${base64FromBytes(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)))}`;
}

/** The `webhook-id` of a message: the same on every retry and replay, and for every endpoint it goes to. */
export function webhookIdOf(messageId: string): string {
  return `msg_${messageId.replaceAll("-", "")}`;
}

export async function signedHeaders(webhookId: string, at: Date, body: string, secrets: readonly string[]): Promise<Record<string, string>> {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const signed = new TextEncoder().encode(`${webhookId}.${timestamp}.${body}`);
  const signatures = await Promise.all(
    secrets.map(async (secret) => `v1,${base64FromBytes(new Uint8Array(await crypto.subtle.sign("HMAC", await keyOf(secret), signed)))}`),
  );
  return { "webhook-id": webhookId, "webhook-timestamp": timestamp, "webhook-signature": signatures.join(" ") };
}

/** Imported HMAC keys by secret (endpoints sending now, and their previous secrets), as the cipher keeps tokens. */
const keys = keptLookups<CryptoKey>({ ttlMs: 10 * 60_000, maxEntries: 500 });

function keyOf(secret: string): Promise<CryptoKey> {
  return keys(secret, () => {
    const raw = decodeBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret);
    return crypto.subtle.importKey("raw", new Uint8Array(raw), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  });
}
