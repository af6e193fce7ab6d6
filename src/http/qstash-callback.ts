/**
 * The check every QStash callback route makes before it reads its message: the `Upstash-Signature` JWT is
 * verified with the Receiver against the current and the next signing key, over the raw body and bound to
 * the callback's URL. Without the QSTASH_* configuration the route does not exist (404); a missing or
 * invalid signature is 401 before the body is parsed.
 *
 * @example
 * const raw = await verifiedQStashBody(c, publishCallbackUrl(c.get("services").config));
 */
import type { Context } from "hono";
import { Receiver } from "@upstash/qstash";
import type { AppEnv } from "./env";
import { ApiError } from "./errors";

/** Answers the request's raw body once QStash's signature over it and `url` is verified; throws the 404 or 401 otherwise. */
export async function verifiedQStashBody(c: Context<AppEnv>, url: string): Promise<string> {
  const services = c.get("services");
  const qstash = services.config.qstash;
  if (!qstash) throw new ApiError("NOT_FOUND", "No route matches this method and path.");
  const signature = c.req.header("upstash-signature");
  const raw = await c.req.text();
  if (!signature) throw new ApiError("UNAUTHORIZED", "Missing Upstash-Signature.");
  const receiver = new Receiver({ currentSigningKey: qstash.currentSigningKey, nextSigningKey: qstash.nextSigningKey, devMode: false });
  try {
    await receiver.verify({ signature, body: raw, url, clockTolerance: 5 });
  } catch (err) {
    services.log.warn("qstash signature refused", { reason: err instanceof Error ? err.message.slice(0, 200) : "invalid" });
    throw new ApiError("UNAUTHORIZED", "The Upstash-Signature is not valid for this request.");
  }
  return raw;
}
