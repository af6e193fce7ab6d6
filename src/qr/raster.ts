/**
 * Pixel work only the QR area needs: grayscale conversion with alpha composited over white (decoders ignore
 * alpha; a transparent pixel stored as black would otherwise read as a dark module) and
 * back to the RGBA the decoders take. Resizing is the shared resampler's (src/images/resize.ts).
 *
 * @example
 * const gray = toGray(photo); // Uint8Array, one byte per pixel
 */
import type { GrayImage, LumaImage, RgbaImage } from "../images/types";

/**
 * Luma (BT.601, what decoders use) with alpha composited over white, optionally shrunk by an integer box
 * `factor` in the same pass (a 12 MP photo becomes a decoder-sized gray image in one read of its pixels).
 * A LumaImage is brightness already: only shrunk (and given as it is at factor 1).
 *
 * @example
 * const gray = toGray(photo, 3); // 4000x3000 RGBA -> 1333x1000 gray
 */
export function toGray(image: RgbaImage | LumaImage, factor = 1): GrayImage {
  const k = Math.max(1, Math.floor(factor));
  const width = Math.max(1, Math.floor(image.width / k));
  const height = Math.max(1, Math.floor(image.height / k));
  const d = image.data;
  const bright = "kind" in image;
  if (k === 1) {
    if (bright) return { width, height, data: d };
    const out = new Uint8Array(width * height);
    for (let i = 0, p = 0; i < out.length; i++, p += 4) out[i] = luma(d, p);
    return { width, height, data: out };
  }
  const acc = new Uint32Array(width * height);
  for (let y = 0; y < height * k; y++) {
    const row = Math.floor(y / k) * width;
    if (bright) {
      const p = y * image.width;
      for (let x = 0; x < width * k; x++) acc[row + Math.floor(x / k)]! += d[p + x]!;
      continue;
    }
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
