/**
 * JSON bodies with inline images, read as they stream in. An image given as Base64 in a JSON body (media, a
 * QR code to read, a QR logo, area B's product, logo and reference images) is decoded to bytes while the
 * body arrives, so neither the body's text nor the
 * parsed string of a 13 MB data URI is ever held: in a Worker's 128 MB that is the difference between fitting
 * and not (docs/architecture.md, "Images" and "The edge runtime"); on Node it saves the text decode, the parse and the
 * scan of the string.
 *
 * How: the body's bytes go through a small lexer that knows only what JSON.parse needs to stay the judge
 * of validity: where strings start and end, and the object keys and array indexes above each value. A string
 * value at one of the route's image paths, once longer than 256 characters, is decoded by a `Base64Stream`
 * and replaced in a skeleton of the body by a short placeholder (its data URI header, then a marker). The
 * skeleton is parsed with JSON.parse, so a malformed body is the 400 INVALID_JSON that parsing the whole
 * text gives, and the route's schema validates the placeholder as it would the string. The image's bytes,
 * or the error decoding the string would have thrown for them (bad Base64, too large, a data URI of another type), wait in
 * `InlineImages` until `loadImageBytes` asks for the placeholder (and an idempotency fingerprint counts the
 * image by its bytes' digest). Anything the lexer is unsure of (a short
 * string, a URL, non-ASCII or a bad escape near the start) stays in the skeleton as it was sent.
 *
 * Written here rather than taken from a library: the streaming JSON parsers for web streams
 * (json-stream-es, @streamparser/json) build strings a character at a time, far slower than this on a
 * large image, and still need their output decoded from Base64 after.
 *
 * @example
 * router.openapi({ ...routes.createMedia, middleware: [inlineImageBody([{ path: [], kind: "image-or-url" }])] }, handler);
 */
import type { MiddlewareHandler } from "hono";
import { base64Start, bytesFromBase64Stream } from "../images/base64";
import { MAX_IMAGE_BYTES } from "../images/sniff";
import { Base64Stream, concat } from "../lib/encoding";
import { InlineImages } from "../images/inline-images";
import type { AppEnv } from "./env";
import { ApiError } from "./errors";
import { isJsonContentType, utf8Json } from "./json";

export { InlineImages } from "../images/inline-images";

/**
 * A string value that may hold an inline image. `path` names it from the root: object keys, and `"*"` for
 * any array index. `kind` is `base64` for a field that only ever holds Base64 or a data URI, and
 * `image-or-url` for one that may also hold a URL (kept as sent: anything that starts with a scheme other
 * than `data:`); the latter is read as its caller trims it.
 */
export interface InlineImageField {
  path: readonly string[];
  kind: "base64" | "image-or-url";
}

/**
 * A cheaper way to a request body's bytes than its web stream, where the platform has one; undefined
 * for a request it cannot serve that way. See `configureBodySource`.
 */
export type BodySource = (env: unknown) => AsyncIterable<Uint8Array> | undefined;

let bodySource: BodySource | null = null;

/**
 * Where `inlineImageBody` reads bodies from, when not from the request's web stream. On Node, the socket's
 * own chunks (functions/node/drain-body.ts): @hono/node-server otherwise hands them over through two
 * web-stream layers and a copy of every chunk (Node's `Readable.toWeb`), as much memory again as the
 * upload, which only the next full garbage collection gives back.
 *
 * @example
 * configureBodySource((env) => untouchedBody(env));
 */
export function configureBodySource(source: BodySource | null): void {
  bodySource = source;
}

/**
 * Route middleware for a body with inline images, before the route's validator: 415 unless the Content-Type is
 * JSON, 400 when the body is empty or malformed, then the parsed skeleton is what the route's validator reads
 * and `services.inlineImages` holds the images.
 */
export function inlineImageBody(fields: readonly InlineImageField[]): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!isJsonContentType(c.req.header("content-type"))) {
      throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with Content-Type: application/json.");
    }
    const length = Number(c.req.header("content-length"));
    const reader = new InlineBodyReader(fields, Number.isSafeInteger(length) && length > 0 ? length : undefined);
    const direct = bodySource?.(c.env);
    if (direct) {
      for await (const chunk of direct) reader.push(chunk);
    } else if (c.req.raw.body) {
      const chunks = c.req.raw.body.getReader();
      for (;;) {
        const { done, value } = await chunks.read();
        if (done) break;
        reader.push(value);
      }
    }
    const { text, images } = reader.end();
    // The skeleton's text is what the route's validator reads: Hono's `c.req.json()` parses the cached text.
    // (Cached as a parsed value instead, Hono stringified it and read it back through a web Response, about
    // 8 % of the request thread while posts were created.)
    (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(text);
    if (images.size) c.set("services", { ...c.get("services"), inlineImages: images });
    await next();
  };
}

const enum Mode {
  /** Between tokens: structure, numbers, literals, whitespace. */
  Outside,
  /** Inside a key or a value kept as sent. */
  Text,
  /** The first characters of a string at an image path, until it is long enough to decide. */
  Head,
  /** The Base64 of an inline image, decoded. */
  Image,
  /** After a JSON error inside an image: read to the end, then 400. */
  Drain,
}

interface Frame {
  array: boolean;
  /** The array index, or -1 in an object. */
  index: number;
  /** The current key in an object (null while it is read, or when it cannot name an image field). */
  key: string | null;
  /** In an object, whether the next string is a key. */
  expectKey: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const HEAD_CHARS = 256;
const MAX_KEY_BYTES = 64;
const MAX_DEPTH = 32;
const SIMPLE_ESCAPES: Record<number, number> = { 0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 0x08, 0x66: 0x0c, 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09 };
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
const encoder = new TextEncoder();

/** The lexer (see the file's comment); `push` each chunk of the body, then `end`. */
export class InlineBodyReader {
  private readonly skeleton: Uint8Array[] = [];
  private readonly stack: Frame[] = [];
  private readonly images = new InlineImages();
  private marker = ""; // made with the first image: `\0inline-image:<random>:`
  private mode = Mode.Outside;
  private consumed = 0;
  /** Containers open beyond MAX_DEPTH. */
  private deeper = 0;
  // Text: a pending backslash; the key's bytes while one is read.
  private escaped = false;
  private keyBytes: number[] | null = null;
  // Head and Image: the field, the characters so far, the raw bytes, the escape being read.
  private field: InlineImageField | null = null;
  private head: number[] = [];
  private lead = 0;
  private headRaw: Uint8Array[] = [];
  private escape = 0;
  private hex = 0;
  private prefix = "";
  private decoder: Base64Stream | null = null;
  private refused: ApiError | null = null;
  private arena: Uint8Array | null = null;
  private arenaAt = 0;

  constructor(
    private readonly fields: readonly InlineImageField[],
    private readonly contentLength?: number,
  ) {}

  push(chunk: Uint8Array): void {
    const len = chunk.length;
    let span = 0; // the start of this chunk's bytes still to copy into the skeleton
    let i = 0;
    while (i < len) {
      switch (this.mode) {
        case Mode.Outside: {
          for (; i < len; i++) {
            const b = chunk[i]!;
            if (b === QUOTE) break;
            if (b === 0x7b || b === 0x5b) {
              // Nesting deeper than any image field is only counted: a body of 20 MB of "[" makes no frames.
              if (this.stack.length < MAX_DEPTH && this.deeper === 0)
                this.stack.push({ array: b === 0x5b, index: b === 0x5b ? 0 : -1, key: null, expectKey: b === 0x7b });
              else this.deeper++;
            } else if (b === 0x7d || b === 0x5d) {
              if (this.deeper > 0) this.deeper--;
              else this.stack.pop();
            } else if (this.deeper > 0) continue;
            else if (b === 0x2c) {
              const top = this.stack.at(-1);
              if (top?.array) top.index++;
              else if (top) top.expectKey = true;
            }
          }
          if (i === len) break;
          i++; // the opening quote
          const top = this.deeper > 0 ? undefined : this.stack.at(-1);
          if (this.deeper > 0) this.mode = Mode.Text;
          else if (top && !top.array && top.expectKey) {
            top.expectKey = false;
            this.keyBytes = [];
            this.mode = Mode.Text;
          } else if ((this.field = this.fieldHere())) {
            this.copy(chunk, span, i - 1); // the quote is written with the placeholder, or again if kept
            span = i;
            this.head = [];
            this.headRaw = [];
            this.lead = 0;
            this.escape = 0;
            this.mode = Mode.Head;
          } else {
            this.mode = Mode.Text;
          }
          break;
        }
        case Mode.Text: {
          i = this.text(chunk, i);
          break;
        }
        case Mode.Head: {
          const start = i;
          i = this.readHead(chunk, i);
          if (i < 0) {
            // Kept as sent: the quote and the bytes read so far, then on as text from here.
            i = -i - 1;
            this.headRaw.push(chunk.slice(start, i));
            this.skeleton.push(Uint8Array.of(QUOTE), ...this.headRaw);
            this.headRaw = [];
            span = i;
            this.mode = Mode.Text;
          } else if (this.mode === Mode.Head) {
            this.headRaw.push(chunk.slice(start, i));
          }
          break;
        }
        case Mode.Image: {
          i = this.readImage(chunk, i);
          if ((this.mode as Mode) === Mode.Outside) span = i; // the placeholder has its own quotes
          break;
        }
        case Mode.Drain:
          i = len;
          break;
      }
    }
    this.consumed += len;
    if (this.mode === Mode.Outside || this.mode === Mode.Text) this.copy(chunk, span, len);
  }

  /**
   * The skeleton's text (checked to parse, so a malformed body is this 400 INVALID_JSON rather than the
   * validator's), the value it parses to, and the images taken out of it.
   */
  end(): { text: string; value: unknown; images: InlineImages } {
    // Drain: a JSON error inside an image; Image: the body ended inside one.
    if (this.mode === Mode.Drain || this.mode === Mode.Image) {
      throw new ApiError("INVALID_JSON", "The request body is not valid JSON.");
    }
    if (this.mode === Mode.Head) this.skeleton.push(Uint8Array.of(QUOTE), ...this.headRaw); // an unterminated string
    const text = utf8Json(concat(this.skeleton));
    if (text.trim() === "") throw new ApiError("INVALID_JSON", "The request body is empty; send a JSON document.");
    try {
      return { text, value: JSON.parse(text), images: this.images };
    } catch {
      throw new ApiError("INVALID_JSON", "The request body is not valid JSON.");
    }
  }

  private copy(chunk: Uint8Array, from: number, to: number): void {
    if (to > from) this.skeleton.push(chunk.slice(from, to));
  }

  /** The image field the string starting here is, if any. */
  private fieldHere(): InlineImageField | null {
    const stack = this.stack;
    for (const field of this.fields) {
      if (field.path.length !== stack.length) continue;
      let same = true;
      for (let d = 0; d < stack.length && same; d++) {
        const frame = stack[d]!;
        same = frame.array ? field.path[d] === "*" : frame.key !== null && field.path[d] === frame.key;
      }
      if (same) return field;
    }
    return null;
  }

  /** A key or a kept value, copied as it is; returns where it stopped (after the closing quote). */
  private text(chunk: Uint8Array, i: number): number {
    const keyBytes = this.keyBytes;
    for (; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (this.escaped) this.escaped = false;
      else if (b === BACKSLASH) this.escaped = true;
      else if (b === QUOTE) {
        if (keyBytes) this.stack.at(-1)!.key = keyOf(keyBytes);
        this.keyBytes = null;
        this.mode = Mode.Outside;
        return i + 1;
      }
      if (keyBytes && keyBytes.length <= MAX_KEY_BYTES) keyBytes.push(b);
    }
    return i;
  }

  /**
   * The start of an image string, as characters (escapes read). Returns where it stopped, or -(i + 1) to
   * keep the string as sent from byte i on (too short, a URL, or anything unusual).
   */
  private readHead(chunk: Uint8Array, i: number): number {
    const head = this.head;
    const trims = this.field!.kind === "image-or-url";
    for (; i < chunk.length; i++) {
      const b = chunk[i]!;
      let c: number;
      if (this.escape === 0) {
        if (b === QUOTE || b < 0x20 || b >= 0x80) return -(i + 1);
        if (b === BACKSLASH) {
          this.escape = 1;
          continue;
        }
        c = b;
      } else if (this.escape === 1) {
        const simple = SIMPLE_ESCAPES[b];
        if (simple !== undefined) {
          this.escape = 0;
          c = simple;
        } else if (b === 0x75) {
          this.escape = 2;
          this.hex = 0;
          continue;
        } else {
          this.escaped = true; // the text mode reads this byte as the escaped one
          return -(i + 1);
        }
      } else {
        const d = hexDigit(b);
        if (d < 0) return -(i + 1);
        this.hex = (this.hex << 4) | d;
        if (++this.escape < 6) continue;
        this.escape = 0;
        c = this.hex;
      }
      if (trims && head.length === 0 && isSpace(c)) this.lead++;
      else head.push(c);
      if (head.length > HEAD_CHARS) {
        if (!this.startImage()) return -(i + 2);
        return i + 1;
      }
    }
    return i;
  }

  /** Decides on a head long enough: false to keep the string as sent (a URL), else starts the image. */
  private startImage(): boolean {
    const text = String.fromCharCode(...this.head);
    if (this.field!.kind === "image-or-url" && !/^data:/i.test(text) && SCHEME.test(text)) return false;
    this.headRaw = [];
    const lead = " ".repeat(this.lead);
    let start: number;
    try {
      start = base64Start(text);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      // Refused from its header: the rest is still read as a JSON string (its escapes can make the body
      // malformed), into a decoder that keeps nothing.
      this.refused = err;
      this.prefix = lead + (/^data:[^,]*,/i.exec(text.slice(0, HEAD_CHARS))?.[0] ?? text.slice(0, 40));
      this.decoder = new Base64Stream(0);
      this.head = [];
      this.mode = Mode.Image;
      return true;
    }
    this.prefix = lead + text.slice(0, start);
    // With a Content-Length, every image of the body decodes into one buffer allocated once: what is left of
    // the body bounds what all of them can decode to (three bytes per four characters).
    if (!this.arena && this.contentLength !== undefined) this.arena = new Uint8Array(Math.floor(((this.contentLength - this.consumed) * 3) / 4) + 3);
    const decoder = (this.decoder = new Base64Stream(MAX_IMAGE_BYTES, this.arena?.subarray(this.arenaAt)));
    for (let k = start; k < this.head.length; k++) decoder.char(this.head[k]!);
    this.head = [];
    this.mode = Mode.Image;
    return true;
  }

  /**
   * The Base64 of an image (or the rest of a refused one), from byte i: JSON's escapes read, its errors
   * found. Returns where it stopped (after the closing quote, or the chunk's end).
   */
  private readImage(chunk: Uint8Array, i: number): number {
    const decoder = this.decoder!;
    const len = chunk.length;
    while (i < len) {
      const b = chunk[i]!;
      if (this.escape === 0) {
        i = decoder.digits(chunk, i, len);
        if (i >= len) break;
        const x = chunk[i++]!;
        if (x === QUOTE) {
          const refused = this.refused;
          this.finishImage(() => {
            if (refused) throw refused;
            return bytesFromBase64Stream(decoder);
          });
          return i;
        }
        if (x === BACKSLASH) this.escape = 1;
        else if (x < 0x20) return this.drain(len);
        else if (x < 0x80) decoder.char(x);
        else if ((x & 0xc0) !== 0x80) {
          // A UTF-8 sequence is one character (two for one outside the BMP), and never a Base64 digit.
          decoder.char(0xfffd);
          if (x >= 0xf0) decoder.char(0xfffd);
        }
      } else if (this.escape === 1) {
        i++;
        const simple = SIMPLE_ESCAPES[b];
        if (simple !== undefined) {
          this.escape = 0;
          decoder.char(simple);
        } else if (b === 0x75) {
          this.escape = 2;
          this.hex = 0;
        } else return this.drain(len);
      } else {
        i++;
        const d = hexDigit(b);
        if (d < 0) return this.drain(len);
        this.hex = (this.hex << 4) | d;
        if (++this.escape === 6) {
          this.escape = 0;
          decoder.char(this.hex);
        }
      }
    }
    return i;
  }

  private finishImage(result: () => Uint8Array): void {
    let outcome: Uint8Array | ApiError;
    try {
      outcome = result();
      if (this.arena && outcome.buffer === this.arena.buffer) this.arenaAt = outcome.byteOffset + outcome.length;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      outcome = err;
    }
    this.marker ||= `\u0000inline-image:${crypto.randomUUID()}:`;
    const placeholder = `${this.prefix}${this.marker}${this.images.size}`;
    this.images.add(placeholder.trimStart(), outcome);
    this.skeleton.push(encoder.encode(JSON.stringify(placeholder)));
    this.decoder = null;
    this.refused = null;
    this.mode = Mode.Outside;
  }

  private drain(len: number): number {
    this.decoder = null;
    this.mode = Mode.Drain;
    return len;
  }
}

/**
 * `value` with every placeholder of `inline` replaced by its image's digest (`InlineImages.digest`): what a
 * request fingerprint hashes, so a retry of the same request matches however the body was read.
 *
 * @example
 * const fp = sha256Hex(canonicalJson(await withImageDigests(body, services.inlineImages)));
 */
export async function withImageDigests(value: unknown, inline: InlineImages | undefined): Promise<unknown> {
  if (!inline?.size) return value;
  if (typeof value === "string") return (await inline.digest(value)) ?? value;
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return Promise.all(value.map((v) => withImageDigests(v, inline)));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = await withImageDigests(v, inline);
  return out;
}

function keyOf(bytes: number[]): string | null {
  if (bytes.length > MAX_KEY_BYTES) return null;
  if (!bytes.includes(BACKSLASH) && bytes.every((b) => b < 0x80)) return String.fromCharCode(...bytes);
  try {
    return JSON.parse(`"${new TextDecoder().decode(Uint8Array.from(bytes))}"`) as string;
  } catch {
    return null;
  }
}

function hexDigit(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  const l = b | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x61 + 10 : -1;
}

/** What String.prototype.trim removes (the caller of an `image-or-url` field trims it). */
function isSpace(c: number): boolean {
  return String.fromCharCode(c).trim() === "";
}
