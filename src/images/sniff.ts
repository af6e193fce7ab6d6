/**
 * Format sniffing and header-only dimensions. Nothing here decodes pixels, so a pixel bomb (a tiny file that
 * claims 100000 x 100000) is refused in microseconds, before any memory is committed to it.
 */
import { ApiError } from "../lib/errors";
import { readJpegOrientation } from "./exif";
import { MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, type ImageFormat, type ImageHeader, type ImageInfo } from "./header";
import { checkDecodeLimits, DEFAULT_DECODE_LIMITS, type DecodeLimits } from "./limits";

export { MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, type ImageFormat, type ImageHeader, type ImageInfo } from "./header";

const SUPPORTED = "Send a static JPEG, PNG or WebP image.";

const MIME: Record<ImageFormat, string> = { jpeg: "image/jpeg", png: "image/png", webp: "image/webp" };

/**
 * Sniffs the real format from magic bytes and reads the dimensions from the header, without decoding.
 * Width and height are as stored: a JPEG with EXIF orientation 5..8 displays (and decodes) with them swapped;
 * `readImageHeader` also returns the orientation. Throws ApiError: PAYLOAD_TOO_LARGE (413) over 10 MB; INVALID_IMAGE (422) for unknown or unsupported
 * formats, GIF, animated PNG/WebP, truncated headers, zero dimensions, and more than 40 million pixels;
 * also INVALID_IMAGE for an image decoded whole (WebP, interlaced PNG, some JPEGs) with more pixels than
 * `limits` let be decoded whole (Node's and the edge's limits, limits.ts). Call it with the deployment's
 * limits where a request's image arrives.
 *
 * @example
 * const { format, width, height } = sniffImage(bytes); // { format: "png", mimeType: "image/png", width: 512, ... }
 */
export function sniffImage(bytes: Uint8Array, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): ImageInfo {
  const header = readImageHeader(bytes);
  checkDecodeLimits(header, limits);
  const { format, mimeType, width, height } = header;
  return { format, mimeType, width, height };
}

/**
 * `sniffImage` plus the EXIF orientation (1..8) and JPEG component count, with the same checks.
 *
 * @example
 * const { width, height, orientation } = readImageHeader(bytes);
 * const upright = orientation >= 5 ? { width: height, height: width } : { width, height };
 */
export function readImageHeader(bytes: Uint8Array): ImageHeader {
  if (bytes.length > MAX_IMAGE_BYTES) {
    throw new ApiError("PAYLOAD_TOO_LARGE", `The image is ${formatOverLimit(bytes.length)}; images may be at most 10 MB.`);
  }
  if (bytes.length === 0) throw invalid("The image is empty (0 bytes).");
  const header = parseByMagic(bytes);
  if (header.width === 0 || header.height === 0) {
    throw invalid(`The image has no pixels (${header.width}x${header.height}).`);
  }
  if (header.width * header.height > MAX_IMAGE_PIXELS) {
    throw invalid(
      `The image is ${header.width}x${header.height} (${((header.width * header.height) / 1e6).toFixed(1)} million pixels); images may have at most 40 million pixels.`,
    );
  }
  return header;
}

/**
 * The format the magic bytes announce, or null; no other check (use `sniffImage` for input from a request).
 * The one place that knows the signatures: `sniffImage` and the stored copy of a model's output ask here.
 *
 * @example
 * imageFormat(pngBytes); // "png"
 * mimeTypeOf("png");     // "image/png"
 */
export function imageFormat(b: Uint8Array): ImageFormat | null {
  if (startsWith(b, [0xff, 0xd8, 0xff])) return "jpeg";
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "png";
  if (ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 4) === "WEBP") return "webp";
  return null;
}

/** The MIME type of a sniffed format. */
export function mimeTypeOf(format: ImageFormat): string {
  return MIME[format];
}

function parseByMagic(b: Uint8Array): ImageHeader {
  const format = imageFormat(b);
  if (format) return format === "jpeg" ? parseJpeg(b) : format === "png" ? parsePng(b) : parseWebp(b);
  const other = otherFormat(b);
  if (other) throw invalid(`${other} images are not supported. ${SUPPORTED}`);
  if (b.length < 12 && (startsWith(b, [0xff, 0xd8]) || startsWith(b, [0x89, 0x50]) || ascii(b, 0, 4) === "RIFF")) {
    throw invalid("The image is truncated: its header is incomplete.");
  }
  throw invalid(`The data is not a recognised image format. ${SUPPORTED}`);
}

/** Names formats we refuse, so the message says what was sent rather than "unknown". */
function otherFormat(b: Uint8Array): string | null {
  const head = ascii(b, 0, 6);
  if (head === "GIF87a" || head === "GIF89a") return "GIF";
  if (startsWith(b, [0x49, 0x49, 0x2a, 0x00]) || startsWith(b, [0x4d, 0x4d, 0x00, 0x2a])) return "TIFF";
  if (head.startsWith("BM")) return "BMP";
  if (head.startsWith("8BPS")) return "PSD";
  if (ascii(b, 4, 4) === "ftyp") {
    const brand = ascii(b, 8, 4);
    return brand.startsWith("avi") ? "AVIF" : brand.startsWith("hei") || brand.startsWith("mif") ? "HEIC" : "ISO media (HEIC/AVIF/MP4)";
  }
  if (startsWith(b, [0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50])) return "JPEG 2000";
  if (startsWith(b, [0xff, 0x0a])) return "JPEG XL";
  const text = ascii(b, 0, Math.min(b.length, 256)).trimStart().toLowerCase();
  if (text.startsWith("<svg") || (text.startsWith("<?xml") && text.includes("<svg"))) return "SVG";
  if (text.startsWith("<!doctype html") || text.startsWith("<html")) return "HTML documents are not images; HTML";
  return null;
}

// --- JPEG ---------------------------------------------------------------------------------------------------

/** SOF markers: baseline, extended sequential, progressive (all Huffman) are what the decoder handles. */
const SOF_SUPPORTED = new Set([0xc0, 0xc1, 0xc2]);
const SOF_OTHER: Record<number, string> = {
  0xc3: "lossless",
  0xc5: "hierarchical",
  0xc6: "hierarchical",
  0xc7: "hierarchical lossless",
  0xc9: "arithmetic-coded",
  0xca: "arithmetic-coded progressive",
  0xcb: "arithmetic-coded lossless",
  0xcd: "hierarchical arithmetic-coded",
  0xce: "hierarchical arithmetic-coded",
  0xcf: "hierarchical arithmetic-coded",
};

function parseJpeg(b: Uint8Array): ImageHeader {
  let orientation = 1;
  let pos = 2;
  while (pos < b.length) {
    if (b[pos] !== 0xff) throw invalid("The JPEG is corrupt: a marker was expected in its header.");
    // Fill bytes (0xFF repeated) may pad markers.
    while (pos < b.length && b[pos] === 0xff) pos++;
    if (pos >= b.length) break;
    const marker = b[pos++]!;
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) continue;
    if (marker === 0xd9 || marker === 0xda) throw invalid("The JPEG has no frame header (SOF) before its image data.");
    if (pos + 2 > b.length) break;
    const length = u16be(b, pos);
    if (length < 2) throw invalid("The JPEG is corrupt: a header segment has an impossible length.");
    const end = pos + length;
    if (end > b.length) break;
    if (marker === 0xe1) {
      const o = readJpegOrientation(b.subarray(pos + 2, end));
      if (o) orientation = o;
    } else if (SOF_SUPPORTED.has(marker) || marker in SOF_OTHER) {
      if (length < 8) break;
      if (marker in SOF_OTHER) {
        throw invalid(`${cap(SOF_OTHER[marker]!)} JPEG is not supported; save it as a standard (baseline or progressive) JPEG.`);
      }
      const precision = b[pos + 2]!;
      if (precision !== 8) throw invalid(`${precision}-bit JPEG is not supported; save it as an 8-bit JPEG.`);
      const height = u16be(b, pos + 3);
      const width = u16be(b, pos + 5);
      const components = b[pos + 7]!;
      if (components !== 1 && components !== 3 && components !== 4) {
        throw invalid(`A JPEG with ${components} colour components is not supported.`);
      }
      if (length < 8 + 3 * components) break;
      const sampling = Array.from({ length: components }, (_, i) => b[pos + 9 + 3 * i]!);
      return { format: "jpeg", mimeType: MIME.jpeg, width, height, orientation, components, sampling, progressive: marker === 0xc2, interlaced: false };
    }
    pos = end;
  }
  throw invalid("The JPEG is truncated: its header ends before the image size.");
}

// --- PNG ----------------------------------------------------------------------------------------------------

const PNG_DEPTHS: Record<number, number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };

function parsePng(b: Uint8Array): ImageHeader {
  if (b.length < 33 || ascii(b, 12, 4) !== "IHDR") {
    throw invalid(b.length < 33 ? "The PNG is truncated: its header is incomplete." : "The PNG is corrupt: it does not start with an IHDR chunk.");
  }
  const width = u32be(b, 16);
  const height = u32be(b, 20);
  const depth = b[24]!;
  const colourType = b[25]!;
  if (!PNG_DEPTHS[colourType]?.includes(depth) || b[26] !== 0 || b[27] !== 0 || b[28]! > 1) {
    throw invalid("The PNG header is invalid (unknown colour type, bit depth or method).");
  }
  // An APNG announces itself with acTL before the first IDAT; stop at IDAT so the walk stays header-only.
  let pos = 8;
  while (pos + 8 <= b.length) {
    const length = u32be(b, pos);
    const type = ascii(b, pos + 4, 4);
    if (type === "acTL") throw invalid(`Animated PNG (APNG) is not supported. ${SUPPORTED}`);
    if (type === "IDAT" || type === "IEND") break;
    pos += 12 + length;
  }
  return { format: "png", mimeType: MIME.png, width, height, orientation: 1, components: 0, sampling: [], progressive: false, interlaced: b[28] === 1 };
}

// --- WebP ---------------------------------------------------------------------------------------------------

function parseWebp(b: Uint8Array): ImageHeader {
  if (b.length < 30) throw invalid("The WebP is truncated: its header is incomplete.");
  const chunk = ascii(b, 12, 4);
  const d = 20;
  if (chunk === "VP8X") {
    const flags = b[d]!;
    if (flags & 0x02 || hasRiffChunk(b, "ANIM") || hasRiffChunk(b, "ANMF")) {
      throw invalid(`Animated WebP is not supported. ${SUPPORTED}`);
    }
  } else if (chunk === "VP8 ") {
    if (b[d + 3] !== 0x9d || b[d + 4] !== 0x01 || b[d + 5] !== 0x2a) throw invalid("The WebP is corrupt: its VP8 frame header is invalid.");
  } else if (chunk === "VP8L") {
    if (b[d] !== 0x2f) throw invalid("The WebP is corrupt: its lossless header is invalid.");
  } else {
    throw invalid("The WebP is corrupt: it has no VP8, VP8L or VP8X chunk.");
  }
  const { width, height } = webpChunkSize(chunk, b, d);
  return { format: "webp", mimeType: MIME.webp, width, height, orientation: 1, components: 0, sampling: [], progressive: false, interlaced: false };
}

/**
 * The size a WebP chunk declares, from its payload at `at`: a VP8X chunk's canvas, a VP8 key frame's or a
 * VP8L image's. The caller has checked the chunk's type and that its header is there (10 bytes; 5 for VP8L).
 *
 * @example
 * webpChunkSize("VP8 ", bytes, 20); // a simple lossy file's frame size
 */
export function webpChunkSize(kind: "VP8X" | "VP8 " | "VP8L", b: Uint8Array, at: number): { width: number; height: number } {
  if (kind === "VP8X")
    return { width: 1 + (b[at + 4]! | (b[at + 5]! << 8) | (b[at + 6]! << 16)), height: 1 + (b[at + 7]! | (b[at + 8]! << 8) | (b[at + 9]! << 16)) };
  if (kind === "VP8 ") return { width: u16le(b, at + 6) & 0x3fff, height: u16le(b, at + 8) & 0x3fff };
  const bits = u32le(b, at + 1);
  return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >>> 14) & 0x3fff) };
}

function hasRiffChunk(b: Uint8Array, name: string): boolean {
  let pos = 12;
  while (pos + 8 <= b.length) {
    if (ascii(b, pos, 4) === name) return true;
    const size = u32le(b, pos + 4);
    pos += 8 + size + (size & 1);
  }
  return false;
}

// --- bytes --------------------------------------------------------------------------------------------------

export function invalid(message: string): ApiError {
  return new ApiError("INVALID_IMAGE", message);
}

function startsWith(b: Uint8Array, prefix: number[]): boolean {
  return b.length >= prefix.length && prefix.every((v, i) => b[i] === v);
}

export function ascii(b: Uint8Array, start: number, length: number): string {
  let s = "";
  for (let i = start; i < start + length && i < b.length; i++) s += String.fromCharCode(b[i]!);
  return s;
}

export const u16be = (b: Uint8Array, i: number) => (b[i]! << 8) | b[i + 1]!;
export const u16le = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8);
export const u32be = (b: Uint8Array, i: number) => ((b[i]! << 24) | (b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!) >>> 0;
export const u32le = (b: Uint8Array, i: number) => (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** An image size over the 10 MB limit, in MB, and in bytes where the MB figure rounds down to the limit. */
export function formatOverLimit(n: number): string {
  const mb = `${(n / 1024 / 1024).toFixed(1)} MB`;
  return n / 1024 / 1024 < 10.05 ? `${mb} (${n.toLocaleString("en-US")} bytes, over 10 MB = ${MAX_IMAGE_BYTES.toLocaleString("en-US")} bytes)` : mb;
}
