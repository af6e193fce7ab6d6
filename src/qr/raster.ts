/**
 * Pixel work the QR area needs and nothing more: resampling RGBA (logos) and grayscale (decoder input),
 * and grayscale conversion with alpha composited over white (decoders ignore alpha; a transparent pixel
 * stored as black would otherwise read as a dark module, research/qr.md 6.6).
 *
 * @example
 * const small = resizeRgba(logo, 96, 96);
 * const gray = toGray(photo); // Uint8Array, one byte per pixel
 */

export interface RgbaImage {
  width: number;
  height: number;
  /** width * height * 4 bytes, non-premultiplied RGBA. */
  data: Uint8Array | Uint8ClampedArray;
}

export interface GrayImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/** Separable resampling of `channels` interleaved float channels. */
function resampleChannels(src: Float32Array, width: number, height: number, channels: number, outW: number, outH: number): Float32Array {
  const tmp = outW < width ? shrinkRows(src, width, height, channels, outW) : stretchRows(src, width, height, channels, outW);
  if (outH === height) return tmp;
  // The vertical pass is the horizontal one on the transposed problem: rows become "pixels" of outW*channels values.
  return outH < height ? shrinkRows(tmp, height, 1, outW * channels, outH) : stretchRows(tmp, height, 1, outW * channels, outH);
}

/**
 * Area average along a row of `width` pixels (each `channels` values, `count` rows): every source pixel is
 * visited once and split between the one or two output cells it overlaps, so the cost does not grow with
 * the reduction factor (a 12 MP photo shrinks in one pass).
 */
function shrinkRows(src: Float32Array, width: number, count: number, channels: number, outW: number): Float32Array {
  const out = new Float32Array(outW * count * channels);
  const scale = width / outW;
  const inv = 1 / scale;
  for (let row = 0; row < count; row++) {
    const srcRow = row * width * channels;
    const dstRow = row * outW * channels;
    let cell = 0;
    let boundary = scale;
    for (let x = 0; x < width; x++) {
      const s = srcRow + x * channels;
      if (x + 1 <= boundary || cell === outW - 1) {
        const d = dstRow + cell * channels;
        for (let c = 0; c < channels; c++) out[d + c]! += src[s + c]! * inv;
        if (x + 1 === boundary && cell < outW - 1) boundary = ++cell + 1 > outW ? width : (cell + 1) * scale;
      } else {
        const first = boundary - x;
        const d = dstRow + cell * channels;
        for (let c = 0; c < channels; c++) out[d + c]! += src[s + c]! * first * inv;
        cell++;
        boundary = (cell + 1) * scale;
        const d2 = d + channels;
        for (let c = 0; c < channels; c++) out[d2 + c]! += src[s + c]! * (1 - first) * inv;
      }
    }
  }
  return out;
}

/** Linear interpolation along a row (enlarging). */
function stretchRows(src: Float32Array, width: number, count: number, channels: number, outW: number): Float32Array {
  const out = new Float32Array(outW * count * channels);
  const scale = width / outW;
  for (let x = 0; x < outW; x++) {
    const center = Math.max(0, (x + 0.5) * scale - 0.5);
    const x0 = Math.min(width - 1, Math.floor(center));
    const x1 = Math.min(width - 1, x0 + 1);
    const t = center - x0;
    for (let row = 0; row < count; row++) {
      const a = (row * width + x0) * channels;
      const b = (row * width + x1) * channels;
      const d = (row * outW + x) * channels;
      for (let c = 0; c < channels; c++) out[d + c] = src[a + c]! * (1 - t) + src[b + c]! * t;
    }
  }
  return out;
}

/**
 * Resizes RGBA with premultiplied alpha, so transparent pixels do not bleed their (often black) colour
 * into the edges of a logo. Large reductions first go through an integer box filter (one cheap pass over
 * the source), then the exact size is reached with area averaging in floating point.
 *
 * @example
 * const thumb = resizeRgba(logo, 96, 96);
 */
export function resizeRgba(image: RgbaImage, width: number, height: number): RgbaImage {
  if (width === image.width && height === image.height) return image;
  const factor = Math.floor(Math.min(image.width / width, image.height / height));
  const source = factor >= 2 ? boxShrinkRgba(image, factor) : image;
  const n = source.width * source.height;
  const pre = new Float32Array(n * 4);
  const d = source.data;
  for (let i = 0, p = 0; i < n; i++, p += 4) {
    const a = d[p + 3]! / 255;
    pre[p] = d[p]! * a;
    pre[p + 1] = d[p + 1]! * a;
    pre[p + 2] = d[p + 2]! * a;
    pre[p + 3] = a;
  }
  const out = resampleChannels(pre, source.width, source.height, 4, width, height);
  const data = new Uint8Array(width * height * 4);
  for (let i = 0, p = 0; i < width * height; i++, p += 4) {
    const a = out[p + 3]!;
    if (a <= 0) continue;
    data[p] = clamp(out[p]! / a);
    data[p + 1] = clamp(out[p + 1]! / a);
    data[p + 2] = clamp(out[p + 2]! / a);
    data[p + 3] = clamp(a * 255);
  }
  return { width, height, data };
}

/** Premultiplied integer box filter: each output pixel is the mean of a factor x factor block. */
function boxShrinkRgba(image: RgbaImage, factor: number): RgbaImage {
  const width = Math.floor(image.width / factor);
  const height = Math.floor(image.height / factor);
  // Sums of 8-bit x 8-bit products over at most 2^12 x 2^12 pixels stay exact in doubles.
  const acc = new Float64Array(width * height * 4);
  const d = image.data;
  for (let y = 0; y < height * factor; y++) {
    const row = Math.floor(y / factor) * width;
    let p = y * image.width * 4;
    for (let x = 0; x < width * factor; x++, p += 4) {
      const o = (row + Math.floor(x / factor)) * 4;
      const a = d[p + 3]!;
      acc[o]! += d[p]! * a;
      acc[o + 1]! += d[p + 1]! * a;
      acc[o + 2]! += d[p + 2]! * a;
      acc[o + 3]! += a;
    }
  }
  const data = new Uint8Array(width * height * 4);
  const area = factor * factor;
  for (let i = 0, p = 0; i < width * height; i++, p += 4) {
    const a = acc[p + 3]!;
    if (a === 0) continue;
    data[p] = clamp(acc[p]! / a);
    data[p + 1] = clamp(acc[p + 1]! / a);
    data[p + 2] = clamp(acc[p + 2]! / a);
    data[p + 3] = clamp(a / area);
  }
  return { width, height, data };
}

/**
 * Luma (BT.601, what decoders use) with alpha composited over white, optionally shrunk by an integer box
 * `factor` in the same pass (a 12 MP photo becomes a decoder-sized gray image in one read of its pixels).
 *
 * @example
 * const gray = toGray(photo, 3); // 4000x3000 RGBA -> 1333x1000 gray
 */
export function toGray(image: RgbaImage, factor = 1): GrayImage {
  const k = Math.max(1, Math.floor(factor));
  const width = Math.max(1, Math.floor(image.width / k));
  const height = Math.max(1, Math.floor(image.height / k));
  const d = image.data;
  if (k === 1) {
    const out = new Uint8Array(width * height);
    for (let i = 0, p = 0; i < out.length; i++, p += 4) out[i] = luma(d, p);
    return { width, height, data: out };
  }
  const acc = new Uint32Array(width * height);
  for (let y = 0; y < height * k; y++) {
    const row = Math.floor(y / k) * width;
    let p = y * image.width * 4;
    for (let x = 0; x < width * k; x++, p += 4) acc[row + Math.floor(x / k)]! += luma(d, p);
  }
  const out = new Uint8Array(width * height);
  const area = k * k;
  for (let i = 0; i < out.length; i++) out[i] = Math.round(acc[i]! / area);
  return { width, height, data: out };
}

function luma(d: Uint8Array | Uint8ClampedArray, p: number): number {
  const a = d[p + 3]!;
  const y = (d[p]! * 77 + d[p + 1]! * 150 + d[p + 2]! * 29) >> 8;
  return a === 255 ? y : Math.round((y * a + 255 * (255 - a)) / 255);
}

/**
 * Area-average downscale (or linear upscale) of a grayscale image.
 *
 * @example
 * resizeGray(gray, 800, 600);
 */
export function resizeGray(image: GrayImage, width: number, height: number): GrayImage {
  if (width === image.width && height === image.height) return image;
  const src = Float32Array.from(image.data);
  const out = resampleChannels(src, image.width, image.height, 1, width, height);
  const data = new Uint8Array(width * height);
  for (let i = 0; i < data.length; i++) data[i] = clamp(out[i]!);
  return { width, height, data };
}

/**
 * Gray to opaque RGBA, the input shape both decoders take.
 *
 * @example
 * readWithZxing(grayToRgba(gray), options);
 */
export function grayToRgba(image: GrayImage): { width: number; height: number; data: Uint8ClampedArray } {
  const data = new Uint8ClampedArray(image.width * image.height * 4);
  for (let i = 0, p = 0; i < image.data.length; i++, p += 4) {
    const v = image.data[i]!;
    data[p] = v;
    data[p + 1] = v;
    data[p + 2] = v;
    data[p + 3] = 255;
  }
  return { width: image.width, height: image.height, data };
}

function clamp(v: number): number {
  return v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v);
}
