/**
 * YCbCr planes: the JPEG -> JPEG fast path of normalisation. The decoder hands over its Y, Cb and Cr planes
 * (chroma still subsampled), each plane is resized and rotated on its own, and the encoder codes them
 * directly, so neither the YCbCr -> RGB conversion after decoding nor the RGB -> YCbCr conversion before
 * encoding happens, and the chroma work is done on a quarter of the pixels.
 */
import { resample, StreamedResample, type Samples } from "./resize";

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

/**
 * Resizes one plane to exactly `width` x `height` with the shared resampler (resize.ts), honouring its
 * stride; returns `src` itself when the size is unchanged. With `fromRow`, only the output rows from there on
 * are made (the same rows; those above are left as zeros, for another thread's part of the image).
 */
export function resizePlane(src: Plane, width: number, height: number, fromRow = 0): Plane {
  const samples = { width: src.width, height: src.height, stride: src.stride, channels: 1, data: src.data };
  let out: Samples;
  if (fromRow > 0) {
    const rows = StreamedResample.of(samples, width, height, fromRow);
    rows.advance(src.height, height);
    out = rows.out;
  } else {
    out = resample(samples, width, height);
  }
  return out.data === src.data ? src : { width: out.width, height: out.height, stride: out.stride, data: out.data };
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
  let base = 0,
    xStep = 1,
    yStep = ow;
  switch (orientation) {
    case 2:
      base = w - 1;
      xStep = -1;
      yStep = ow;
      break;
    case 3:
      base = (h - 1) * ow + w - 1;
      xStep = -1;
      yStep = -ow;
      break;
    case 4:
      base = (h - 1) * ow;
      xStep = 1;
      yStep = -ow;
      break;
    case 5:
      base = 0;
      xStep = ow;
      yStep = 1;
      break;
    case 6:
      base = h - 1;
      xStep = ow;
      yStep = -1;
      break;
    case 7:
      base = (w - 1) * ow + h - 1;
      xStep = -ow;
      yStep = -1;
      break;
    default:
      base = (w - 1) * ow;
      xStep = -ow;
      yStep = 1;
      break; // 8
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
