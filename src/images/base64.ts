/**
 * Base64 and data-URI input. Decoded by hand (not atob) so we can check the size before allocating, accept
 * both alphabets, and report a bad character precisely without echoing the payload.
 */
import { ApiError } from "../http/errors";
import { MAX_IMAGE_BYTES } from "./sniff";

const LOOKUP = (() => {
  const t = new Int16Array(128).fill(-1);
  const std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (let i = 0; i < 64; i++) t[std.charCodeAt(i)] = i;
  t["-".charCodeAt(0)] = 62; // base64url
  t["_".charCodeAt(0)] = 63;
  return t;
})();

/**
 * The same alphabet for the four-character fast path, indexed by any UTF-16 code unit (so no range check per
 * character): 0..63 for data, 0x80 for everything else (whitespace, padding, invalid), which sends that group
 * of four to the careful path.
 */
let wide: Uint8Array | null = null;
function wideLookup(): Uint8Array {
  if (!wide) {
    wide = new Uint8Array(65536).fill(0x80);
    for (let c = 0; c < 128; c++) if (LOOKUP[c]! >= 0) wide[c] = LOOKUP[c]!;
  }
  return wide;
}

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
  let body = input;
  const uri = DATA_URI.exec(input.slice(0, 256));
  if (uri) {
    const mime = uri[1]!.trim().toLowerCase();
    const params = uri[2]!.toLowerCase().split(";").map((p) => p.trim());
    if (mime && !mime.startsWith("image/")) {
      throw new ApiError("INVALID_IMAGE", `The data URI has type "${mime.slice(0, 40)}"; it must be an image (image/jpeg, image/png or image/webp).`);
    }
    if (!params.includes("base64")) throw new ApiError("INVALID_IMAGE", "The data URI must be Base64-encoded (data:image/...;base64,...).");
    body = input.slice(uri[0].length);
  } else if (/^data:/i.test(input)) {
    throw new ApiError("INVALID_IMAGE", "The data URI is malformed; expected data:image/<type>;base64,<data>.");
  }

  // Upper bound before decoding: 3 bytes per 4 characters, whitespace included (so it never under-counts).
  if (Math.floor((body.length * 3) / 4) > maxBytes + 3 && estimateDecoded(body) > maxBytes) {
    throw new ApiError("PAYLOAD_TOO_LARGE", `The Base64 image decodes to more than ${maxBytes / 1024 / 1024} MB; images may be at most 10 MB.`);
  }

  const out = new Uint8Array(Math.floor((body.length * 3) / 4) + 3);
  const quick = decodeClean(body, out);
  if (quick >= 0) {
    if (quick === 0) throw new ApiError("INVALID_IMAGE", "The image is empty: no Base64 data was given.");
    if (quick > maxBytes) {
      throw new ApiError("PAYLOAD_TOO_LARGE", `The Base64 image decodes to ${(quick / 1024 / 1024).toFixed(1)} MB; images may be at most 10 MB.`);
    }
    return out.subarray(0, quick);
  }
  const fast = wideLookup();
  const len = body.length;
  let acc = 0;
  let bits = 0;
  let n = 0;
  let chars = 0;
  let padding = 0;
  let i = 0;
  while (i < len) {
    // Fast path: four data characters at a group boundary become three bytes with one check. Whitespace,
    // padding and bad characters fall through to the character-at-a-time path below, which keeps the exact
    // errors and positions.
    if (bits === 0 && padding === 0) {
      while (i + 4 <= len) {
        const a = fast[body.charCodeAt(i)]!;
        const b = fast[body.charCodeAt(i + 1)]!;
        const c = fast[body.charCodeAt(i + 2)]!;
        const d = fast[body.charCodeAt(i + 3)]!;
        if ((a | b | c | d) & 0x80) break;
        const v = (a << 18) | (b << 12) | (c << 6) | d;
        out[n] = v >> 16;
        out[n + 1] = (v >> 8) & 0xff;
        out[n + 2] = v & 0xff;
        n += 3;
        chars += 4;
        i += 4;
      }
      if (i >= len) break;
    }
    const c = body.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) { i++; continue; }
    if (c === 0x3d) { padding++; i++; continue; }
    const v = c < 128 ? LOOKUP[c]! : -1;
    if (v < 0 || padding > 0) {
      throw new ApiError("INVALID_IMAGE", `The image is not valid Base64: unexpected ${v < 0 ? "character" : "data after padding"} at position ${i}.`);
    }
    chars++;
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (acc >> bits) & 0xff;
    }
    i++;
  }
  if (chars === 0) throw new ApiError("INVALID_IMAGE", "The image is empty: no Base64 data was given.");
  if (chars % 4 === 1 || padding > 2 || (padding > 0 && (chars + padding) % 4 !== 0)) {
    throw new ApiError("INVALID_IMAGE", "The image is not valid Base64: its length or padding is wrong.");
  }
  if (n > maxBytes) {
    throw new ApiError("PAYLOAD_TOO_LARGE", `The Base64 image decodes to ${(n / 1024 / 1024).toFixed(1)} MB; images may be at most 10 MB.`);
  }
  return out.subarray(0, n);
}

const BYTE_LOOKUP = (() => {
  const t = new Int16Array(256).fill(-1);
  for (let c = 0; c < 128; c++) t[c] = LOOKUP[c]!;
  return t;
})();

let encoder: TextEncoder | null = null;
/** Characters taken as bytes at a time (a multiple of 4); the bytes go to one reused buffer. */
const CHUNK = 64 * 1024;
let chunk: Uint8Array | null = null;

/**
 * The common case at native-ish speed: the string as bytes (TextEncoder, a plain copy for ASCII strings),
 * 64 KiB at a time into one reused buffer (a 13 MB string never gets a 13 MB copy), then a byte table over
 * groups of four, which beats charCodeAt per character several times over. Only clean input qualifies:
 * data characters, at most two `=` at the end and a valid length. Returns the byte count, or -1 for
 * anything else (whitespace, bad characters, bad padding), which the character-at-a-time path then
 * decodes or reports precisely.
 */
function decodeClean(body: string, out: Uint8Array): number {
  encoder ??= new TextEncoder();
  chunk ??= new Uint8Array(CHUNK);
  let len = body.length;
  let padding = 0;
  while (len > 0 && padding < 2 && body.charCodeAt(len - 1) === 0x3d) { len--; padding++; }
  if (padding > 0 && (len + padding) % 4 !== 0) return -1;
  const rest = len % 4;
  if (rest === 1) return -1;
  const t = BYTE_LOOKUP;
  const src = chunk;
  let n = 0;
  let bad = 0;
  for (let at = 0; at < len; at += CHUNK) {
    const part = body.slice(at, Math.min(len, at + CHUNK));
    const { read, written } = encoder.encodeInto(part, src);
    if (read !== part.length || written !== part.length) return -1; // non-ASCII: certainly invalid, let the careful path say where
    const whole = written - (written % 4);
    for (let i = 0; i < whole; i += 4) {
      const a = t[src[i]!]!, b = t[src[i + 1]!]!, c = t[src[i + 2]!]!, d = t[src[i + 3]!]!;
      bad |= a | b | c | d;
      const v = (a << 18) | (b << 12) | (c << 6) | d;
      out[n] = v >> 16;
      out[n + 1] = v >> 8;
      out[n + 2] = v;
      n += 3;
    }
    if (whole < written) {
      // The last 2 or 3 characters (only the last chunk can end off a group of four).
      const a = t[src[whole]!]!, b = t[src[whole + 1]!]!, c = rest === 3 ? t[src[whole + 2]!]! : 0;
      bad |= a | b | c;
      const v = (a << 18) | (b << 12) | (c << 6);
      out[n++] = v >> 16;
      if (rest === 3) out[n++] = v >> 8;
    }
  }
  return bad < 0 ? -1 : n;
}

function estimateDecoded(body: string): number {
  let chars = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09 && c !== 0x3d) chars++;
  }
  return Math.floor((chars * 3) / 4);
}
