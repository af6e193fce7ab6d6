/**
 * A baseline JPEG encoder in plain TypeScript: YCbCr 4:2:0, the ITU T.81 Annex K quantisation tables scaled by
 * quality as libjpeg does, the Annex K Huffman tables, and the AAN float forward DCT.
 *
 * Why not photon's `get_bytes_jpeg`: it keeps chroma at full resolution and is slower for it;
 * this one subsamples chroma like libjpeg/sharp's default (half the blocks to transform and code) and runs in
 * the JS heap, so normalisation never grows photon's WASM memory.
 */
import { ZIGZAG } from "./jpeg-decode";
import type { Plane, YCbCrImage } from "./planes";
import type { RgbaImage } from "./types";

/** Zigzag position of each natural index. */
const UNZIGZAG = new Int32Array(64);
for (let k = 0; k < 64; k++) UNZIGZAG[ZIGZAG[k]!] = k;

// Annex K.1 tables, natural order.
const LUMA_Q = [
  16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103,
  77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];
const CHROMA_Q = [
  17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
  99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
];

// Annex K.3 Huffman tables: code counts per length 1..16, then the symbols.
const DC_LUMA_BITS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
const DC_CHROMA_BITS = [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0];
const DC_VALUES = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
const AC_LUMA_BITS = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d];
const AC_LUMA_VALUES = [
  0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42,
  0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35,
  0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67,
  0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98,
  0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7,
  0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4,
  0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
];
const AC_CHROMA_BITS = [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77];
const AC_CHROMA_VALUES = [
  0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71, 0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1,
  0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0, 0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26, 0x27, 0x28, 0x29, 0x2a,
  0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66,
  0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96,
  0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5,
  0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4,
  0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
];

interface Codes {
  code: Int32Array;
  size: Int32Array;
}

function huffmanCodes(bits: number[], values: number[]): Codes {
  const code = new Int32Array(256);
  const size = new Int32Array(256);
  let c = 0;
  let k = 0;
  for (let len = 1; len <= 16; len++) {
    for (let i = 0; i < bits[len - 1]!; i++, k++, c++) {
      code[values[k]!] = c;
      size[values[k]!] = len;
    }
    c <<= 1;
  }
  return { code, size };
}

const DC_LUMA = huffmanCodes(DC_LUMA_BITS, DC_VALUES);
const DC_CHROMA = huffmanCodes(DC_CHROMA_BITS, DC_VALUES);
const AC_LUMA = huffmanCodes(AC_LUMA_BITS, AC_LUMA_VALUES);
const AC_CHROMA = huffmanCodes(AC_CHROMA_BITS, AC_CHROMA_VALUES);

/** libjpeg's quality scaling of a base table (quality 50 = the table as printed), natural order. */
function scaledTable(base: number[], quality: number): Int32Array {
  const q = Math.max(1, Math.min(100, Math.round(quality)));
  const scale = q < 50 ? 5000 / q : 200 - q * 2;
  return Int32Array.from(base, (v) => Math.max(1, Math.min(255, Math.floor((v * scale + 50) / 100))));
}

/** AAN output k carries a factor sqrt(2) cos(k pi / 16) (1 for k = 0); the divisors take it back out. */
const AAN = [1, 1.387039845, 1.306562965, 1.175875602, 1, 0.785694958, 0.5411961, 0.275899379];

function divisors(table: Int32Array): Float64Array {
  const d = new Float64Array(64);
  for (let i = 0; i < 64; i++) d[i] = 1 / (table[i]! * AAN[i >> 3]! * AAN[i & 7]! * 8);
  return d;
}

/**
 * Encodes opaque RGBA (alpha ignored: flatten first) as a baseline JFIF JPEG, 4:2:0, at `quality` 1..100.
 *
 * @example
 * const jpeg = encodeJpegBaseline({ width: 1440, height: 1080, data: rgba }, 85);
 */
export function encodeJpegBaseline(img: RgbaImage, quality = 85): Uint8Array {
  const { width, height, data } = img;
  if (
    !Number.isInteger(width) ||
    !Number.isInteger(height) ||
    width < 1 ||
    height < 1 ||
    width > 65535 ||
    height > 65535 ||
    data.length !== width * height * 4
  ) {
    throw new RangeError(`cannot encode ${width}x${height} from ${data.length} bytes`);
  }
  return encodeJpegPlanes(rgbaToYCbCr420(img), quality);
}

/** RGB -> JFIF YCbCr with chroma averaged over each 2x2 (edge pixels repeated), rounded to bytes. */
function rgbaToYCbCr420(img: RgbaImage): YCbCrImage {
  const { width, height, data: d } = img;
  const cw = (width + 1) >> 1;
  const ch = (height + 1) >> 1;
  const Y = new Uint8ClampedArray(width * height);
  const Cb = new Uint8ClampedArray(cw * ch);
  const Cr = new Uint8ClampedArray(cw * ch);
  for (let y = 0; y < height; y += 2) {
    const y1 = Math.min(height - 1, y + 1);
    const r0 = y * width;
    const r1 = y1 * width;
    for (let x = 0; x < width; x += 2) {
      const x1 = Math.min(width - 1, x + 1);
      let sb = 0,
        sr = 0;
      for (let k = 0; k < 4; k++) {
        const i = (k < 2 ? r0 : r1) + (k & 1 ? x1 : x);
        const p = i * 4;
        const R = d[p]!,
          G = d[p + 1]!,
          B = d[p + 2]!;
        Y[i] = 0.299 * R + 0.587 * G + 0.114 * B;
        sb += -0.168736 * R - 0.331264 * G + 0.5 * B;
        sr += 0.5 * R - 0.418688 * G - 0.081312 * B;
      }
      const ci = (y >> 1) * cw + (x >> 1);
      Cb[ci] = sb * 0.25 + 128;
      Cr[ci] = sr * 0.25 + 128;
    }
  }
  return {
    width,
    height,
    y: { width, height, stride: width, data: Y },
    cb: { width: cw, height: ch, stride: cw, data: Cb },
    cr: { width: cw, height: ch, stride: cw, data: Cr },
  };
}

/**
 * Encodes YCbCr planes (Y at `width` x `height`, Cb and Cr at half size rounded up) as a baseline JFIF JPEG,
 * 4:2:0, at `quality` 1..100, with no colour conversion: the JPEG -> JPEG path of normalisation. Every MCU
 * row is its own restart interval (DRI, then RSTn between rows: about 2.5 bytes a row), so rows can be
 * encoded apart and joined (`encodeJpegRowsFrom`).
 * `beforeRow(my)`, when given, is called before MCU row `my` is read (Y rows to 16 * (my + 1), chroma rows
 * to 8 * (my + 1)), so the planes can still be filling while the rows above are encoded. When it answers
 * false the encoding ends before that row: the result is then the file's first part, its last interval
 * padded and no end marker, for `encodeJpegRowsFrom(img, quality, my)` to be appended.
 *
 * @example
 * const jpeg = encodeJpegPlanes({ width, height, y, cb, cr }, 85);
 */
export function encodeJpegPlanes(img: YCbCrImage, quality = 85, beforeRow?: (my: number) => boolean | undefined): Uint8Array {
  const { lq, cq } = checkPlanes(img, quality);
  const w = new Writer(Math.max(4096, img.width * img.height));
  writeHeaders(w, img.width, img.height, lq, cq);
  const end = encodeRows(w, img, lq, cq, 0, beforeRow);
  w.flushBits();
  if (end === Math.ceil(img.height / 16)) w.bytes([0xff, 0xd9]);
  return w.result();
}

/**
 * The rest of `encodeJpegPlanes(img, quality)` from MCU row `first` (at least 1) on: its restart marker,
 * the rows, the end marker. Appended to a first part that ended before `first`, it makes the same file.
 *
 * @example
 * const whole = concat([encodeJpegPlanes(img, 85, (my) => my < 30), encodeJpegRowsFrom(img, 85, 30)]);
 */
export function encodeJpegRowsFrom(img: YCbCrImage, quality: number, first: number): Uint8Array {
  const { lq, cq } = checkPlanes(img, quality);
  const mcuH = Math.ceil(img.height / 16);
  if (!Number.isInteger(first) || first < 1 || first >= mcuH) throw new RangeError(`no MCU row ${first} to start from in ${mcuH}`);
  const w = new Writer(Math.max(4096, img.width * (img.height - first * 16)));
  encodeRows(w, img, lq, cq, first);
  w.flushBits();
  w.bytes([0xff, 0xd9]);
  return w.result();
}

function checkPlanes(img: YCbCrImage, quality: number): { lq: Int32Array; cq: Int32Array } {
  const { width, height, y: yp, cb, cr } = img;
  const cw = (width + 1) >> 1;
  const ch = (height + 1) >> 1;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > 65535 || height > 65535) {
    throw new RangeError(`cannot encode ${width}x${height}`);
  }
  if (yp.width !== width || yp.height !== height || cb.width !== cw || cb.height !== ch || cr.width !== cw || cr.height !== ch) {
    throw new RangeError(`planes ${yp.width}x${yp.height}, ${cb.width}x${cb.height}, ${cr.width}x${cr.height} do not fit 4:2:0 at ${width}x${height}`);
  }
  return { lq: scaledTable(LUMA_Q, quality), cq: scaledTable(CHROMA_Q, quality) };
}

/**
 * MCU rows from `first` while `beforeRow` allows, each after its restart marker (but the first row of the
 * file), the DC predictions starting again from 0; returns the row it ended before.
 */
function encodeRows(w: Writer, img: YCbCrImage, lq: Int32Array, cq: Int32Array, first: number, beforeRow?: (my: number) => boolean | undefined): number {
  const { width, height, y: yp, cb, cr } = img;
  const cw = (width + 1) >> 1;
  const ch = (height + 1) >> 1;
  const lDiv = divisors(lq);
  const cDiv = divisors(cq);
  const mcuW = Math.ceil(width / 16);
  const mcuH = Math.ceil(height / 16);
  const blk = new Float64Array(64);
  const edge = new Uint8Array(64);
  const coef = new Int32Array(64);
  for (let my = first; my < mcuH; my++) {
    if (beforeRow?.(my) === false) return my;
    if (my > 0) {
      w.flushBits();
      w.bytes([0xff, 0xd0 + ((my - 1) & 7)]);
    }
    let predY = 0,
      predCb = 0,
      predCr = 0;
    for (let mx = 0; mx < mcuW; mx++) {
      for (let b = 0; b < 4; b++) {
        const x0 = mx * 16 + (b & 1) * 8,
          y0 = my * 16 + (b >> 1) * 8;
        if (x0 + 8 <= width && y0 + 8 <= height) fdctQuantise(yp.data, y0 * yp.stride + x0, yp.stride, blk, lDiv, coef);
        else fdctQuantise(edgeBlock(yp, x0, y0, edge), 0, 8, blk, lDiv, coef);
        predY = w.block(coef, predY, DC_LUMA, AC_LUMA);
      }
      const x0 = mx * 8,
        y0 = my * 8;
      const inside = x0 + 8 <= cw && y0 + 8 <= ch;
      if (inside) fdctQuantise(cb.data, y0 * cb.stride + x0, cb.stride, blk, cDiv, coef);
      else fdctQuantise(edgeBlock(cb, x0, y0, edge), 0, 8, blk, cDiv, coef);
      predCb = w.block(coef, predCb, DC_CHROMA, AC_CHROMA);
      if (inside) fdctQuantise(cr.data, y0 * cr.stride + x0, cr.stride, blk, cDiv, coef);
      else fdctQuantise(edgeBlock(cr, x0, y0, edge), 0, 8, blk, cDiv, coef);
      predCr = w.block(coef, predCr, DC_CHROMA, AC_CHROMA);
    }
  }
  return mcuH;
}

/** The 8x8 block at (x0, y0) of a block that crosses the right or bottom edge, the last sample repeated. */
function edgeBlock(p: Plane, x0: number, y0: number, out: Uint8Array): Uint8Array {
  const { width, height, stride, data } = p;
  for (let y = 0; y < 8; y++) {
    const r = Math.min(height - 1, y0 + y) * stride;
    for (let x = 0; x < 8; x++) out[y * 8 + x] = data[r + Math.min(width - 1, x0 + x)]!;
  }
  return out;
}

/** AAN float forward DCT (rows, then columns) and quantisation into zigzag order. */
function fdctQuantise(src: Uint8Array | Uint8ClampedArray, at: number, stride: number, b: Float64Array, div: Float64Array, out: Int32Array): void {
  // Rows straight from the plane. The level shift (-128 per sample) only changes each row's sum, the DC
  // term: -1024 there instead of 64 subtractions.
  for (let o = 0, r = at; o < 64; o += 8, r += stride) {
    const d0 = src[r]!,
      d1 = src[r + 1]!,
      d2 = src[r + 2]!,
      d3 = src[r + 3]!;
    const d4 = src[r + 4]!,
      d5 = src[r + 5]!,
      d6 = src[r + 6]!,
      d7 = src[r + 7]!;
    const t0 = d0 + d7,
      t7 = d0 - d7,
      t1 = d1 + d6,
      t6 = d1 - d6;
    const t2 = d2 + d5,
      t5 = d2 - d5,
      t3 = d3 + d4,
      t4 = d3 - d4;
    const t10 = t0 + t3,
      t13 = t0 - t3,
      t11 = t1 + t2,
      t12 = t1 - t2;
    b[o] = t10 + t11 - 1024;
    b[o + 4] = t10 - t11;
    const z1 = (t12 + t13) * 0.707106781;
    b[o + 2] = t13 + z1;
    b[o + 6] = t13 - z1;
    const s10 = t4 + t5,
      s11 = t5 + t6,
      s12 = t6 + t7;
    const z5 = (s10 - s12) * 0.382683433;
    const z2 = 0.5411961 * s10 + z5;
    const z4 = 1.306562965 * s12 + z5;
    const z3 = s11 * 0.707106781;
    const z11 = t7 + z3,
      z13 = t7 - z3;
    b[o + 5] = z13 + z2;
    b[o + 3] = z13 - z2;
    b[o + 1] = z11 + z4;
    b[o + 7] = z11 - z4;
  }
  // Columns, quantised straight into zigzag order (Math.round, half up, without the call: |v| < 65536).
  const iz = UNZIGZAG;
  for (let o = 0; o < 8; o++) {
    const d0 = b[o]!,
      d1 = b[o + 8]!,
      d2 = b[o + 16]!,
      d3 = b[o + 24]!;
    const d4 = b[o + 32]!,
      d5 = b[o + 40]!,
      d6 = b[o + 48]!,
      d7 = b[o + 56]!;
    const t0 = d0 + d7,
      t7 = d0 - d7,
      t1 = d1 + d6,
      t6 = d1 - d6;
    const t2 = d2 + d5,
      t5 = d2 - d5,
      t3 = d3 + d4,
      t4 = d3 - d4;
    const t10 = t0 + t3,
      t13 = t0 - t3,
      t11 = t1 + t2,
      t12 = t1 - t2;
    out[iz[o]!] = (((t10 + t11) * div[o]! + 65536.5) | 0) - 65536;
    out[iz[o + 32]!] = (((t10 - t11) * div[o + 32]! + 65536.5) | 0) - 65536;
    const z1 = (t12 + t13) * 0.707106781;
    out[iz[o + 16]!] = (((t13 + z1) * div[o + 16]! + 65536.5) | 0) - 65536;
    out[iz[o + 48]!] = (((t13 - z1) * div[o + 48]! + 65536.5) | 0) - 65536;
    const s10 = t4 + t5,
      s11 = t5 + t6,
      s12 = t6 + t7;
    const z5 = (s10 - s12) * 0.382683433;
    const z2 = 0.5411961 * s10 + z5;
    const z4 = 1.306562965 * s12 + z5;
    const z3 = s11 * 0.707106781;
    const z11 = t7 + z3,
      z13 = t7 - z3;
    out[iz[o + 40]!] = (((z13 + z2) * div[o + 40]! + 65536.5) | 0) - 65536;
    out[iz[o + 24]!] = (((z13 - z2) * div[o + 24]! + 65536.5) | 0) - 65536;
    out[iz[o + 8]!] = (((z11 + z4) * div[o + 8]! + 65536.5) | 0) - 65536;
    out[iz[o + 56]!] = (((z11 - z4) * div[o + 56]! + 65536.5) | 0) - 65536;
  }
}

/**
 * The output and its bit writer: at most 7 bits pending in `bits`, whole bytes written as they fill, each
 * 0xFF followed by the 0x00 stuffing byte.
 */
class Writer {
  private buf: Uint8Array;
  private pos = 0;
  private bits = 0;
  private count = 0;

  constructor(capacity: number) {
    this.buf = new Uint8Array(capacity);
  }

  bytes(values: ArrayLike<number>): void {
    this.ensure(values.length);
    for (let i = 0; i < values.length; i++) this.buf[this.pos++] = values[i]!;
  }

  /**
   * Huffman-codes one quantised block (zigzag order); returns the new DC predictor. The nonzero coefficients
   * are found from a bit mask (no branch per zero), and one loop writes the block's symbols in turn (DC, runs
   * of 16 zeros, coefficients, end of block), each a code and its value bits together where they fit, with
   * the bit buffer in locals. This runs once per block of the output, ~36k times for 1440x1080.
   */
  block(c: Int32Array, pred: number, dc: Codes, ac: Codes): number {
    // A block emits at most 64 * (16 + 11) bits plus stuffing: ~450 bytes.
    this.ensure(512);
    const buf = this.buf;
    let pos = this.pos;
    let bits = this.bits;
    let count = this.count;
    const acCode = ac.code;
    const acSize = ac.size;
    // Which AC positions are nonzero: bit k of lo for k = 1..31, bit k - 32 of hi for k = 32..63.
    let lo = 0;
    let hi = 0;
    for (let k = 1; k < 32; k++) lo |= ((c[k]! | -c[k]!) >>> 31) << k;
    for (let k = 0; k < 32; k++) hi |= ((c[k + 32]! | -c[k + 32]!) >>> 31) << k;
    const diff = c[0]! - pred;
    const ds = diff === 0 ? 0 : 32 - Math.clz32(diff < 0 ? -diff : diff);
    let code = (dc.code[ds]! << ds) | ((diff < 0 ? diff - 1 : diff) & ((1 << ds) - 1));
    let len = dc.size[ds]! + ds; // at most 11 + 11 bits
    /** The position coded last (64: the end of block), the zeros before the next, value bits held back. */
    let k = 0;
    let run = 0;
    let held = 0;
    let heldLength = 0;
    /** Whether the symbol being written finishes position k. */
    let done = true;
    for (;;) {
      bits = (bits << len) | code;
      count += len;
      while (count >= 8) {
        count -= 8;
        const byte = (bits >>> count) & 0xff;
        buf[pos++] = byte;
        if (byte === 0xff) buf[pos++] = 0;
      }
      if (heldLength > 0) {
        code = held;
        len = heldLength;
        heldLength = 0;
        done = true;
        continue;
      }
      if (done) {
        if (k >= 63) break; // position 63 written (no end of block needed), or the end of block
        let next = 64;
        if (lo !== 0) {
          const b = lo & -lo;
          next = 31 - Math.clz32(b);
          lo ^= b;
        } else if (hi !== 0) {
          const b = hi & -hi;
          next = 63 - Math.clz32(b);
          hi ^= b;
        }
        if (next === 64) {
          code = acCode[0]!;
          len = acSize[0]!;
          k = 64;
          continue;
        }
        run = next - k - 1;
        k = next;
      }
      if (run > 15) {
        code = acCode[0xf0]!;
        len = acSize[0xf0]!;
        run -= 16;
        done = false;
        continue;
      }
      const v = c[k]!;
      const s = 32 - Math.clz32(v < 0 ? -v : v);
      const sym = (run << 4) | s;
      const vb = (v < 0 ? v - 1 : v) & ((1 << s) - 1);
      code = acCode[sym]!;
      len = acSize[sym]!;
      done = len + s <= 24;
      // Up to 16 code + 10 value bits beside 7 pending would not fit 32: such value bits wait a step.
      if (done) {
        code = (code << s) | vb;
        len += s;
      } else {
        held = vb;
        heldLength = s;
      }
    }
    this.pos = pos;
    this.bits = bits & 0xff;
    this.count = count;
    return c[0]!;
  }

  /** Pads the last byte with 1 bits. */
  flushBits(): void {
    if (this.count === 0) return;
    const byte = ((this.bits << (8 - this.count)) | ((1 << (8 - this.count)) - 1)) & 0xff;
    this.ensure(2);
    this.buf[this.pos++] = byte;
    if (byte === 0xff) this.buf[this.pos++] = 0;
    this.count = 0;
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  result(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }
}

function writeHeaders(w: Writer, width: number, height: number, lq: Int32Array, cq: Int32Array): void {
  w.bytes([0xff, 0xd8]);
  // JFIF APP0: version 1.01, no density units, 1:1, no thumbnail.
  w.bytes([0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]);
  w.bytes([0xff, 0xdb, 0, 132]);
  for (const [id, t] of [
    [0, lq],
    [1, cq],
  ] as const) {
    w.bytes([id]);
    w.bytes(Array.from(ZIGZAG, (z) => t[z]!));
  }
  w.bytes([0xff, 0xc0, 0, 17, 8, height >> 8, height & 255, width >> 8, width & 255, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
  const tables: [number, number[], number[]][] = [
    [0x00, DC_LUMA_BITS, DC_VALUES],
    [0x10, AC_LUMA_BITS, AC_LUMA_VALUES],
    [0x01, DC_CHROMA_BITS, DC_VALUES],
    [0x11, AC_CHROMA_BITS, AC_CHROMA_VALUES],
  ];
  for (const [id, bits, values] of tables) {
    const len = 2 + 1 + 16 + values.length;
    w.bytes([0xff, 0xc4, len >> 8, len & 255, id, ...bits, ...values]);
  }
  // A restart interval of one MCU row (see encodeJpegPlanes).
  const interval = Math.ceil(width / 16);
  w.bytes([0xff, 0xdd, 0, 4, interval >> 8, interval & 255]);
  w.bytes([0xff, 0xda, 0, 12, 3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0]);
}
