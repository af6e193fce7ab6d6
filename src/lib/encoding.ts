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
  if (nativeSha256Hex) return nativeSha256Hex(input);
  const data = typeof input === "string" ? new TextEncoder().encode(input) : input;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data as BufferSource));
  return toHex(digest);
}

let nativeSha256Hex: ((input: string | Uint8Array) => string) | null = null;

/** The parts one after another in one buffer (the one part itself when there is only one). */
export function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/**
 * A synchronous SHA-256 (Node: node:crypto, set in functions/node) for `sha256Hex`: the same digest without
 * WebCrypto's round trip through the thread pool, which every authenticated request pays for its API key's hash.
 *
 * @example
 * configureSha256Hex((input) => createHash("sha256").update(input).digest("hex"));
 */
export function configureSha256Hex(hex: (input: string | Uint8Array) => string): void {
  nativeSha256Hex = hex;
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

/**
 * Base64, the one codec (image uploads, data URIs we send, token encryption keys, config). Written here rather
 * than taken from a library: the portable candidates (@oslojs/encoding, atob/btoa) are many times slower on
 * an upload's megabytes and give no error position; Buffer is Node-only (docs/performance.md).
 *
 * Decoding accepts the standard and URL-safe alphabets (mixed too), ASCII spaces, tabs and line breaks
 * anywhere, and optional padding; when padding is given it must complete the last group of four.
 */
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Value of each byte (or code unit below 256) as a Base64 digit, -1 for anything that is not one. */
const DIGITS = (() => {
  const t = new Int16Array(256).fill(-1);
  for (let i = 0; i < 64; i++) t[ALPHABET.charCodeAt(i)] = i;
  t["-".charCodeAt(0)] = 62; // base64url
  t["_".charCodeAt(0)] = 63;
  return t;
})();

/** Invalid Base64; `message` says what and where (a position in the text, never its content). */
export class Base64Error extends Error {}

let textEncoder: TextEncoder | null = null;
let textDecoder: TextDecoder | null = null;

/**
 * Decodes Base64 text (rules above); empty text, or padding alone, gives no bytes. Throws Base64Error.
 *
 * @example
 * decodeBase64("aGk="); // Uint8Array [0x68, 0x69]
 */
export function decodeBase64(text: string): Uint8Array {
  if (nativeDecoder && text.length >= NATIVE_AT_LEAST && isClean(text)) {
    const bytes = nativeDecoder(text);
    if (bytes.length === cleanLength(text)) return bytes;
  }
  // Clean text decodes to exactly this many bytes, so its result is the whole of its own buffer (which
  // can then move to another thread rather than be copied); anything else gets a buffer large enough.
  const out = new Uint8Array(cleanLength(text));
  const n = decodeClean(text, out);
  if (n === out.length) return out;
  const wide = new Uint8Array(Math.floor((text.length * 3) / 4) + 3);
  return wide.subarray(0, decodeCareful(text, wide));
}

/** Text at least this long goes to the native decoder when there is one; below, a call saves nothing. */
const NATIVE_AT_LEAST = 64 * 1024;
const CLEAN = /^[A-Za-z0-9+/_-]*={0,2}$/;
let nativeDecoder: ((text: string) => Uint8Array) | null = null;

/**
 * A native decoder for long clean Base64 (Node: Buffer, set in functions/node), which with the check
 * below decodes an upload in a fraction of the portable decoder's time. It only ever gets text that
 * `decodeClean` would take whole (data characters of either alphabet, at most two `=` at the end, a valid
 * length), where every decoder agrees; everything else, and every error message, stays with the code here.
 * It must return a Uint8Array (not a Buffer, whose `slice` does not copy) that is the whole of its buffer.
 *
 * @example
 * configureBase64Decoder((text) => { const b = Buffer.from(text, "base64"); return new Uint8Array(b.buffer, b.byteOffset, b.length); });
 */
export function configureBase64Decoder(decode: (text: string) => Uint8Array): void {
  nativeDecoder = decode;
}

/**
 * Runs of Base64 digits in bytes at least this long go to the native digits decoder when there is one (a
 * request body's 64 KiB chunks); below, a call saves nothing.
 */
const NATIVE_DIGITS_AT_LEAST = 4096;
let nativeDigits: ((src: Uint8Array, start: number, end: number, out: Uint8Array, at: number) => number) | null = null;

/**
 * A native decoder for `Base64Stream.digits` (Node: Buffer, set in functions/node): given the bytes
 * `src[start..end)` (`out` from `at` has room for all of them), it decodes some whole groups of four at
 * their start, all data characters of either alphabet, into `out` from `at`, and returns how many characters
 * it took (a multiple of 4, 0 when it takes none; Node's takes all of them or none). The rest, and every
 * error, stays with the code here. It decodes an upload's digits in about half the loop's time.
 *
 * @example
 * configureBase64Digits((src, start, end, out, at) => { ... return chars; });
 */
export function configureBase64Digits(decode: (src: Uint8Array, start: number, end: number, out: Uint8Array, at: number) => number): void {
  nativeDigits = decode;
}

/** The rules of `decodeClean` as one regular expression (V8 runs it at ~2 GB/s) and the length checks. */
function isClean(text: string): boolean {
  return CLEAN.test(text) && cleanShape(unpadded(text));
}

/** The byte count of `text` if it is clean Base64 (see `decodeClean`). */
function cleanLength(text: string): number {
  const { len } = unpadded(text);
  const rest = len % 4;
  return (len >> 2) * 3 + (rest > 1 ? rest - 1 : 0);
}

/** The text's length without its trailing `=` (at most two), and how many there were. */
function unpadded(text: string): { len: number; padding: number } {
  let len = text.length;
  let padding = 0;
  while (len > 0 && padding < 2 && text.charCodeAt(len - 1) === 0x3d) {
    len--;
    padding++;
  }
  return { len, padding };
}

/** Whether data of this length with this padding can be whole Base64 (padding, when given, completes a group of four). */
const cleanShape = ({ len, padding }: { len: number; padding: number }) => len % 4 !== 1 && (padding === 0 || (len + padding) % 4 === 0);

/** Characters taken as bytes at a time (a multiple of 4), into one reused buffer. */
const CHUNK = 64 * 1024;
let chunk: Uint8Array | null = null;

/**
 * The common case at native-ish speed: the string as bytes (TextEncoder's encodeInto, a plain copy for ASCII
 * strings) 64 KiB at a time into one reused buffer, so a long string never gets a copy of its own size
 * (memory in a Worker), then a byte table over groups of four, which is much faster than charCodeAt per
 * character.
 * Only clean input qualifies: data characters, at most two `=` at the end and a valid length. Returns the
 * byte count, or -1 for anything else (whitespace, bad characters, bad padding), which `decodeCareful` then
 * decodes or reports precisely.
 */
function decodeClean(text: string, out: Uint8Array): number {
  textEncoder ??= new TextEncoder();
  chunk ??= new Uint8Array(CHUNK);
  const shape = unpadded(text);
  if (!cleanShape(shape)) return -1;
  const len = shape.len;
  const rest = len % 4;
  const t = DIGITS;
  const src = chunk;
  let n = 0;
  let bad = 0;
  for (let at = 0; at < len; at += CHUNK) {
    const part = text.slice(at, Math.min(len, at + CHUNK));
    const { read, written } = textEncoder.encodeInto(part, src);
    if (read !== part.length || written !== part.length) return -1; // non-ASCII: certainly invalid, let the careful path say where
    const whole = written - (written % 4);
    for (let i = 0; i < whole; i += 4) {
      const a = t[src[i]!]!,
        b = t[src[i + 1]!]!,
        c = t[src[i + 2]!]!,
        d = t[src[i + 3]!]!;
      bad |= a | b | c | d;
      const v = (a << 18) | (b << 12) | (c << 6) | d;
      out[n] = v >> 16;
      out[n + 1] = v >> 8;
      out[n + 2] = v;
      n += 3;
    }
    if (whole < written) {
      // The last 2 or 3 characters (only the last chunk can end off a group of four).
      const a = t[src[whole]!]!,
        b = t[src[whole + 1]!]!,
        c = rest === 3 ? t[src[whole + 2]!]! : 0;
      bad |= a | b | c;
      const v = (a << 18) | (b << 12) | (c << 6);
      out[n++] = v >> 16;
      if (rest === 3) out[n++] = v >> 8;
    }
  }
  return bad < 0 ? -1 : n;
}

/**
 * The same digits for the four-character fast path of `decodeCareful`, indexed by any UTF-16 code unit (so no
 * range check per character): 0..63 for digits, 0x80 for everything else (whitespace, padding, invalid).
 */
let wide: Uint8Array | null = null;
function wideDigits(): Uint8Array {
  if (!wide) {
    wide = new Uint8Array(65536).fill(0x80);
    for (let c = 0; c < 256; c++) if (DIGITS[c]! >= 0) wide[c] = DIGITS[c]!;
  }
  return wide;
}

/** Skips whitespace (line-wrapped text) and finds the first error with its position. Returns the byte count. */
function decodeCareful(text: string, out: Uint8Array): number {
  const fast = wideDigits();
  const len = text.length;
  let acc = 0;
  let bits = 0;
  let n = 0;
  let chars = 0;
  let padding = 0;
  let i = 0;
  while (i < len) {
    // Four digits at a group boundary become three bytes with one check; whitespace, padding and bad
    // characters fall through to the character-at-a-time step below.
    if (bits === 0 && padding === 0) {
      while (i + 4 <= len) {
        const a = fast[text.charCodeAt(i)]!,
          b = fast[text.charCodeAt(i + 1)]!;
        const c = fast[text.charCodeAt(i + 2)]!,
          d = fast[text.charCodeAt(i + 3)]!;
        if ((a | b | c | d) & 0x80) break;
        const v = (a << 18) | (b << 12) | (c << 6) | d;
        out[n] = v >> 16;
        out[n + 1] = v >> 8;
        out[n + 2] = v;
        n += 3;
        chars += 4;
        i += 4;
      }
      if (i >= len) break;
    }
    const c = text.charCodeAt(i++);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    if (c === 0x3d) {
      padding++;
      continue;
    }
    const v = c < 256 ? DIGITS[c]! : -1;
    if (v < 0 || padding > 0) throw new Base64Error(`unexpected ${v < 0 ? "character" : "data after padding"} at position ${i - 1}`);
    chars++;
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = acc >> bits;
    }
  }
  if (chars > 0 && (chars % 4 === 1 || padding > 2 || (padding > 0 && (chars + padding) % 4 !== 0))) {
    throw new Base64Error("its length or padding is wrong");
  }
  return n;
}

/** `wideDigits` for bytes only: 0..63 for digits, 0x80 for everything else. */
let byteDigits: Uint8Array | null = null;

/**
 * Base64 decoded as it arrives, a piece at a time (an image field of a JSON body, src/http/inline-images.ts):
 * the rules of `decodeBase64`, and its errors at the same positions, as if the pieces were one text.
 * `digits` takes a run of the text's bytes and stops at the first byte that is not a Base64 digit, which the
 * caller hands to `char` (whitespace, padding, anything invalid, a character a JSON escape stood for).
 * Bytes go into the output until `limit`; past it only `decoded` counts, so a caller can tell an image too
 * large to keep from an invalid one. The first error is kept and decoding stops there; `dataChars` (every
 * character but whitespace and `=`) goes on counting to the end, as the old size estimate did.
 *
 * @example
 * const d = new Base64Stream(10 * 1024 * 1024);
 * for (let i = d.digits(text, 0, text.length); i < text.length; i = d.digits(text, i + 1, text.length)) d.char(text[i]!);
 * d.finish(); // then d.error, or d.bytes()
 */
export class Base64Stream {
  /** Bytes the text decodes to so far (kept or not). */
  decoded = 0;
  /** Characters that are neither whitespace nor `=`, valid or not. */
  dataChars = 0;
  /** Characters (UTF-16 code units of the text) seen so far. */
  position = 0;
  /** The first error, as `decodeBase64` words it; null while the text is valid. */
  error: string | null = null;
  private out: Uint8Array;
  private acc = 0;
  private bits = 0;
  private chars = 0;
  private padding = 0;

  /**
   * `limit` is the most bytes kept. `space`, when given, is where they go (a caller that knows an upper bound
   * of the whole text's bytes allocates once); else the output starts at 1 MiB and doubles.
   */
  constructor(
    private readonly limit: number,
    space?: Uint8Array,
  ) {
    this.out = space ? space.subarray(0, Math.min(limit, space.length)) : new Uint8Array(Math.min(limit, 1024 * 1024));
  }

  /** The bytes decoded (valid only when `error` is null and `decoded <= limit`). */
  bytes(): Uint8Array {
    return this.decoded === this.out.length ? this.out : this.out.subarray(0, this.decoded);
  }

  /**
   * Decodes the Base64 digits of `src[start..end)` up to the first byte that is not one; returns its index
   * (`end` when every byte was a digit).
   */
  digits(src: Uint8Array, start: number, end: number): number {
    const t = (byteDigits ??= (() => {
      const table = new Uint8Array(256).fill(0x80);
      for (let c = 0; c < 256; c++) if (DIGITS[c]! >= 0) table[c] = DIGITS[c]!;
      return table;
    })());
    let i = start;
    if (this.error !== null || this.padding > 0) {
      // Past an error (or data after padding, which is one): only the count goes on.
      while (i < end && t[src[i]!]! !== 0x80) i++;
      if (this.error === null && i > start) this.fail("data after padding", this.position);
      this.dataChars += i - start;
      this.position += i - start;
      return i;
    }
    while (i < end) {
      if (this.bits === 0) {
        // Whole groups of four into three bytes while the output has room.
        let n = this.decoded;
        const room = this.decoded + 3 <= this.out.length || this.grow(this.decoded + 3);
        const out = this.out;
        const stop = room ? Math.min(end - 3, i + Math.floor((out.length - n) / 3) * 4 - 3) : i;
        if (nativeDigits && stop - i >= NATIVE_DIGITS_AT_LEAST) {
          const chars = nativeDigits(src, i, stop + 3, out, n);
          n += (chars / 4) * 3;
          i += chars;
        }
        while (i < stop) {
          const a = t[src[i]!]!,
            b = t[src[i + 1]!]!,
            c = t[src[i + 2]!]!,
            d = t[src[i + 3]!]!;
          if ((a | b | c | d) & 0x80) break;
          const v = (a << 18) | (b << 12) | (c << 6) | d;
          out[n] = v >> 16;
          out[n + 1] = v >> 8;
          out[n + 2] = v;
          n += 3;
          i += 4;
        }
        const took = ((n - this.decoded) / 3) * 4;
        this.decoded = n;
        this.chars += took;
        this.dataChars += took;
        this.position += took;
      }
      if (i >= end) break;
      const v = t[src[i]!]!;
      if (v === 0x80) break;
      this.digit(v);
      i++;
    }
    return i;
  }

  /** One character of the text that `digits` did not take (a code unit; any value). */
  char(c: number): void {
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
      this.position++;
    } else if (c === 0x3d) {
      this.position++;
      this.padding++;
    } else {
      const v = c < 256 ? DIGITS[c]! : -1;
      if (this.error === null && v >= 0 && this.padding === 0) {
        this.digit(v);
        return;
      }
      if (this.error === null) this.fail(v < 0 ? "character" : "data after padding", this.position);
      this.position++;
      this.dataChars++;
    }
  }

  /** Ends the text: the length and padding check of `decodeBase64`. */
  finish(): void {
    if (this.error !== null) return;
    const chars = this.chars,
      padding = this.padding;
    if (chars > 0 && (chars % 4 === 1 || padding > 2 || (padding > 0 && (chars + padding) % 4 !== 0))) {
      this.error = "its length or padding is wrong";
    }
  }

  private digit(v: number): void {
    this.chars++;
    this.dataChars++;
    this.position++;
    this.acc = ((this.acc << 6) | v) & 0xffffff;
    this.bits += 6;
    if (this.bits >= 8) {
      this.bits -= 8;
      if (this.decoded < this.out.length || this.grow(this.decoded + 1)) this.out[this.decoded] = this.acc >> this.bits;
      this.decoded++;
    }
  }

  private fail(what: string, at: number): void {
    this.error = `unexpected ${what} at position ${at}`;
  }

  /** Room for `size` bytes within the limit (doubling), or false once past it. */
  private grow(size: number): boolean {
    if (size > this.limit || this.decoded > this.out.length) return false;
    const next = new Uint8Array(Math.min(this.limit, Math.max(size, this.out.length * 2)));
    next.set(this.out.subarray(0, this.decoded));
    this.out = next;
    return true;
  }
}

/** Two Base64 characters per 12-bit value, as the bytes they occupy in a Uint16Array of ASCII output. */
let pairs: Uint16Array | null = null;
function pairTable(): Uint16Array {
  if (!pairs) {
    pairs = new Uint16Array(4096);
    const bytes = new Uint8Array(pairs.buffer); // written bytewise so the table works on either endianness
    for (let v = 0; v < 4096; v++) {
      bytes[2 * v] = ALPHABET.charCodeAt(v >> 6);
      bytes[2 * v + 1] = ALPHABET.charCodeAt(v & 63);
    }
  }
  return pairs;
}

/**
 * Standard Base64 with padding.
 *
 * @example
 * base64FromBytes(new Uint8Array([0x68, 0x69])); // "aGk="
 */
export function base64FromBytes(bytes: Uint8Array): string {
  textDecoder ??= new TextDecoder();
  return textDecoder.decode(base64Ascii(bytes, new Uint8Array(Math.ceil(bytes.length / 3) * 4)));
}

/**
 * Standard Base64 with padding as ASCII bytes, a piece at a time: `pieceBytes` of input (a multiple of 3)
 * per piece, written into one buffer reused for every piece (each is consumed before the next is asked
 * for), so a large answer never exists as one Base64 string.
 *
 * @example
 * for (const ascii of base64Pieces(png)) controller.enqueue(ascii.slice());
 */
export function* base64Pieces(bytes: Uint8Array, pieceBytes = 48 * 1024): Generator<Uint8Array> {
  const step = Math.max(3, pieceBytes - (pieceBytes % 3));
  const out = new Uint8Array((step / 3) * 4);
  for (let at = 0; at < bytes.length; at += step) {
    const piece = bytes.subarray(at, Math.min(bytes.length, at + step));
    yield base64Ascii(piece, out.subarray(0, Math.ceil(piece.length / 3) * 4));
  }
}

/** Writes the Base64 of `bytes` (padded) into `ascii`, which holds exactly ceil(n / 3) * 4 bytes. */
function base64Ascii(bytes: Uint8Array, ascii: Uint8Array): Uint8Array {
  const groups = Math.floor(bytes.length / 3);
  const out16 = new Uint16Array(ascii.buffer, ascii.byteOffset, (groups * 4) / 2);
  const table = pairTable();
  for (let g = 0, i = 0; g < groups; g++, i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out16[2 * g] = table[v >>> 12]!;
    out16[2 * g + 1] = table[v & 0xfff]!;
  }
  const rest = bytes.length - groups * 3;
  if (rest > 0) {
    const i = groups * 3;
    const v = (bytes[i]! << 16) | (rest === 2 ? bytes[i + 1]! << 8 : 0);
    const o = groups * 4;
    ascii[o] = ALPHABET.charCodeAt(v >>> 18);
    ascii[o + 1] = ALPHABET.charCodeAt((v >>> 12) & 63);
    ascii[o + 2] = rest === 2 ? ALPHABET.charCodeAt((v >>> 6) & 63) : 0x3d;
    ascii[o + 3] = 0x3d;
  }
  return ascii;
}

/** Decodes Base64 (either alphabet, by the rules above), or null when it is not valid Base64. */
export function bytesFromBase64Strict(value: string): Uint8Array | null {
  try {
    return decodeBase64(value);
  } catch (err) {
    if (err instanceof Base64Error) return null;
    throw err;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A C0 control character (line breaks included) or DEL: none belongs in a one-line label or field. */
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/** Row ids are UUIDs; anything else cannot name a row (and would make Postgres throw on the cast). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** A uuid[] parameter's text (`{a,b}`); each id is checked, so nothing else reaches the SQL. */
export function uuidArray(ids: readonly string[]): string {
  for (const id of ids) if (!isUuid(id)) throw new Error(`not a uuid: ${JSON.stringify(id)}`);
  return `{${ids.join(",")}}`;
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
