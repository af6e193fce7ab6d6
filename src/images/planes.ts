/**
 * YCbCr planes: the JPEG -> JPEG fast path of normalisation. The decoder hands over its Y, Cb and Cr planes
 * (chroma still subsampled), each plane is resized and rotated on its own, and the encoder codes them
 * directly, so neither the YCbCr -> RGB conversion after decoding nor the RGB -> YCbCr conversion before
 * encoding happens, and the chroma work is done on a quarter of the pixels.
 */
import { triangleTaps, type Taps as BaseTaps } from "./resize";

/** One 8-bit channel: `width` x `height` samples, row `y` starting at `y * stride`. */
export interface Plane {
  width: number;
  height: number;
  stride: number;
  data: Uint8Array | Uint8ClampedArray;
}

/** A YCbCr (JFIF) image: Y at full size; Cb and Cr at any size, stretched over the whole image. */
export interface YCbCrImage {
  width: number;
  height: number;
  y: Plane;
  cb: Plane;
  cr: Plane;
}

const BITS = 14;
const ONE = 1 << BITS;
const HALF = 1 << (BITS - 1);

/**
 * Resizes one plane to exactly `width` x `height` with the same filters as `resizeRgba` (k x k block average
 * for the integer part of a downscale, then a triangle kernel; bilinear for upscales), in 14-bit fixed point.
 */
export function resizePlane(src: Plane, width: number, height: number): Plane {
  if (width === src.width && height === src.height) return src;
  const kx = Math.min(16, Math.max(1, Math.floor(src.width / width)));
  const ky = Math.min(16, Math.max(1, Math.floor(src.height / height)));
  let p = kx > 1 || ky > 1 ? boxShrinkPlane(src, kx, ky) : src;
  if (p.width !== width) p = resampleRows(p, width);
  if (p.height !== height) p = resampleColumns(p, height);
  return p;
}

function boxShrinkPlane(src: Plane, kx: number, ky: number): Plane {
  const { width: sw, height: sh, stride, data: s } = src;
  const dw = Math.ceil(sw / kx);
  const dh = Math.ceil(sh / ky);
  const out = new Uint8Array(dw * dh);
  let oi = 0;
  for (let dy = 0; dy < dh; dy++) {
    const y0 = dy * ky;
    const rows = Math.min(sh, y0 + ky) - y0;
    for (let dx = 0; dx < dw; dx++) {
      const x0 = dx * kx;
      const cols = Math.min(sw, x0 + kx) - x0;
      let sum = 0;
      for (let j = 0; j < rows; j++) {
        let si = (y0 + j) * stride + x0;
        for (let i = 0; i < cols; i++) sum += s[si++]!;
      }
      const n = rows * cols;
      out[oi++] = ((sum + (n >>> 1)) / n) | 0;
    }
  }
  return { width: dw, height: dh, stride: dw, data: out };
}

interface Taps extends BaseTaps {
  /** When > 0, every output has exactly this many taps (zero weights padded in, all inside the source). */
  fixed: number;
}

/** The RGBA resampler's triangle taps at this file's precision, padded to one count for the unrolled loops. */
function taps(srcSize: number, dstSize: number): Taps {
  const t = triangleTaps(srcSize, dstSize, ONE);
  return { ...t, fixed: padTaps(srcSize, t.start, t.count, t.weights, t.maxTaps) };
}

/**
 * Gives every output the same number of taps (the most any has), padding with zero weights and moving the
 * window back inside the source at the far edge, so the resamplers can run unrolled 2-, 3- and 4-tap loops.
 * Returns that count, or 0 when the source is too small for it.
 */
function padTaps(srcSize: number, start: Int32Array, count: Int32Array, weights: Int32Array, maxTaps: number): number {
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

function resampleRows(src: Plane, dw: number): Plane {
  const { height: h, stride, data: s } = src;
  const { start, count, weights, maxTaps, fixed } = taps(src.width, dw);
  // Weights are non-negative and sum to ONE, so every result is already 0..255: no clamping store needed.
  const out = new Uint8Array(dw * h);
  if (fixed === 3) {
    const w0 = new Int32Array(dw), w1 = new Int32Array(dw), w2 = new Int32Array(dw);
    for (let x = 0; x < dw; x++) {
      w0[x] = weights[x * maxTaps]!; w1[x] = weights[x * maxTaps + 1]!; w2[x] = weights[x * maxTaps + 2]!;
    }
    // Two rows per pass share each output's tap loads.
    let y = 0;
    for (; y + 1 < h; y += 2) {
      const row = y * stride;
      const oi = y * dw;
      for (let x = 0; x < dw; x++) {
        const si = row + start[x]!;
        const a = w0[x]!, b = w1[x]!, c = w2[x]!;
        out[oi + x] = (HALF + s[si]! * a + s[si + 1]! * b + s[si + 2]! * c) >> BITS;
        const sj = si + stride;
        out[oi + dw + x] = (HALF + s[sj]! * a + s[sj + 1]! * b + s[sj + 2]! * c) >> BITS;
      }
    }
    for (; y < h; y++) {
      const row = y * stride;
      const oi = y * dw;
      for (let x = 0; x < dw; x++) {
        const si = row + start[x]!;
        out[oi + x] = (HALF + s[si]! * w0[x]! + s[si + 1]! * w1[x]! + s[si + 2]! * w2[x]!) >> BITS;
      }
    }
    return { width: dw, height: h, stride: dw, data: out };
  }
  for (let y = 0; y < h; y++) {
    const row = y * stride;
    let oi = y * dw;
    for (let x = 0; x < dw; x++) {
      let acc = HALF;
      let si = row + start[x]!;
      const wi = x * maxTaps;
      for (let t = 0, n = count[x]!; t < n; t++) acc += s[si++]! * weights[wi + t]!;
      out[oi++] = acc >> BITS;
    }
  }
  return { width: dw, height: h, stride: dw, data: out };
}

function resampleColumns(src: Plane, dh: number): Plane {
  const { width: w, stride, data: s } = src;
  const { start, count, weights, maxTaps, fixed } = taps(src.height, dh);
  const out = new Uint8Array(w * dh);
  if (fixed === 3 || fixed === 2) {
    for (let y = 0; y < dh; y++) {
      const wi = y * maxTaps;
      const w0 = weights[wi]!, w1 = weights[wi + 1]!, w2 = fixed === 3 ? weights[wi + 2]! : 0;
      const s0 = start[y]! * stride;
      const s1 = s0 + stride;
      // With two taps the third row is read at zero weight; it exists unless the source has only two rows.
      const s2 = fixed === 3 ? s1 + stride : s1;
      const oi = y * w;
      for (let x = 0; x < w; x++) out[oi + x] = (HALF + s[s0 + x]! * w0 + s[s1 + x]! * w1 + s[s2 + x]! * w2) >> BITS;
    }
    return { width: w, height: dh, stride: w, data: out };
  }
  const acc = new Int32Array(w);
  for (let y = 0; y < dh; y++) {
    acc.fill(HALF);
    const wi = y * maxTaps;
    // Row at a time keeps memory access sequential.
    for (let t = 0, n = count[y]!; t < n; t++) {
      const wt = weights[wi + t]!;
      let si = (start[y]! + t) * stride;
      for (let x = 0; x < w; x++) acc[x] = acc[x]! + s[si++]! * wt;
    }
    const oi = y * w;
    for (let x = 0; x < w; x++) out[oi + x] = acc[x]! >> BITS;
  }
  return { width: w, height: dh, stride: w, data: out };
}

/** The plane of an upright image for an EXIF orientation (2..8), as `applyOrientation` does for RGBA. */
export function orientPlane(src: Plane, orientation: number): Plane {
  if (orientation <= 1 || orientation > 8) return src;
  const { width: w, height: h, stride, data: s } = src;
  const swap = orientation >= 5;
  const ow = swap ? h : w;
  const oh = swap ? w : h;
  const out = new Uint8Array(ow * oh);
  // Destination index of stored (x, y) = base + x * dxStep + y * dyStep.
  let base = 0, xStep = 1, yStep = ow;
  switch (orientation) {
    case 2: base = w - 1; xStep = -1; yStep = ow; break;
    case 3: base = (h - 1) * ow + w - 1; xStep = -1; yStep = -ow; break;
    case 4: base = (h - 1) * ow; xStep = 1; yStep = -ow; break;
    case 5: base = 0; xStep = ow; yStep = 1; break;
    case 6: base = h - 1; xStep = ow; yStep = -1; break;
    case 7: base = (w - 1) * ow + h - 1; xStep = -ow; yStep = -1; break;
    default: base = (w - 1) * ow; xStep = -ow; yStep = 1; break; // 8
  }
  for (let y = 0; y < h; y++) {
    let si = y * stride;
    let di = base + y * yStep;
    for (let x = 0; x < w; x++) {
      out[di] = s[si++]!;
      di += xStep;
    }
  }
  return { width: ow, height: oh, stride: ow, data: out };
}
