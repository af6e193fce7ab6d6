/** Small portable encoders (WebCrypto and typed arrays only, so they run in workerd and Node alike). */

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Random base62 string; rejection sampling keeps every character equally likely. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
    for (const b of bytes) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}

/** Fixed-width base62 of an unsigned 32-bit number (6 characters hold 62^6 > 2^32). */
export function base62Fixed(value: number, width = 6): string {
  let v = value >>> 0;
  let out = "";
  for (let i = 0; i < width; i++) {
    out = BASE62[v % 62] + out;
    v = Math.floor(v / 62);
  }
  return out;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE), as used by PNG and zip. */
export function crc32(data: Uint8Array, start = 0, end = data.length, seed = 0): number {
  let c = ~seed >>> 0;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

export async function sha256Hex(input: string | Uint8Array): Promise<string> {
  const data = typeof input === "string" ? new TextEncoder().encode(input) : input;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data as BufferSource));
  return toHex(digest);
}

export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** Compares two strings in time that depends only on their length (equal-length digests in practice). */
export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

const BASE64_CODES = new TextEncoder().encode("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");

/**
 * Standard Base64 with padding. Written as ASCII bytes and read back as one string: no binary string and no
 * argument arrays on the way (for a 6 MB PNG those were ~40 MB of garbage next to the result).
 */
export function base64FromBytes(bytes: Uint8Array): string {
  const out = new Uint8Array(Math.ceil(bytes.length / 3) * 4);
  const t = BASE64_CODES;
  const whole = bytes.length - (bytes.length % 3);
  let o = 0;
  for (let i = 0; i < whole; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o] = t[v >> 18]!;
    out[o + 1] = t[(v >> 12) & 63]!;
    out[o + 2] = t[(v >> 6) & 63]!;
    out[o + 3] = t[v & 63]!;
    o += 4;
  }
  if (whole < bytes.length) {
    const two = whole + 1 < bytes.length;
    const v = (bytes[whole]! << 16) | (two ? bytes[whole + 1]! << 8 : 0);
    out[o] = t[v >> 18]!;
    out[o + 1] = t[(v >> 12) & 63]!;
    out[o + 2] = two ? t[(v >> 6) & 63]! : 0x3d;
    out[o + 3] = 0x3d;
  }
  return new TextDecoder().decode(out);
}

export function bytesFromBase64Strict(value: string): Uint8Array | null {
  const clean = value.replace(/\s+/g, "").replace(/-/g, "+").replace(/_/g, "/");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean) || clean.length % 4 === 1) return null;
  try {
    const binary = atob(clean);
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Row ids are UUIDs; anything else cannot name a row (and would make Postgres throw on the cast). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** JSON with object keys sorted and no whitespace: equal values give equal text (request fingerprints). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}
