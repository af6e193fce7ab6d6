/**
 * Verification of the API's webhook messages, signed per the Standard Webhooks specification: the headers
 * `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<Base64 HMAC-SHA256 of
 * "id.timestamp.body">`, several separated by spaces while a rotated secret still signs); the secret is
 * `whsec_` and the Base64 of the key. WebCrypto only, so it runs in browsers, Node 20+ and Workers alike.
 */
import type { webhooks } from "./generated/openapi.js";

/** The payload schema of one entry of the document's `webhooks` section. */
type PayloadOf<W> = W extends { post?: infer Op } ? (Op extends { requestBody?: { content: { "application/json": infer B } } } ? B : never) : never;

/** Every event as the document's `webhooks` section describes it: `{ type, timestamp, data }`. */
type DocumentedEvents = { [K in keyof webhooks]: PayloadOf<webhooks[K]> }[keyof webhooks];

/** An event when the document describes none: its envelope only. */
export interface UntypedWebhookEvent {
  type: string;
  timestamp: string;
  data: unknown;
}

/**
 * A webhook message's payload: the union of the events the document's `webhooks` section describes, narrowed
 * by `type`; the bare envelope while that section is empty.
 */
export type WebhookEvent = string extends keyof webhooks ? UntypedWebhookEvent : [DocumentedEvents] extends [never] ? UntypedWebhookEvent : DocumentedEvents;

/** Why a message was refused: it is not from the API (or not this endpoint's), or too old or too new. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
}

export interface VerifyWebhookOptions {
  /** How far the message's timestamp may be from now, in seconds, either way. Default 300. */
  toleranceSeconds?: number;
  /** The time to check the timestamp against, in milliseconds since the epoch; default `Date.now()`. */
  now?: number;
}

/** A message's headers: a `Headers`, or a plain record as Node's `IncomingMessage.headers` (any case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const encoder = new TextEncoder();

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>))
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(" ") : value;
  return undefined;
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    return undefined;
  }
}

/**
 * Checks a webhook message's signature and age and returns its payload, typed as the documented event union.
 * `body` is the request body exactly as received (read it as text or bytes before any JSON parsing: a
 * re-serialised body no longer matches its signature). Throws `WebhookVerificationError` when the message
 * is not signed with `secret`, is older or newer than the tolerance, or is not a JSON event.
 *
 * @example
 * const event = await verifyWebhook(await request.text(), request.headers, process.env.WEBHOOK_SECRET!);
 * if (event.type === "post.published") console.log(event.data);
 */
export async function verifyWebhook(
  body: string | Uint8Array | ArrayBuffer,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature header");
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError("webhook-timestamp is not a number of seconds");
  const tolerance = options.toleranceSeconds ?? 300;
  const age = Math.floor((options.now ?? Date.now()) / 1000) - Number(timestamp);
  if (age > tolerance) throw new WebhookVerificationError("message timestamp too old");
  if (age < -tolerance) throw new WebhookVerificationError("message timestamp too new");

  const key = fromBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret);
  if (!key || key.length === 0) throw new WebhookVerificationError("the secret is not whsec_ followed by Base64");
  const hmac = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const bodyBytes = typeof body === "string" ? encoder.encode(body) : body instanceof Uint8Array ? body : new Uint8Array(body);
  const prefix = encoder.encode(`${id}.${timestamp}.`);
  const signed = new Uint8Array(prefix.length + bodyBytes.length);
  signed.set(prefix);
  signed.set(bodyBytes, prefix.length);

  let verified = false;
  for (const entry of signatures.split(" ")) {
    const [version, value] = entry.split(",", 2);
    if (version !== "v1" || !value) continue;
    const signature = fromBase64(value);
    // subtle.verify compares in constant time.
    if (signature && (await crypto.subtle.verify("HMAC", hmac, signature, signed))) {
      verified = true;
      break;
    }
  }
  if (!verified) throw new WebhookVerificationError("no matching signature");

  let event: unknown;
  try {
    event = JSON.parse(typeof body === "string" ? body : new TextDecoder().decode(bodyBytes));
  } catch {
    throw new WebhookVerificationError("the body is not JSON");
  }
  if (!event || typeof event !== "object" || typeof (event as { type?: unknown }).type !== "string")
    throw new WebhookVerificationError("the body is not an event ({type, timestamp, data})");
  return event as WebhookEvent;
}
