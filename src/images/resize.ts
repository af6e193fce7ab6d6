/**
 * The one resampler: every resize in the code base (photo uploads, JPEG YCbCr planes, QR logos and decoder
 * input, the photo compositor) goes through `resample`, a separable kernel over `channels` interleaved 8-bit
 * samples. `resizeRgba`, `resizeGray`/`resizePlane` and `resizePremultiplied` (alpha.ts) are thin wrappers.
 *
 * Why not photon's `resize`: it runs its kernel over the whole source, which is slow for a photo-sized
 * shrink. This does the same job in a fraction of the time by (1) averaging whole k x k blocks first, as
 * libvips' shrink does, and (2) filtering the small remaining factor with a triangle kernel in 14-bit fixed
 * point, with the common 2- and 3-tap cases unrolled; a shrink by at most 10 % (the JPEG planes after the
 * IDCT's scaling) is plain linear interpolation, two taps of one multiply.
 */
import type { GrayImage, RgbaImage } from "./types";

/** Interleaved 8-bit samples: `channels` per pixel, row `y` starting at sample `y * stride`. */
export interface Samples {
  width: number;
  height: number;
  /** Samples (not pixels) from one row to the next: at least `width * channels`. */
  stride: number;
  channels: number;
  data: Uint8Array | Uint8ClampedArray;
}

const BITS = 14;
const ONE = 1 << BITS;
const HALF = 1 << (BITS - 1);

/**
 * Resizes to exactly `width` x `height`. Downscales are antialiased (k x k block average for the integer part
 * of the factor, capped at 16, then a triangle kernel for the rest); upscales are bilinear. Channels are
 * filtered independently, so colour is not premultiplied: see `resizePremultiplied` for images with alpha.
 * Returns `src` itself when the size is unchanged, else new samples with `stride === width * channels`.
 *
 * @example
 * const y = resample({ width: 1500, height: 1125, stride: 1500, channels: 1, data }, 1440, 1080);
 */
export function resample(src: Samples, width: number, height: number): Samples {
  assertTarget(width, height);
  const rowEnd = (src.height - 1) * src.stride + src.width * src.channels;
  if (src.width < 1 || src.height < 1 || src.stride < src.width * src.channels || src.data.length < rowEnd) {
    throw new RangeError(`${src.data.length} samples cannot hold ${src.width}x${src.height}x${src.channels} at stride ${src.stride}`);
  }
  if (width === src.width && height === src.height) return src;
  const kx = blockFactor(src.width, width);
  const ky = blockFactor(src.height, height);
  let p = kx > 1 || ky > 1 ? boxShrink(src, kx, ky) : src;
  if (p.width !== width) p = resampleRows(p, width);
  if (p.height !== height) p = resampleColumns(p, height);
  return p;
}

/** The block averaging's factor along one axis: the integer part of the shrink, capped at 16 (1: none). */
function blockFactor(from: number, to: number): number {
  return Math.min(16, Math.max(1, Math.floor(from / to)));
}

function assertTarget(width: number, height: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width * height > 100_000_000) {
    throw new RangeError(`resize target ${width}x${height} is not a valid size`);
  }
}

/**
 * Resizes RGBA (straight alpha: flatten or premultiply first when transparency matters).
 *
 * @example
 * const thumb = resizeRgba(decoded, 256, 192);
 */
export function resizeRgba(img: RgbaImage, width: number, height: number): RgbaImage {
  if (img.data.length !== img.width * img.height * 4) {
    throw new RangeError(`RGBA data is ${img.data.length} bytes; ${img.width}x${img.height} needs ${img.width * img.height * 4}`);
  }
  const out = resample({ width: img.width, height: img.height, stride: img.width * 4, channels: 4, data: img.data }, width, height);
  return out.data === img.data ? img : { width, height, data: out.data as Uint8Array };
}

/**
 * Resizes one 8-bit channel (a gray image or a mask; YCbCr planes with a stride use `resizePlane`).
 *
 * @example
 * const small = resizeGray(gray, 400, 300);
 */
export function resizeGray(img: GrayImage, width: number, height: number): GrayImage {
  const out = resample({ width: img.width, height: img.height, stride: img.width, channels: 1, data: img.data }, width, height);
  return out.data === img.data ? img : { width, height, data: out.data as Uint8Array };
}

const LANES = 0x00ff00ff;

/**
 * Averages kx x ky blocks (edge blocks average the samples they have), rounding to the nearest value.
 * The ky rows of a block row are summed first, four samples per 32-bit operation: a word of four samples is
 * split into two words of two 16-bit lanes (bytes 0 and 2, bytes 1 and 3), and 16 rows of 255 cannot
 * overflow a lane. That pass is blind to channels; the horizontal sums then run once per output row.
 */
function boxShrink(input: Samples, kx: number, ky: number): Samples {
  const src = wordAligned(input);
  const { width: sw, height: sh, channels: C } = src;
  const words = new Uint32Array(src.data.buffer, src.data.byteOffset, src.data.byteLength >>> 2);
  const wordStride = src.stride >>> 2;
  const rowWords = Math.ceil((sw * C) / 4);
  const dw = Math.ceil(sw / kx);
  const dh = Math.ceil(sh / ky);
  const rowLen = dw * C;
  const even = new Uint32Array(rowWords); // column sums of bytes 0 and 2 of each word
  const odd = new Uint32Array(rowWords); // and of bytes 1 and 3
  const out = new Uint8Array(rowLen * dh);
  for (let dy = 0; dy < dh; dy++) {
    const y0 = dy * ky;
    const rows = Math.min(sh, y0 + ky) - y0;
    const w0 = y0 * wordStride;
    const wEnd = w0 + rows * wordStride;
    if (rows === 2) {
      // The most common factor, unrolled.
      for (let x = 0, a = w0, b = w0 + wordStride; x < rowWords; x++) {
        const p = words[a++]!;
        const q = words[b++]!;
        even[x] = (p & LANES) + (q & LANES);
        odd[x] = ((p >>> 8) & LANES) + ((q >>> 8) & LANES);
      }
    } else
      for (let x = 0; x < rowWords; x++) {
        let e = 0;
        let o = 0;
        for (let wi = w0 + x; wi < wEnd; wi += wordStride) {
          const p = words[wi]!;
          e += p & LANES;
          o += (p >>> 8) & LANES;
        }
        even[x] = e;
        odd[x] = o;
      }
    if (C === 4) averageRgbaRow(even, odd, out, dy * rowLen, sw, kx, rows);
    else averageRow(even, odd, out, dy * rowLen, sw, C, kx, rows);
  }
  return { width: dw, height: dh, stride: rowLen, channels: C, data: out };
}

/** Horizontal block sums when a word is a pixel: its two words of lanes add up whole pixels at a time. */
function averageRgbaRow(even: Uint32Array, odd: Uint32Array, out: Uint8Array, oi: number, sw: number, kx: number, rows: number): void {
  for (let x0 = 0; x0 < sw; x0 += kx) {
    const cols = Math.min(kx, sw - x0);
    let rb = 0;
    let ga = 0;
    // At most 16 x 16 samples of 255 per lane: each lane stays below 65536.
    for (let i = x0; i < x0 + cols; i++) {
      rb += even[i]!;
      ga += odd[i]!;
    }
    const n = rows * cols;
    const half = n >>> 1;
    out[oi++] = ((rb & 0xffff) + half) / n;
    out[oi++] = ((ga & 0xffff) + half) / n;
    out[oi++] = ((rb >>> 16) + half) / n;
    out[oi++] = ((ga >>> 16) + half) / n;
  }
}

/** Horizontal block sums for any channel count, reading each sample's column sum out of its lane. */
function averageRow(even: Uint32Array, odd: Uint32Array, out: Uint8Array, oi: number, sw: number, C: number, kx: number, rows: number): void {
  for (let x0 = 0; x0 < sw; x0 += kx) {
    const cols = Math.min(kx, sw - x0);
    const n = rows * cols;
    for (let c = 0; c < C; c++) {
      let sum = n >>> 1;
      for (let i = 0, k = x0 * C + c; i < cols; i++, k += C) sum += ((k & 1 ? odd : even)[k >>> 2]! >>> ((k & 2) << 3)) & 0xffff;
      out[oi++] = sum / n;
    }
  }
}

/** `src` itself when its rows start on 4-byte boundaries and its last word is readable, else such a copy. */
function wordAligned(src: Samples): Samples {
  const { data, stride, height } = src;
  const rowLen = src.width * src.channels;
  const padded = (rowLen + 3) & ~3;
  if (data.byteOffset % 4 === 0 && stride % 4 === 0 && data.length >= (height - 1) * stride + padded) return src;
  const copy = new Uint8Array(padded * height);
  for (let y = 0; y < height; y++) copy.set(data.subarray(y * stride, y * stride + rowLen), y * padded);
  return { ...src, stride: padded, data: copy };
}

interface Taps {
  start: Int32Array; // first source index per output
  count: Int32Array; // taps per output
  weights: Int32Array; // count[i] weights per output, packed at i * maxTaps
  maxTaps: number;
  /** When > 0, every output has exactly this many taps (zero weights padded in, all inside the source). */
  fixed: number;
}

/** Downscale factors up to this are filtered with the plain (1-pixel) triangle: see `triangleTaps`. */
const LINEAR_UP_TO = 1.1;

/**
 * Triangle filter taps; the support widens with the downscale factor so every source pixel contributes.
 * Weights are non-negative integers in units of ONE that sum exactly to ONE, so flat areas stay exactly flat
 * and no result leaves 0..255.
 */
function triangleTaps(srcSize: number, dstSize: number): Taps {
  const scale = srcSize / dstSize;
  // A slight shrink (the JPEG planes after the IDCT's scaling: 1500 -> 1440) is linear interpolation, two
  // taps: widening the kernel by a few percent would only add a third tap of near-zero weight.
  const support = scale <= LINEAR_UP_TO ? 1 : scale;
  const maxTaps = Math.ceil(support) * 2 + 1;
  const start = new Int32Array(dstSize);
  const count = new Int32Array(dstSize);
  const weights = new Int32Array(dstSize * maxTaps);
  const tmp = new Float64Array(maxTaps);
  for (let i = 0; i < dstSize; i++) {
    const center = (i + 0.5) * scale;
    const lo = Math.max(0, Math.floor(center - support));
    const hi = Math.min(srcSize, Math.ceil(center + support));
    let sum = 0;
    let n = 0;
    for (let j = lo; j < hi && n < maxTaps; j++, n++) {
      const w = Math.max(0, 1 - Math.abs((j + 0.5 - center) / support));
      tmp[n] = w;
      sum += w;
    }
    let total = 0;
    let biggest = 0;
    for (let t = 0; t < n; t++) {
      const w = sum > 0 ? Math.round((tmp[t]! / sum) * ONE) : t === 0 ? ONE : 0;
      weights[i * maxTaps + t] = w;
      total += w;
      if (w > weights[i * maxTaps + biggest]!) biggest = t;
    }
    weights[i * maxTaps + biggest] = weights[i * maxTaps + biggest]! + ONE - total;
    start[i] = lo;
    count[i] = n;
  }
  const taps = { start, count, weights, maxTaps, fixed: 0 };
  taps.fixed = padTaps(srcSize, taps);
  return taps;
}

/**
 * Gives every output the same number of taps (the most any has), padding with zero weights and moving the
 * window back inside the source at the far edge, so the resamplers can run unrolled 2- and 3-tap loops.
 * Returns that count, or 0 when the source is too small for it.
 */
function padTaps(srcSize: number, { start, count, weights, maxTaps }: Taps): number {
  // Drop zero weights at either end first (the window's rounding often adds one).
  for (let i = 0; i < count.length; i++) {
    const base = i * maxTaps;
    let n = count[i]!;
    while (n > 1 && weights[base + n - 1] === 0) n--;
    let lead = 0;
    while (lead < n - 1 && weights[base + lead] === 0) lead++;
    if (lead > 0) {
      for (let k = 0; k < n - lead; k++) weights[base + k] = weights[base + k + lead]!;
      for (let k = n - lead; k < n; k++) weights[base + k] = 0;
      start[i] = start[i]! + lead;
      n -= lead;
    }
    count[i] = n;
  }
  let t = 0;
  for (let i = 0; i < count.length; i++) t = Math.max(t, count[i]!);
  if (t > srcSize || t > maxTaps) return 0;
  for (let i = 0; i < count.length; i++) {
    const n = count[i]!;
    if (n === t) continue;
    const base = i * maxTaps;
    const shift = Math.max(0, start[i]! + t - srcSize);
    for (let k = n - 1; k >= 0; k--) weights[base + k + shift] = weights[base + k]!;
    for (let k = 0; k < shift; k++) weights[base + k] = 0;
    for (let k = n + shift; k < t; k++) weights[base + k] = 0;
    start[i] = start[i]! - shift;
    count[i] = t;
  }
  return t;
}

/**
 * The horizontal pass, into `out` (row y at y * dw * channels) when given. Weights are non-negative and sum
 * to ONE, so every result is already 0..255.
 */
function resampleRows(src: Samples, dw: number, taps = triangleTaps(src.width, dw), out: Uint8Array = new Uint8Array(dw * src.channels * src.height)): Samples {
  const { height: h, stride, channels: C, data: s } = src;
  const { start, count, weights, maxTaps, fixed } = taps;
  const rowLen = dw * C;
  if (fixed === 2 && C === 1) {
    const w0 = new Int32Array(dw),
      at = new Int32Array(dw);
    for (let x = 0; x < dw; x++) {
      w0[x] = weights[x * maxTaps]!;
      at[x] = start[x]!;
    }
    return { width: dw, height: h, stride: rowLen, channels: 1, data: rows2Gray(src, dw, at, w0, out) };
  }
  if (fixed === 3) {
    const w0 = new Int32Array(dw),
      w1 = new Int32Array(dw),
      w2 = new Int32Array(dw),
      at = new Int32Array(dw);
    for (let x = 0; x < dw; x++) {
      w0[x] = weights[x * maxTaps]!;
      w1[x] = weights[x * maxTaps + 1]!;
      w2[x] = weights[x * maxTaps + 2]!;
      at[x] = start[x]! * C;
    }
    if (C === 1) return { width: dw, height: h, stride: rowLen, channels: 1, data: rows3Gray(src, dw, at, w0, w1, w2, out) };
    for (let y = 0; y < h; y++) {
      const row = y * stride;
      let oi = y * rowLen;
      for (let x = 0; x < dw; x++) {
        const a = w0[x]!,
          b = w1[x]!,
          c = w2[x]!;
        let si = row + at[x]!;
        if (C === 4) {
          // RGBA unrolled: one pixel's four channels share the three weights.
          out[oi] = (HALF + s[si]! * a + s[si + 4]! * b + s[si + 8]! * c) >> BITS;
          out[oi + 1] = (HALF + s[si + 1]! * a + s[si + 5]! * b + s[si + 9]! * c) >> BITS;
          out[oi + 2] = (HALF + s[si + 2]! * a + s[si + 6]! * b + s[si + 10]! * c) >> BITS;
          out[oi + 3] = (HALF + s[si + 3]! * a + s[si + 7]! * b + s[si + 11]! * c) >> BITS;
          oi += 4;
          continue;
        }
        for (let ch = 0; ch < C; ch++, si++) {
          out[oi++] = (HALF + s[si]! * a + s[si + C]! * b + s[si + 2 * C]! * c) >> BITS;
        }
      }
    }
    return { width: dw, height: h, stride: rowLen, channels: C, data: out };
  }
  for (let y = 0; y < h; y++) {
    const row = y * stride;
    let oi = y * rowLen;
    for (let x = 0; x < dw; x++) {
      const wi = x * maxTaps;
      const n = count[x]!;
      for (let ch = 0; ch < C; ch++) {
        let acc = HALF;
        let si = row + start[x]! * C + ch;
        for (let t = 0; t < n; t++, si += C) acc += s[si]! * weights[wi + t]!;
        out[oi++] = acc >> BITS;
      }
    }
  }
  return { width: dw, height: h, stride: rowLen, channels: C, data: out };
}

/**
 * The rows of a one-channel horizontal pass two at a time (the unrolled kernels load each tap's position and
 * weights once for both), then the last one if the count is odd: `kernel(s, out, row, second, oi, oj)` fills
 * output rows `oi` and `oj` from source rows `row` and `row + second`. For the odd last row `second` is 0 and
 * `oj` is `oi`, so that row is computed twice into the same place.
 */
type RowPairKernel = (s: Samples["data"], out: Uint8Array, row: number, second: number, oi: number, oj: number) => void;

function rowPairs(src: Samples, dw: number, kernel: RowPairKernel, out: Uint8Array): Uint8Array {
  const { height: h, stride, data } = src;
  for (let y = 0; y < h; y += 2) {
    const two = y + 1 < h;
    kernel(data, out, y * stride, two ? stride : 0, y * dw, two ? (y + 1) * dw : y * dw);
  }
  return out;
}

/** The 3-tap horizontal pass on one channel (the JPEG planes' common case). */
function rows3Gray(src: Samples, dw: number, at: Int32Array, w0: Int32Array, w1: Int32Array, w2: Int32Array, into: Uint8Array): Uint8Array {
  return rowPairs(
    src,
    dw,
    (s, out, row, second, oi, oj) => {
      for (let x = 0; x < dw; x++) {
        const si = row + at[x]!;
        const a = w0[x]!,
          b = w1[x]!,
          c = w2[x]!;
        const sj = si + second;
        out[oj + x] = (HALF + s[sj]! * a + s[sj + 1]! * b + s[sj + 2]! * c) >> BITS;
        out[oi + x] = (HALF + s[si]! * a + s[si + 1]! * b + s[si + 2]! * c) >> BITS;
      }
    },
    into,
  );
}

/**
 * The 2-tap horizontal pass on one channel (a slight shrink of a JPEG plane): the second weight is ONE minus
 * the first, so each output is one multiply, `a + (b - a) * w1`.
 */
function rows2Gray(src: Samples, dw: number, at: Int32Array, w0: Int32Array, into: Uint8Array): Uint8Array {
  return rowPairs(
    src,
    dw,
    (s, out, row, second, oi, oj) => {
      for (let x = 0; x < dw; x++) {
        const si = row + at[x]!;
        const w = ONE - w0[x]!;
        const a = s[si]!,
          c = s[si + second]!;
        out[oj + x] = ((c << BITS) + HALF + (s[si + second + 1]! - c) * w) >> BITS;
        out[oi + x] = ((a << BITS) + HALF + (s[si + 1]! - a) * w) >> BITS;
      }
    },
    into,
  );
}

/**
 * The vertical pass: rows of `width * channels` samples, blind to how they group into pixels. Only output
 * rows `from` to `to` (all by default) are made, into `out` when given.
 */
function resampleColumns(
  src: Samples,
  dh: number,
  taps = triangleTaps(src.height, dh),
  from = 0,
  to = dh,
  out: Uint8Array = new Uint8Array(src.width * src.channels * dh),
): Samples {
  const { stride, channels: C, data: s } = src;
  const w = src.width * C;
  const { start, count, weights, maxTaps, fixed } = taps;
  if (fixed === 3 || fixed === 2) {
    for (let y = from; y < to; y++) {
      const wi = y * maxTaps;
      const w0 = weights[wi]!,
        w1 = weights[wi + 1]!;
      const s0 = start[y]! * stride;
      const s1 = s0 + stride;
      const oi = y * w;
      if (fixed === 2) {
        // w0 + w1 === ONE: one multiply per sample.
        for (let x = 0; x < w; x++) {
          const a = s[s0 + x]!;
          out[oi + x] = ((a << BITS) + HALF + (s[s1 + x]! - a) * w1) >> BITS;
        }
        continue;
      }
      const w2 = weights[wi + 2]!;
      const s2 = s1 + stride;
      for (let x = 0; x < w; x++) out[oi + x] = (HALF + s[s0 + x]! * w0 + s[s1 + x]! * w1 + s[s2 + x]! * w2) >> BITS;
    }
    return { width: src.width, height: dh, stride: w, channels: C, data: out };
  }
  const acc = new Int32Array(w);
  for (let y = from; y < to; y++) {
    acc.fill(HALF);
    const wi = y * maxTaps;
    // Row at a time keeps memory access sequential; walking columns thrashes the cache on wide images.
    for (let t = 0, n = count[y]!; t < n; t++) {
      const wt = weights[wi + t]!;
      let si = (start[y]! + t) * stride;
      for (let x = 0; x < w; x++) acc[x] = acc[x]! + s[si++]! * wt;
    }
    const oi = y * w;
    for (let x = 0; x < w; x++) out[oi + x] = acc[x]! >> BITS;
  }
  return { width: src.width, height: dh, stride: w, channels: C, data: out };
}

/**
 * `resample` of a plane whose rows arrive top to bottom (a JPEG still being decoded in another thread):
 * `need(rows)` is how many source rows the first `rows` output rows read, and `advance(available, rows)` makes
 * output rows up to `rows` from the first `available` source rows (at least `need(rows)` of them). The
 * result, `out`, is exactly `resample`'s: the same block averaging first (a group of k source rows at a
 * time, once all of its rows are there), then the same horizontal and vertical passes.
 *
 * @example
 * const y = StreamedResample.of(plane, 1440, 1080);
 * y.advance(rowsDecoded, 16); // once rowsDecoded >= y.need(16)
 */
export class StreamedResample {
  readonly out: Samples;
  /** What the passes read: the block averages, or the source itself; `baseRows` rows of it are there so far. */
  private readonly base: Samples;
  private baseRows = 0;
  /** The horizontal pass's output (`base` itself when the width stays), as many rows done as `base` has. */
  private readonly across: Samples;
  private outRows = 0;
  private readonly baseData: Uint8Array;
  private readonly acrossData: Uint8Array;
  private readonly outData: Uint8Array;
  private readonly rowTaps: Taps | null;
  private readonly columnTaps: Taps | null;

  private constructor(
    private readonly src: Samples,
    private readonly kx: number,
    private readonly ky: number,
    width: number,
    height: number,
  ) {
    const C = src.channels;
    const boxed = kx > 1 || ky > 1;
    const bw = Math.ceil(src.width / kx);
    const bh = Math.ceil(src.height / ky);
    this.baseData = new Uint8Array(boxed ? bw * C * bh : 0);
    this.base = boxed ? { width: bw, height: bh, stride: bw * C, channels: C, data: this.baseData } : src;
    this.rowTaps = width !== bw ? triangleTaps(bw, width) : null;
    this.columnTaps = height !== bh ? triangleTaps(bh, height) : null;
    this.acrossData = new Uint8Array(this.rowTaps ? width * C * bh : 0);
    this.outData = new Uint8Array(this.columnTaps ? width * C * height : 0);
    this.across = this.rowTaps ? { width, height: bh, stride: width * C, channels: C, data: this.acrossData } : this.base;
    this.out = this.columnTaps ? { width, height, stride: width * C, channels: C, data: this.outData } : this.across;
  }

  /**
   * The streamed resize of `src` to `width` x `height` (`resample`'s checks and factors). From output row
   * `fromRow` on, when given: the rows above it are never computed (another thread makes them), nor the
   * source rows only they read (their memory is allocated all the same).
   */
  static of(src: Samples, width: number, height: number, fromRow = 0): StreamedResample {
    assertTarget(width, height);
    const resample = new StreamedResample(src, blockFactor(src.width, width), blockFactor(src.height, height), width, height);
    if (fromRow > 0) resample.skipTo(Math.min(fromRow, height));
    return resample;
  }

  private skipTo(row: number): void {
    const t = this.columnTaps;
    this.baseRows = t ? t.start[row === this.out.height ? row - 1 : row]! : row;
    this.outRows = row;
  }

  need(rows: number): number {
    const last = Math.min(rows, this.out.height) - 1;
    if (last < 0) return 0;
    const t = this.columnTaps;
    const baseRows = t ? Math.min(this.base.height, t.start[last]! + (t.fixed || t.count[last]!)) : last + 1;
    return Math.min(this.src.height, baseRows * this.ky);
  }

  advance(available: number, rows: number): void {
    const { src, base, across, ky } = this;
    const ready = Math.min(available, src.height);
    const before = this.baseRows;
    if (base !== src) {
      // Whole groups of ky source rows (the last, short one once every row is there) into block averages.
      const groups = ready >= src.height ? base.height : Math.floor(ready / ky);
      if (groups > this.baseRows) {
        const from = this.baseRows * ky;
        const band = { ...src, height: Math.min(src.height, groups * ky) - from, data: src.data.subarray(from * src.stride) };
        this.baseData.set(boxShrink(band, this.kx, ky).data, this.baseRows * base.stride);
        this.baseRows = groups;
      }
    } else {
      this.baseRows = ready;
    }
    if (this.rowTaps && this.baseRows > before) {
      const band = { ...base, height: this.baseRows - before, data: base.data.subarray(before * base.stride) };
      resampleRows(band, across.width, this.rowTaps, this.acrossData.subarray(before * across.stride, this.baseRows * across.stride));
    }
    const to = Math.min(rows, this.out.height);
    if (to <= this.outRows) return;
    if (this.need(to) > ready) throw new RangeError(`output rows to ${to} need ${this.need(to)} source rows, ${ready} have arrived`);
    if (this.columnTaps) resampleColumns(across, this.out.height, this.columnTaps, this.outRows, to, this.outData);
    this.outRows = to;
  }
}
