/**
 * A WebP decoder in TypeScript: the RIFF container, lossy frames (vp8-decode.ts), lossless ones
 * (vp8l-decode.ts) and the alpha chunk of an extended file, to RGBA; or, for the QR reader, a lossy frame's
 * luma plane alone.
 *
 * Why it exists: see vp8-decode.ts. Chroma is upsampled as libwebp does by default ("fancy" upsampling:
 * each pixel's chroma is 9:3:3:1 of the four nearest samples) and converted with libwebp's integer
 * coefficients, so colours match what browsers show. Animated files are refused earlier, by the sniffer.
 *
 * Throws an Error for a file that is not a WebP or whose data is corrupt.
 */
import { ascii, u32le, webpChunkSize } from "./sniff";
import type { LumaImage, RgbaImage } from "./types";
import { decodeVp8, type Vp8Frame } from "./vp8-decode";
import { decodeVp8l, decodeVp8lAlpha } from "./vp8l-decode";

interface Chunks {
  kind: "VP8 " | "VP8L";
  data: Uint8Array;
  alpha: Uint8Array | null;
  /** The canvas size an extended (VP8X) file declares, or null. */
  canvas: { width: number; height: number } | null;
}

/**
 * Decodes a WebP to RGBA (straight alpha; 255 where the file has none).
 *
 * @example
 * const { width, height, data } = decodeWebp(bytes);
 */
export function decodeWebp(bytes: Uint8Array): RgbaImage {
  const chunks = readChunks(bytes);
  if (chunks.kind === "VP8L") return decodeVp8l(chunks.data);
  const frame = decodeVp8(chunks.data);
  const alpha = chunks.alpha ? decodeAlpha(chunks.alpha, frame.width, frame.height) : null;
  return yuvToRgba(frame, alpha);
}

/**
 * A lossy WebP's luma, cropped to the image (no chroma upsampled, no RGBA made); null for a lossless file
 * or one with alpha, which the caller decodes to RGBA.
 *
 * @example
 * const luma = decodeWebpLuma(bytes) ?? toGray(decodeWebp(bytes));
 */
export function decodeWebpLuma(bytes: Uint8Array): LumaImage | null {
  const chunks = readChunks(bytes);
  if (chunks.kind !== "VP8 " || chunks.alpha) return null;
  const frame = decodeVp8(chunks.data);
  const { width, height, yStride } = frame;
  const data = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) data.set(frame.y.subarray(y * yStride, y * yStride + width), y * width);
  return { kind: "luma", width, height, data };
}

function readChunks(b: Uint8Array): Chunks {
  if (b.length < 20 || ascii(b, 0, 4) !== "RIFF" || ascii(b, 8, 4) !== "WEBP") throw new Error("not a WebP file");
  const end = Math.min(b.length, 8 + u32le(b, 4));
  let canvas: Chunks["canvas"] = null;
  let alpha: Uint8Array | null = null;
  for (let at = 12; at + 8 <= end; ) {
    const name = ascii(b, at, 4);
    const size = u32le(b, at + 4);
    const start = at + 8;
    if (start + size > end) throw new Error(`WebP ${name.trim()} chunk is truncated`);
    const data = b.subarray(start, start + size);
    if (name === "VP8 " || name === "VP8L") {
      const chunks: Chunks = { kind: name, data, alpha: name === "VP8 " ? alpha : null, canvas };
      checkCanvas(chunks);
      return chunks;
    }
    if (name === "VP8X") {
      if (size < 10) throw new Error("WebP VP8X chunk is truncated");
      canvas = webpChunkSize("VP8X", data, 0);
    } else if (name === "ALPH") {
      alpha = data;
    } else if (name === "ANIM" || name === "ANMF") {
      throw new Error("animated WebP");
    }
    at = start + size + (size & 1);
  }
  throw new Error("WebP has no VP8 or VP8L chunk");
}

/**
 * An extended file's canvas must be its image's size, read from the frame header before anything is
 * decoded: the caller checked the canvas against its pixel limits, and a frame header claiming more must
 * not make the decoder allocate for it.
 */
function checkCanvas(chunks: Chunks): void {
  if (!chunks.canvas) return;
  if (chunks.data.length < (chunks.kind === "VP8L" ? 5 : 10)) throw new Error(`WebP ${chunks.kind.trim()} header is truncated`);
  const { width, height } = webpChunkSize(chunks.kind, chunks.data, 0);
  if (chunks.canvas.width !== width || chunks.canvas.height !== height) {
    throw new Error(`WebP canvas ${chunks.canvas.width}x${chunks.canvas.height} differs from its image ${width}x${height}`);
  }
}

/**
 * An ALPH chunk's plane: raw or lossless-compressed (its green channel), then unfiltered (none, horizontal,
 * vertical or gradient prediction).
 */
function decodeAlpha(chunk: Uint8Array, width: number, height: number): Uint8Array {
  if (chunk.length < 1) throw new Error("WebP alpha chunk is empty");
  const method = chunk[0]! & 3;
  const filter = (chunk[0]! >> 2) & 3;
  let plane: Uint8Array;
  if (method === 0) {
    if (chunk.length - 1 < width * height) throw new Error("WebP alpha plane is truncated");
    plane = chunk.slice(1, 1 + width * height);
  } else if (method === 1) {
    plane = decodeVp8lAlpha(chunk.subarray(1), width, height);
  } else {
    throw new Error("WebP alpha compression is unknown");
  }
  if (filter !== 0) unfilterAlpha(plane, width, height, filter);
  return plane;
}

function unfilterAlpha(a: Uint8Array, width: number, height: number, filter: number): void {
  for (let x = 1; x < width; x++) a[x] = (a[x]! + a[x - 1]!) & 255;
  for (let y = 1; y < height; y++) {
    const row = y * width;
    const up = row - width;
    a[row] = (a[row]! + a[up]!) & 255;
    if (filter === 1) {
      for (let x = 1; x < width; x++) a[row + x] = (a[row + x]! + a[row + x - 1]!) & 255;
    } else if (filter === 2) {
      for (let x = 1; x < width; x++) a[row + x] = (a[row + x]! + a[up + x]!) & 255;
    } else {
      for (let x = 1; x < width; x++) {
        const g = a[row + x - 1]! + a[up + x]! - a[up + x - 1]!;
        a[row + x] = (a[row + x]! + (g < 0 ? 0 : g > 255 ? 255 : g)) & 255;
      }
    }
  }
}

/**
 * YUV 4:2:0 to RGBA: each output row's chroma is 3:1 of the nearest chroma row and the next nearest, then
 * each pixel 3:1 of the nearest column and the next nearest (9:3:3:1 in all); BT.601 limited range with
 * libwebp's 14-bit coefficients.
 */
function yuvToRgba(f: Vp8Frame, alpha: Uint8Array | null): RgbaImage {
  const { width, height, yStride, uvStride } = f;
  const cw = (width + 1) >> 1;
  const ch = (height + 1) >> 1;
  const out = new Uint8Array(width * height * 4);
  const px = new Uint32Array(out.buffer);
  const rowU = new Int32Array(cw);
  const rowV = new Int32Array(cw);
  for (let y = 0; y < height; y++) {
    const near = y >> 1;
    const far = y & 1 ? Math.min(near + 1, ch - 1) : Math.max(near - 1, 0);
    for (let i = 0; i < cw; i++) {
      rowU[i] = 3 * f.u[near * uvStride + i]! + f.u[far * uvStride + i]!;
      rowV[i] = 3 * f.v[near * uvStride + i]! + f.v[far * uvStride + i]!;
    }
    const yRow = y * yStride;
    const o = y * width;
    for (let j = 0; j < cw; j++) {
      const x = 2 * j;
      const left = j > 0 ? j - 1 : 0;
      const right = j + 1 < cw ? j + 1 : j;
      const u3 = 3 * rowU[j]! + 8;
      const v3 = 3 * rowV[j]! + 8;
      px[o + x] = opaque(LUMA[f.y[yRow + x]!]!, (u3 + rowU[left]!) >> 4, (v3 + rowV[left]!) >> 4);
      if (x + 1 < width) px[o + x + 1] = opaque(LUMA[f.y[yRow + x + 1]!]!, (u3 + rowU[right]!) >> 4, (v3 + rowV[right]!) >> 4);
    }
  }
  if (alpha) for (let i = 0; i < alpha.length; i++) out[i * 4 + 3] = alpha[i]!;
  return { width, height, data: out };
}

/** The conversion's terms by sample value, in libwebp's 6-bit fixed point (its constants folded in). */
const LUMA = new Int32Array(256);
const V_RED = new Int32Array(256);
const U_GREEN = new Int32Array(256);
const V_GREEN = new Int32Array(256);
const U_BLUE = new Int32Array(256);
for (let i = 0; i < 256; i++) {
  LUMA[i] = (i * 19077) >> 8;
  V_RED[i] = ((i * 26149) >> 8) - 14234;
  U_GREEN[i] = ((i * 6419) >> 8) - 8708;
  V_GREEN[i] = (i * 13320) >> 8;
  U_BLUE[i] = ((i * 33050) >> 8) - 17685;
}

/** An opaque pixel as a little-endian RGBA word (alpha 255 in the top byte). */
function opaque(luma: number, u: number, v: number): number {
  return clip8(luma + V_RED[v]!) | (clip8(luma - U_GREEN[u]! - V_GREEN[v]!) << 8) | (clip8(luma + U_BLUE[u]!) << 16) | 0xff000000;
}

/** libwebp's 6-bit fixed point to a byte, clamped. */
const clip8 = (v: number) => (v < 0 ? 0 : v > 16383 ? 255 : v >> 6);
