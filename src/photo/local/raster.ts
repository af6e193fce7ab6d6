/**
 * Small raster helpers for the local compositor, on typed arrays only: colours, a seeded PRNG, a
 * three-pass box blur (≈ gaussian) for one channel, and sampling.
 *
 * @example
 * const rnd = seeded("studio-plinth");
 * boxBlur3(mask, w, h, 6); // soft shadow on a small buffer
 */

export type Rgb = readonly [number, number, number];

/** 32-bit FNV-1a of a string: the seed of every template's procedural details. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * A deterministic PRNG (mulberry32) in [0, 1): the same template always draws the same scene.
 *
 * @example
 * const rnd = seeded("hol-diwali"); rnd(); // same value on every run
 */
export function seeded(seed: string | number): () => number {
  let a = typeof seed === "number" ? seed >>> 0 : hashString(seed);
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const clamp01 = (v: number) => (v < 0 ? 0 : v > 1 ? 1 : v);
export const smoothstep = (a: number, b: number, v: number) => {
  const t = clamp01((v - a) / (b - a));
  return t * t * (3 - 2 * t);
};
export const mix = (a: Rgb, b: Rgb, t: number): Rgb => [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t];
export const luma = (c: Rgb) => 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2];

/** "#rrggbb" to a colour. */
export function hex(text: string): Rgb {
  const n = parseInt(text.replace("#", ""), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/**
 * Blurs a single-channel float buffer in place with three box passes per axis (close to a gaussian of
 * sigma ≈ radius). Running sums, so the cost does not depend on the radius.
 */
export function boxBlur3(buf: Float32Array, width: number, height: number, radius: number): void {
  const r = Math.max(0, Math.round(radius / 1.7));
  if (r < 1) return;
  const line = new Float32Array(width);
  const out = new Float32Array(width);
  const acc = new Float32Array(width);
  const copy = new Float32Array(buf.length);
  const inv = 1 / (2 * r + 1);
  for (let pass = 0; pass < 3; pass++) {
    for (let y = 0; y < height; y++) {
      const o = y * width;
      for (let x = 0; x < width; x++) line[x] = buf[o + x]!;
      boxLine(line, out, width, r);
      for (let x = 0; x < width; x++) buf[o + x] = out[x]!;
    }
    // Vertical pass row by row with one running sum per column: sequential memory, not strided.
    copy.set(buf);
    acc.fill(0);
    for (let j = -r; j <= r; j++) {
      const o = Math.min(height - 1, Math.max(0, j)) * width;
      for (let x = 0; x < width; x++) acc[x] = acc[x]! + copy[o + x]!;
    }
    for (let y = 0; y < height; y++) {
      const o = y * width;
      const add = Math.min(height - 1, y + r + 1) * width;
      const sub = Math.max(0, y - r) * width;
      for (let x = 0; x < width; x++) {
        buf[o + x] = acc[x]! * inv;
        acc[x] = acc[x]! + copy[add + x]! - copy[sub + x]!;
      }
    }
  }
}

/** One box pass over `n` values with edge clamping. */
function boxLine(src: Float32Array, dst: Float32Array, n: number, r: number): void {
  const inv = 1 / (2 * r + 1);
  let acc = src[0]! * (r + 1);
  for (let i = 1; i <= r; i++) acc += src[Math.min(i, n - 1)]!;
  for (let i = 0; i < n; i++) {
    dst[i] = acc * inv;
    acc += src[Math.min(i + r + 1, n - 1)]! - src[Math.max(i - r, 0)]!;
  }
}

/** Bilinear sample of a float buffer at (x, y) in its own pixel coordinates (edges clamped). */
export function sampleBilinear(buf: Float32Array, width: number, height: number, x: number, y: number): number {
  const fx = x < 0 ? 0 : x > width - 1 ? width - 1 : x;
  const fy = y < 0 ? 0 : y > height - 1 ? height - 1 : y;
  const x0 = fx | 0;
  const y0 = fy | 0;
  const x1 = x0 + 1 < width ? x0 + 1 : x0;
  const y1 = y0 + 1 < height ? y0 + 1 : y0;
  const tx = fx - x0;
  const ty = fy - y0;
  const a = buf[y0 * width + x0]! + (buf[y0 * width + x1]! - buf[y0 * width + x0]!) * tx;
  const b = buf[y1 * width + x0]! + (buf[y1 * width + x1]! - buf[y1 * width + x0]!) * tx;
  return a + (b - a) * ty;
}

const BAYER = new Float32Array([0, 8, 2, 10, 12, 4, 14, 6, 3, 11, 1, 9, 15, 7, 13, 5].map((v) => (v + 0.5) / 16 - 0.5));

/**
 * An ordered (4 x 4 Bayer) dither in [-0.5, 0.5) per pixel, so smooth gradients do not band in 8 bits.
 * Ordered rather than random: the pattern repeats every 4 pixels, which deflate finds and compresses fast,
 * where random noise would cost both file size and encoding time.
 */
export function dither(x: number, y: number): number {
  return BAYER[((y & 3) << 2) | (x & 3)]!;
}
