/**
 * Standard Webhooks signing: `webhook-id`, `webhook-timestamp` (seconds) and `webhook-signature`, the
 * `v1,<Base64 HMAC-SHA256 of id.timestamp.body>` of each secret that signs, space-separated (the new and the
 * previous secret during a rotation's overlap). The HMAC is WebCrypto's in workerd; Node sets node:crypto's
 * synchronous one (`configureHmacSha256`, functions/node/engines.ts), a tenth of WebCrypto's cost there (a
 * burst's thousands of messages are signed beside everything else the thread does). The tests verify every
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

/** A synchronous HMAC-SHA256 as Base64, from the key's bytes and the signed text (UTF-8). */
export type HmacSha256Base64 = (key: Uint8Array, data: string) => string;
let nativeHmac: HmacSha256Base64 | null = null;

/**
 * Signs with `hmac` instead of WebCrypto.
 *
 * @example
 * configureHmacSha256((key, data) => createHmac("sha256", key).update(data).digest("base64"));
 */
export function configureHmacSha256(hmac: HmacSha256Base64): void {
  nativeHmac = hmac;
}

export async function signedHeaders(webhookId: string, at: Date, body: string, secrets: readonly string[]): Promise<Record<string, string>> {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const text = `${webhookId}.${timestamp}.${body}`;
  const hmac = nativeHmac;
  const signatures = hmac
    ? secrets.map((secret) => `v1,${hmac(rawKeyOf(secret), text)}`)
    : await Promise.all(
        secrets.map(
          async (secret) => `v1,${base64FromBytes(new Uint8Array(await crypto.subtle.sign("HMAC", await keyOf(secret), new TextEncoder().encode(text))))}`,
        ),
      );
  return { "webhook-id": webhookId, "webhook-timestamp": timestamp, "webhook-signature": signatures.join(" ") };
}

/** A secret's key bytes (the Base64 after `whsec_`; decoding 32 bytes costs less than keeping them). */
function rawKeyOf(secret: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(decodeBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret));
}

/** Imported HMAC keys by secret (endpoints sending now, and their previous secrets), as the cipher keeps tokens. */
const keys = keptLookups<CryptoKey>({ ttlMs: 10 * 60_000, maxEntries: 500 });

function keyOf(secret: string): Promise<CryptoKey> {
  return keys(secret, () => crypto.subtle.importKey("raw", rawKeyOf(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]));
}
