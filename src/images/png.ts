/**
 * A small streaming PNG encoder (QR codes, generated photos): indexed colour (1, 2, 4 or 8 bits; PLTE, plus tRNS
 * for a transparent background) and, for logos with many colours, 8-bit RGB or RGBA. Rows are produced by
 * a callback and deflated as they come (zlib's streaming interface through pako, which runs unchanged on
 * Workers and Node), so a 4096 px code never exists as a whole bitmap in memory. The CRC is ours.
 *
 * A QR image is made of rows that repeat `scale` times, so a row equal to the one above gets filter Up
 * (all zero bytes, which deflate nearly erases). Other indexed rows get filter None (the PNG spec's advice
 * for palettes); other truecolour rows get the filter with the smallest sum of absolute values.
 *
 * @example
 * const png = encodePng({ width: 2, height: 1, color: { kind: "indexed", bitDepth: 1, palette: [[0, 0, 0], [255, 255, 255]] },
 *   writeRow: (_y, out) => { out[0] = 0b01000000; } });
 */
import { deflate, ZStream, zlibDeflate, zlibDeflateInit2, Z_BUF_ERROR, Z_DEFAULT_STRATEGY, Z_FINISH, Z_NO_FLUSH, Z_OK, Z_STREAM_END } from "pako";
import { concat, crc32 } from "../lib/encoding";

export type BitDepth = 1 | 2 | 4 | 8;
export type PaletteEntry = readonly [r: number, g: number, b: number, a?: number];
export type DeflateLevel = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9;

export type PngColor = { kind: "indexed"; bitDepth: BitDepth; palette: readonly PaletteEntry[] } | { kind: "rgb" } | { kind: "rgba" };

export interface PngInput {
  width: number;
  height: number;
  color: PngColor;
  /** Fills `out` (rowBytes long, zeroed) with scanline `y`: packed indices MSB first, or RGB(A) bytes. */
  writeRow?: (y: number, out: Uint8Array) => void;
  /**
   * Instead of writeRow: the complete filtered image data (each scanline prefixed by its filter type), for
   * callers that know their rows better than a generic filter choice (see drawPng's two-colour path).
   */
  filtered?: Uint8Array;
  /** zlib level 0..9; default 6. */
  level?: DeflateLevel;
}

const SIGNATURE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const FLUSH_BYTES = 64 * 1024;

/**
 * Bytes per packed scanline (without the filter byte).
 *
 * @example
 * rowBytes(512, 1); // 64
 */
export function rowBytes(width: number, bitsPerPixel: number): number {
  return Math.ceil((width * bitsPerPixel) / 8);
}

/**
 * Smallest bit depth that can index `colours` palette entries.
 *
 * @example
 * bitDepthFor(3); // 2
 */
export function bitDepthFor(colours: number): BitDepth {
  if (colours <= 2) return 1;
  if (colours <= 4) return 2;
  if (colours <= 16) return 4;
  if (colours <= 256) return 8;
  throw new RangeError(`A palette holds at most 256 colours, got ${colours}`);
}

/** zlib-wraps a whole buffer at a level (0..9). */
export type WholeDeflate = (data: Uint8Array, level: DeflateLevel) => Uint8Array;

let deflateWhole: WholeDeflate = (data, level) => deflate(data, { level });

/**
 * Sets the deflater of `encodePng({ filtered })` (the QR codes' one-shot PNGs). pako's by default, which runs
 * everywhere; Node sets its own zlib, much faster on a QR code's few KB of rows (the JavaScript
 * deflater's per-call set-up dominates at that size) for nearly the same bytes.
 *
 * @example
 * configurePngDeflate((data, level) => deflateSync(data, { level })); // node:zlib, in functions/node
 */
export function configurePngDeflate(deflate: WholeDeflate): void {
  deflateWhole = deflate;
}

/** Encodes a PNG from rows produced on demand. */
export function encodePng(input: PngInput): Uint8Array {
  const { width, height, color } = input;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new RangeError(`PNG dimensions must be positive integers, got ${width}x${height}`);
  }
  const chunks: Array<[string, Uint8Array]> = [];
  let bitDepth: number;
  let colourType: number;
  let bpp: number; // bytes per complete pixel, for filters (1 for sub-byte depths)
  let bitsPerPixel: number;
  if (color.kind === "indexed") {
    const { palette } = color;
    bitDepth = color.bitDepth;
    if (palette.length === 0 || palette.length > 1 << bitDepth) {
      throw new RangeError(`A ${bitDepth}-bit palette holds 1..${1 << bitDepth} colours, got ${palette.length}`);
    }
    colourType = 3;
    bpp = 1;
    bitsPerPixel = bitDepth;
    const plte = new Uint8Array(palette.length * 3);
    palette.forEach(([r, g, b], i) => {
      plte.set([r, g, b], i * 3);
    });
    chunks.push(["PLTE", plte]);
    // tRNS may stop after the last entry that is not opaque.
    let lastTranslucent = -1;
    palette.forEach((entry, i) => {
      if ((entry[3] ?? 255) < 255) lastTranslucent = i;
    });
    if (lastTranslucent >= 0) chunks.push(["tRNS", Uint8Array.from(palette.slice(0, lastTranslucent + 1), (e) => e[3] ?? 255)]);
  } else {
    bitDepth = 8;
    colourType = color.kind === "rgb" ? 2 : 6;
    bpp = color.kind === "rgb" ? 3 : 4;
    bitsPerPixel = bpp * 8;
  }

  const stride = rowBytes(width, bitsPerPixel);
  if (input.filtered) {
    if (input.filtered.length !== (stride + 1) * height) throw new RangeError(`filtered data must be ${(stride + 1) * height} bytes`);
    chunks.push(["IDAT", deflateWhole(input.filtered, input.level ?? 6)]);
    return assemblePng(width, height, bitDepth, colourType, chunks);
  }
  if (!input.writeRow) throw new TypeError("encodePng needs writeRow or filtered");
  const writeRow = input.writeRow;
  const zlib = createZlibWriter(input.level ?? 6);

  let prev = new Uint8Array(stride);
  let row = new Uint8Array(stride);
  const scratch = new Uint8Array(stride);
  const best = new Uint8Array(stride);
  const batchRows = Math.max(1, Math.floor(FLUSH_BYTES / (stride + 1)));
  const batch = new Uint8Array(batchRows * (stride + 1));
  let inBatch = 0;

  for (let y = 0; y < height; y++) {
    row.fill(0);
    writeRow(y, row);
    const dst = inBatch * (stride + 1);
    if (y > 0 && equalBytes(row, prev)) {
      batch[dst] = 2;
      batch.fill(0, dst + 1, dst + 1 + stride);
    } else if (color.kind === "indexed") {
      batch[dst] = 0;
      batch.set(row, dst + 1);
    } else {
      let bestType = 0;
      let bestScore = Infinity;
      for (let type = 0; type <= 4; type++) {
        const score = applyFilter(type, row, y > 0 ? prev : null, bpp, scratch);
        if (score < bestScore) {
          bestScore = score;
          bestType = type;
          best.set(scratch);
        }
      }
      batch[dst] = bestType;
      batch.set(best, dst + 1);
    }
    [prev, row] = [row, prev];
    if (++inBatch === batchRows || y === height - 1) {
      zlib.write(batch.subarray(0, inBatch * (stride + 1)), y === height - 1);
      inBatch = 0;
    }
  }
  chunks.push(["IDAT", concat(zlib.output)]);
  return assemblePng(width, height, bitDepth, colourType, chunks);
}

/** Bytes of each piece of a ZlibWriter's output. */
const OUTPUT_PIECE = 64 * 1024;

/** A zlib stream (RFC 1950) deflated as it is written; `output` holds it in pieces once the last write is done. */
interface ZlibWriter {
  /** Deflates `data` (read during the call only, so the caller may reuse it); `last` ends the stream. */
  write(data: Uint8Array, last: boolean): void;
  output: Uint8Array[];
}

/**
 * zlib's streaming interface (pako's port of it), writing into pieces of OUTPUT_PIECE bytes that become the
 * output: a write allocates nothing else. A deflater that allocates per chunk (fflate's streaming one takes
 * an output buffer the size of each chunk, a copy of it and working arrays) leaves several times the image's
 * raw size in short-lived buffers, which in a Worker count against the isolate's 128 MB until V8 collects
 * them.
 */
function createZlibWriter(level: DeflateLevel): ZlibWriter {
  const strm = new ZStream();
  if (zlibDeflateInit2(strm, level, 8, 15, 8, Z_DEFAULT_STRATEGY) !== Z_OK) throw new Error("zlib's deflater did not start");
  const output: Uint8Array[] = [];
  let piece = new Uint8Array(OUTPUT_PIECE);
  let used = 0;
  return {
    output,
    write(data, last) {
      strm.input = data;
      strm.next_in = 0;
      strm.avail_in = data.length;
      for (;;) {
        if (used === piece.length) {
          output.push(piece);
          piece = new Uint8Array(OUTPUT_PIECE);
          used = 0;
        }
        strm.output = piece;
        strm.next_out = used;
        strm.avail_out = piece.length - used;
        const status = zlibDeflate(strm, last ? Z_FINISH : Z_NO_FLUSH);
        used = strm.next_out;
        if (status === Z_STREAM_END) break;
        if (status !== Z_OK && status !== Z_BUF_ERROR) throw new Error(`zlib's deflater failed (${strm.msg || status})`);
        if (!last && strm.avail_in === 0 && strm.avail_out > 0) return;
      }
      output.push(piece.subarray(0, used));
    },
  };
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function applyFilter(type: number, row: Uint8Array, prev: Uint8Array | null, bpp: number, out: Uint8Array): number {
  let score = 0;
  for (let i = 0; i < row.length; i++) {
    const a = i >= bpp ? row[i - bpp]! : 0;
    const b = prev ? prev[i]! : 0;
    const c = prev && i >= bpp ? prev[i - bpp]! : 0;
    let predictor = 0;
    if (type === 1) predictor = a;
    else if (type === 2) predictor = b;
    else if (type === 3) predictor = (a + b) >> 1;
    else if (type === 4) predictor = paeth(a, b, c);
    const value = (row[i]! - predictor) & 0xff;
    out[i] = value;
    score += value < 128 ? value : 256 - value;
  }
  return score;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

/**
 * A whole PNG file from its chunks (IHDR and IEND are added): for encoders that deflate their own IDAT.
 *
 * @example
 * const png = assemblePng(width, height, 8, 2, [["IDAT", zlibData]]); // 8-bit RGB
 */
export function assemblePng(width: number, height: number, bitDepth: number, colourType: number, chunks: Array<[string, Uint8Array]>): Uint8Array {
  const ihdr = new Uint8Array(13);
  const view = new DataView(ihdr.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  ihdr[8] = bitDepth;
  ihdr[9] = colourType;
  // compression 0, filter method 0, interlace 0: the zeros already there
  const all: Array<[string, Uint8Array]> = [["IHDR", ihdr], ...chunks, ["IEND", new Uint8Array(0)]];
  const out = new Uint8Array(SIGNATURE.length + all.reduce((sum, [, data]) => sum + 12 + data.length, 0));
  const outView = new DataView(out.buffer);
  out.set(SIGNATURE, 0);
  let offset = SIGNATURE.length;
  for (const [type, data] of all) {
    outView.setUint32(offset, data.length);
    for (let i = 0; i < 4; i++) out[offset + 4 + i] = type.charCodeAt(i);
    out.set(data, offset + 8);
    outView.setUint32(offset + 8 + data.length, crc32(out, offset + 4, offset + 8 + data.length));
    offset += 12 + data.length;
  }
  return out;
}
