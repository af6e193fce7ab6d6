/**
 * The Idempotency-Key header, read the same way by every area: `"abc"` (an RFC 8941 sf-string, as the IETF
 * draft writes it) and `abc` are the same key; 1 to 255 visible ASCII characters.
 *
 * @example
 * readIdempotencyKey(c.req.header("idempotency-key")); // null when absent; throws 400 when malformed
 */
import { ApiError } from "./errors";

const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;

/** The key, or null when the header is absent or blank; a malformed key is 400 IDEMPOTENCY_KEY_REQUIRED. */
export function readIdempotencyKey(header: string | undefined): string | null {
  if (header === undefined || header.trim() === "") return null;
  let key = header.trim();
  if (key.length >= 2 && key.startsWith('"') && key.endsWith('"')) key = key.slice(1, -1).replace(/\\(["\\])/g, "$1");
  if (!KEY_FORMAT.test(key)) {
    throw new ApiError(
      "IDEMPOTENCY_KEY_REQUIRED",
      "The Idempotency-Key header must be 1 to 255 visible ASCII characters (no spaces or control characters); a UUID is a good choice.",
    );
  }
  return key;
}
