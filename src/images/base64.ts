/**
 * Base64 and data-URI image input: the data URI's type, the 10 MB limit (checked before allocating) and the
 * API's errors, around the one Base64 codec (src/lib/encoding.ts).
 */
import { ApiError } from "../lib/errors";
import { Base64Error, decodeBase64, type Base64Stream } from "../lib/encoding";
import { formatOverLimit, MAX_IMAGE_BYTES } from "./sniff";

const DATA_URI = /^data:([^;,]*)((?:;[^;,]*)*),/i;

/**
 * Parses a data URI (`data:image/png;base64,...`) or bare Base64 (standard or URL-safe alphabet; line breaks
 * and spaces ignored) into bytes. Throws INVALID_IMAGE (422) for bad Base64, a non-image or non-base64 data
 * URI, and PAYLOAD_TOO_LARGE (413) when it would decode to more than 10 MB.
 *
 * @example
 * bytesFromBase64("data:image/png;base64,iVBORw0KGgo..."); // Uint8Array [0x89, 0x50, ...]
 */
export function bytesFromBase64(input: string, maxBytes = MAX_IMAGE_BYTES): Uint8Array {
  const body = input.slice(base64Start(input));

  // Upper bound before decoding: 3 bytes per 4 characters, whitespace included (so it never under-counts).
  if (Math.floor((body.length * 3) / 4) > maxBytes + 3 && estimateDecoded(body) > maxBytes) throw tooLarge(maxBytes);

  let bytes: Uint8Array;
  try {
    bytes = decodeBase64(body);
  } catch (err) {
    if (err instanceof Base64Error) throw invalidBase64(err.message);
    throw err;
  }
  return checkedBytes(bytes, maxBytes);
}

/**
 * Where the Base64 of an image string starts: after the comma of an image data URI, or at 0 for bare Base64.
 * Throws INVALID_IMAGE for a data URI that is not a Base64 image. Only the first 256 characters are read.
 */
export function base64Start(input: string): number {
  const uri = DATA_URI.exec(input.slice(0, 256));
  if (uri) {
    const mime = uri[1]!.trim().toLowerCase();
    const params = uri[2]!
      .toLowerCase()
      .split(";")
      .map((p) => p.trim());
    if (mime && !mime.startsWith("image/")) {
      throw new ApiError("INVALID_IMAGE", `The data URI has type "${mime.slice(0, 40)}"; it must be an image (image/jpeg, image/png or image/webp).`);
    }
    if (!params.includes("base64")) throw new ApiError("INVALID_IMAGE", "The data URI must be Base64-encoded (data:image/...;base64,...).");
    return uri[0].length;
  }
  if (/^data:/i.test(input)) throw new ApiError("INVALID_IMAGE", "The data URI is malformed; expected data:image/<type>;base64,<data>.");
  return 0;
}

/**
 * The image a `Base64Stream` decoded from a string's Base64 (after `base64Start`), or the error
 * `bytesFromBase64` throws for the same text: too large, invalid, empty.
 */
export function bytesFromBase64Stream(stream: Base64Stream, maxBytes = MAX_IMAGE_BYTES): Uint8Array {
  stream.finish();
  if (Math.floor((stream.position * 3) / 4) > maxBytes + 3 && Math.floor((stream.dataChars * 3) / 4) > maxBytes) throw tooLarge(maxBytes);
  if (stream.error !== null) throw invalidBase64(stream.error);
  if (stream.decoded > maxBytes) throw tooLargeDecoded(stream.decoded);
  return checkedBytes(stream.bytes(), maxBytes);
}

function checkedBytes(bytes: Uint8Array, maxBytes: number): Uint8Array {
  if (bytes.length === 0) throw new ApiError("INVALID_IMAGE", "The image is empty: no Base64 data was given.");
  if (bytes.length > maxBytes) throw tooLargeDecoded(bytes.length);
  return bytes;
}

const tooLarge = (maxBytes: number) =>
  new ApiError("PAYLOAD_TOO_LARGE", `The Base64 image decodes to more than ${maxBytes / 1024 / 1024} MB; images may be at most 10 MB.`);
const tooLargeDecoded = (length: number) =>
  new ApiError("PAYLOAD_TOO_LARGE", `The Base64 image decodes to ${formatOverLimit(length)}; images may be at most 10 MB.`);
const invalidBase64 = (message: string) => new ApiError("INVALID_IMAGE", `The image is not valid Base64: ${message}.`);

function estimateDecoded(body: string): number {
  let chars = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09 && c !== 0x3d) chars++;
  }
  return Math.floor((chars * 3) / 4);
}
