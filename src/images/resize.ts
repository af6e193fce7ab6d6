/**
 * Resizing in plain JS, built for the large downscales of photo uploads.
 *
 * Why not photon's `resize`: on a 4000x3000 photo to 1440x1080 it took ~300 ms (Triangle) to ~600 ms
 * (Lanczos3) here. This does the same job in a fraction of that by (1) averaging whole k x k blocks first, as
 * libvips' shrink does, and (2) filtering the small remaining factor with a triangle kernel, (3) handling two
 * colour channels per 32-bit operation: a pixel read as one Uint32 is split into R_B_ and _G_A lanes of 16
 * bits, and with 8-bit weights that sum to 256 no lane can overflow into its neighbour.
 */
import { pixels32, type RgbaImage } from "./types";

const WEIGHT_BITS = 8;
const ONE = 1 << WEIGHT_BITS;
const LANES = 0x00ff00ff;

/**
 * Resizes RGBA to exactly `width` x `height`. Downscales are antialiased (block average, then triangle);
 * upscales are bilinear. Colour is not premultiplied: flatten transparency first when it matters.
 *
 * @example
 * const thumb = resizeRgba(decoded, 256, 192);
 */
export function resizeRgba(img: RgbaImage, width: number, height: number): RgbaImage {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width * height > 100_000_000) {
    throw new RangeError(`resize target ${width}x${height} is not a valid size`);
  }
  if (img.data.length !== img.width * img.height * 4) {
    throw new RangeError(`RGBA data is ${img.data.length} bytes; ${img.width}x${img.height} needs ${img.width * img.height * 4}`);
  }
  if (width === img.width && height === img.height) return img;
  // Block factors leave a residual of 1..2 for the filter; capped at 16 so a block sum fits a 16-bit lane.
  const kx = Math.min(16, Math.max(1, Math.floor(img.width / width)));
  const ky = Math.min(16, Math.max(1, Math.floor(img.height / height)));
  let src = kx > 1 || ky > 1 ? boxShrink(img, kx, ky) : img;
  if (src.width !== width) src = resampleHorizontal(src, width);
  if (src.height !== height) src = resampleVertical(src, height);
  return src;
}

/** Averages kx x ky blocks (edge blocks average the pixels they have). */
function boxShrink(img: RgbaImage, kx: number, ky: number): RgbaImage {
  const { width: sw, height: sh } = img;
  const s = pixels32(img.data);
  const dw = Math.ceil(sw / kx);
  const dh = Math.ceil(sh / ky);
  const out = new Uint32Array(dw * dh);
  let oi = 0;
  for (let dy = 0; dy < dh; dy++) {
    const y0 = dy * ky;
    const rows = Math.min(sh, y0 + ky) - y0;
    for (let dx = 0; dx < dw; dx++) {
      const x0 = dx * kx;
      const cols = Math.min(sw, x0 + kx) - x0;
      let rb = 0;
      let ga = 0;
      for (let j = 0; j < rows; j++) {
        let si = (y0 + j) * sw + x0;
        for (let i = 0; i < cols; i++) {
          const p = s[si++]!;
          rb += p & LANES;
          ga += (p >>> 8) & LANES;
        }
      }
      const n = rows * cols;
      const half = n >>> 1;
      // Sums of at most 256 pixels keep each 16-bit lane below 65536 and the whole below 2^32.
      const r = (((rb & 0xffff) + half) / n) | 0;
      const b = (((rb >>> 16) + half) / n) | 0;
      const g = (((ga & 0xffff) + half) / n) | 0;
      const a = (((ga >>> 16) + half) / n) | 0;
      out[oi++] = (r | (g << 8) | (b << 16) | (a << 24)) >>> 0;
    }
  }
  return { width: dw, height: dh, data: new Uint8Array(out.buffer) };
}

export interface Taps {
  start: Int32Array; // first source index per output
  count: Int32Array; // taps per output
  weights: Int32Array; // count[i] weights per output, packed at i * maxTaps
  maxTaps: number;
}

/**
 * Triangle filter taps; the support widens with the downscale factor so every source pixel contributes.
 * Weights are integers in units of `one` (the caller's fixed-point scale).
 */
export function triangleTaps(srcSize: number, dstSize: number, one = ONE): Taps {
  const scale = srcSize / dstSize;
  const support = Math.max(1, scale);
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
    // Integer weights that sum exactly to ONE, so flat areas stay exactly flat and lanes cannot overflow.
    let total = 0;
    let biggest = 0;
    for (let t = 0; t < n; t++) {
      const w = sum > 0 ? Math.round((tmp[t]! / sum) * one) : t === 0 ? one : 0;
      weights[i * maxTaps + t] = w;
      total += w;
      if (w > weights[i * maxTaps + biggest]!) biggest = t;
    }
    weights[i * maxTaps + biggest] = weights[i * maxTaps + biggest]! + one - total;
    start[i] = lo;
    count[i] = n;
  }
  return { start, count, weights, maxTaps };
}

/** Packs two 16-bit lane sums (each value * 256, rounded) back into one RGBA pixel. */
function pack(rb: number, ga: number): number {
  // Both lane sums stay below 2^32, so the 32-bit bit operations below see them exactly.
  const r = ((rb & 0xffff) + 128) >>> WEIGHT_BITS;
  const b = ((rb >>> 16) + 128) >>> WEIGHT_BITS;
  const g = ((ga & 0xffff) + 128) >>> WEIGHT_BITS;
  const a = ((ga >>> 16) + 128) >>> WEIGHT_BITS;
  return (r | (g << 8) | (b << 16) | (a << 24)) >>> 0;
}

function resampleHorizontal(img: RgbaImage, dw: number): RgbaImage {
  const { width: sw, height: h } = img;
  const s = pixels32(img.data);
  const { start, count, weights, maxTaps } = triangleTaps(sw, dw);
  const out = new Uint32Array(dw * h);
  let oi = 0;
  for (let y = 0; y < h; y++) {
    const row = y * sw;
    for (let x = 0; x < dw; x++) {
      let rb = 0;
      let ga = 0;
      let si = row + start[x]!;
      const wi = x * maxTaps;
      for (let t = 0, n = count[x]!; t < n; t++) {
        const w = weights[wi + t]!;
        const p = s[si++]!;
        rb += (p & LANES) * w;
        ga += ((p >>> 8) & LANES) * w;
      }
      out[oi++] = pack(rb, ga);
    }
  }
  return { width: dw, height: h, data: new Uint8Array(out.buffer) };
}

function resampleVertical(img: RgbaImage, dh: number): RgbaImage {
  const { width: w, height: sh } = img;
  const s = pixels32(img.data);
  const { start, count, weights, maxTaps } = triangleTaps(sh, dh);
  const out = new Uint32Array(w * dh);
  const rbAcc = new Float64Array(w);
  const gaAcc = new Float64Array(w);
  for (let y = 0; y < dh; y++) {
    rbAcc.fill(0);
    gaAcc.fill(0);
    const wi = y * maxTaps;
    // Row at a time keeps memory access sequential; walking columns thrashes the cache on wide images.
    for (let t = 0, n = count[y]!; t < n; t++) {
      const wt = weights[wi + t]!;
      let si = (start[y]! + t) * w;
      for (let x = 0; x < w; x++) {
        const p = s[si++]!;
        rbAcc[x] = rbAcc[x]! + (p & LANES) * wt;
        gaAcc[x] = gaAcc[x]! + ((p >>> 8) & LANES) * wt;
      }
    }
    let oi = y * w;
    for (let x = 0; x < w; x++) out[oi++] = pack(rbAcc[x]!, gaAcc[x]!);
  }
  return { width: w, height: dh, data: new Uint8Array(out.buffer) };
}
