/**
 * Decoding an image at the size the work needs, not the size it was shot at (a product photo for a scene,
 * a QR code to read): JPEGs go
 * through the shared TypeScript decoder's shrink-on-load (any N/8 scale inside the IDCT), so a 12 MP photo
 * never exists at full size in memory; everything else, and any JPEG that decoder leaves alone, through
 * decodeImage. Alpha-weighted shrinking to the limit follows either way.
 *
 * @example
 * const photo = decodeAtMost(request.product.bytes, 2048); // longer side <= 2048
 * const source = openPhoto(request.product.bytes); // or: decode as often as needed, each time at a size
 * const probe = source.at(256); // a JPEG decoded at 1/8 or 2/8 scale, a PNG decoded once and shrunk
 */
import { resizePremultiplied, unpremultiply } from "./alpha";
import { decodeImage, decodeWhole } from "./codec";
import { applyOrientation, applyOrientationGray } from "./exif";
import { readImageHeader, type ImageHeader } from "./sniff";
import type { GrayImage, LumaImage, RgbaImage } from "./types";
import { checkComplete } from "./integrity";
import { decodeJpegGray, decodeJpegScaled } from "./jpeg-decode";
import { decodePngAtLeast, decodePngAtMost } from "./png-decode";
import { assertWholeDecodeAllowed, DEFAULT_DECODE_LIMITS, streamsPng, type DecodeLimits } from "./limits";
import { decodeWebpLuma } from "./webp-decode";

export { STREAMED_PNG_PIXELS, streamsPng } from "./limits";

/**
 * Decodes `bytes` (upright, EXIF orientation applied) with its longer side at most `limit`. Bad input
 * throws decodeImage's ApiError (INVALID_IMAGE, PAYLOAD_TOO_LARGE). `limits` bounds what is decoded whole
 * and whether photon may decode (see limits.ts).
 *
 * @example
 * decodeAtMost(jpeg4000x3000, 1536); // 1536 x 1152
 */
export function decodeAtMost(bytes: Uint8Array, limit: number, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): RgbaImage {
  const header = readImageHeader(bytes);
  return decodeScaled(bytes, header, limit, limit, limits) || shrinkTo(decodeRest(bytes, header, limits), limit);
}

/**
 * Decodes `bytes` (upright) with its longer side at least `atLeast` where the image has that many pixels,
 * as cheaply as the format allows and without shrinking further: a JPEG at N/8 scale (at most 8/7 of it), a
 * PNG split into blocks (about that size when it is at least twice as large, else whole), or whole
 * (decodeImage: a WebP, or what only photon reads). For a caller that resizes to an exact size
 * next, which then takes one resize instead of two (in a Worker, each is two full-size buffers of garbage).
 *
 * @example
 * prepareLogo(decodeAtLeast(logoPng, 1640), canvas, 0.15);
 */
export function decodeAtLeast(bytes: Uint8Array, atLeast: number, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): RgbaImage {
  const header = readImageHeader(bytes);
  return decodeScaled(bytes, header, atLeast, Infinity, limits) || decodeRest(bytes, header, limits);
}

/**
 * The image with its longer side at least `atLeast` (when it has that many pixels), decoded small where
 * the format allows (decodeStoredAtLeast); upright, shrunk to `limit` if above it. Null where it is
 * decoded whole (decodeImage: a WebP, or photon's verdict). A truncated file is refused here, as decodeImage would.
 */
function decodeScaled(bytes: Uint8Array, header: ImageHeader, atLeast: number, limit: number, limits: DecodeLimits): RgbaImage | null {
  checkComplete(bytes, header);
  const min = storedAtLeast(header, atLeast);
  const scaled = decodeStoredAtLeast(bytes, header, min.width, min.height, limits);
  return scaled && applyOrientation(shrinkTo(scaled, limit), header.orientation);
}

/** The stored size, scaled so its longer side is `side` (never above the stored size), rounded up. */
function storedAtLeast(header: ImageHeader, side: number): { width: number; height: number } {
  const k = Math.min(1, side / Math.max(header.width, header.height));
  return { width: Math.ceil(header.width * k), height: Math.ceil(header.height * k) };
}

/**
 * The image in its stored orientation at least `minWidth` x `minHeight`, decoded small where the format
 * allows: a JPEG at the smallest N/8 scale that reaches it, a large PNG box-filtered while it is inflated
 * (to the size asked for, give or take a pixel, when it is at least twice that; else whole, so never below
 * it; an interlaced one is decoded whole first). Null for other formats and for what our decoders do not
 * take (some JPEG variants, PNGs small enough for photon on Node, and data they find corrupt: photon is
 * more lenient with some damage, so the verdict stays its own).
 *
 * @example
 * decodeStoredAtLeast(jpeg4000x3000, header, 1440, 1080); // 1500 x 1125 (3/8 scale)
 */
export function decodeStoredAtLeast(
  bytes: Uint8Array,
  header: ImageHeader,
  minWidth: number,
  minHeight: number,
  limits: DecodeLimits = DEFAULT_DECODE_LIMITS,
): RgbaImage | null {
  try {
    if (header.format === "jpeg") {
      const scaled = decodeJpegScaled(bytes, minWidth, minHeight);
      return scaled && { width: scaled.width, height: scaled.height, data: scaled.data };
    }
    if (streamsPng(header, limits)) return decodePngAtLeast(bytes, Math.max(1, minWidth), Math.max(1, minHeight));
  } catch {
    // corrupt by our decoder's reading: the caller's decodeWhole gives the verdict (photon's, where the deployment lets it)
  }
  return null;
}

/** Shrinks an image so its longer side is at most `limit`, keeping alpha-weighted colour. */
export function shrinkTo(img: RgbaImage, limit: number): RgbaImage {
  const side = Math.max(img.width, img.height);
  if (side <= limit) return img;
  const k = limit / side;
  const w = Math.max(1, Math.round(img.width * k));
  const h = Math.max(1, Math.round(img.height * k));
  return unpremultiply(resizePremultiplied(img, w, h));
}

/** A photo that can be had at several sizes, each as cheaply as its format allows. */
export interface PhotoSource {
  /** The longer side of the photo as stored. */
  side: number;
  /**
   * The upright photo with its longer side at least `side` when the photo has that many pixels (a JPEG
   * comes at the smallest N/8 scale that reaches it, up to 8/7 of it; a PNG box-filtered, or a format
   * decoded whole, up to twice it), and never above `limit`.
   */
  at(side: number, limit?: number): RgbaImage;
}

/**
 * Opens `bytes` for decoding at the sizes the caller finds it needs: a JPEG or PNG is decoded again at each
 * size (a JPEG at N/8 scale, a PNG box-filtered as it streams, so a small size is cheap), any other format
 * once, then shrunk. Bad input throws
 * decodeImage's ApiError (INVALID_IMAGE, PAYLOAD_TOO_LARGE) on the first `at`.
 *
 * @example
 * const source = openPhoto(bytes); // a 1200 x 1500 JPEG
 * source.at(256).height; // 375: decoded at 2/8
 */
export function openPhoto(bytes: Uint8Array, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): PhotoSource {
  const header = readImageHeader(bytes);
  const side = Math.max(header.width, header.height);
  let whole: RgbaImage | null = null;
  return {
    side,
    at(want, limit = Infinity) {
      const target = Math.min(side, Math.ceil(want), limit);
      const scaled = whole ? null : decodeScaled(bytes, header, target, limit, limits);
      if (scaled) return scaled;
      whole ??= decodeRest(bytes, header, limits);
      // Like the PNG box filter, up to twice the size asked for is given as it is: no resize of a copy.
      return side <= limit && side <= 2 * target ? whole : shrinkTo(whole, target);
    },
  };
}

/**
 * The upright image with its longer side near `side`, as cheaply as the format allows and without a resize
 * pass: a JPEG at the smallest N/8 scale that reaches `side` (at most 8/7 of it), a large PNG box-filtered while
 * it streams to at most `side` (at least half of it), anything else whole. For readers that reduce the
 * image themselves (the QR reader), so a 40 MP PNG never exists at full size.
 *
 * @example
 * decodeNear(jpeg6000x4000, 3200).width; // 3750 (5/8 scale)
 * decodeNear(png6300x6300, 3200).width; // 3150 (every 2 x 2 block averaged)
 */
export function decodeNear(bytes: Uint8Array, side: number, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): RgbaImage {
  const header = readImageHeader(bytes);
  if (!streamsPng(header, limits)) return decodeScaled(bytes, header, side, Infinity, limits) || decodeRest(bytes, header, limits);
  checkComplete(bytes, header);
  let png: RgbaImage | null = null;
  try {
    png = decodePngAtMost(bytes, side);
  } catch {
    // corrupt by our reading: decodeRest gives the verdict (within the limits)
  }
  return png ?? decodeRest(bytes, header, limits);
}

/**
 * The image whole, once the shrinking decoders have had their turn and given nothing: decodeImage, except
 * for a JPEG or a PNG our decoder streams, which they have already read (a JPEG variant they do not take,
 * or data they find corrupt). decodeImage would read those again at full size with the same decoder, a
 * whole decode's memory (4 bytes a pixel, for a file of any size) for the same verdict, so they go straight
 * to decodeWhole: photon's verdict where the deployment lets it decode the image whole, else 422.
 */
function decodeRest(bytes: Uint8Array, header: ImageHeader, limits: DecodeLimits): RgbaImage {
  if (header.format !== "jpeg" && !streamsPng(header, limits)) return decodeImage(bytes, limits);
  return applyOrientation(decodeWhole(bytes, header, limits), header.orientation);
}

/**
 * The upright luma of a JPEG near `side`, as `decodeNear` sizes it, or of a lossy WebP at full size, for a
 * reader that needs only brightness: no RGBA is made and a YCbCr JPEG's chroma is never stored
 * (`decodeJpegGray`); a WebP's chroma is decoded but never upsampled. A WebP above the deployment's
 * whole-decode limit is a 422. Null for a PNG, a lossless WebP or one with alpha, and for a JPEG that decoder
 * does not take (RGB-stored, unusual sampling) or an image either finds corrupt: the caller then uses
 * `decodeNear`, which gives the verdict.
 *
 * @example
 * decodeLumaNear(jpeg6000x4000, 3200)?.width; // 3750 (5/8 scale), one byte per pixel
 */
export function decodeLumaNear(bytes: Uint8Array, side: number, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): LumaImage | null {
  const header = readImageHeader(bytes);
  if (header.format === "webp") return webpLuma(bytes, header, limits);
  if (header.format !== "jpeg") return null;
  checkComplete(bytes, header);
  const min = storedAtLeast(header, side);
  let luma: GrayImage | null = null;
  try {
    luma = decodeJpegGray(bytes, min.width, min.height);
  } catch {
    // corrupt by our decoder's reading: decodeNear gives the verdict
  }
  return luma && { ...applyOrientationGray({ width: luma.width, height: luma.height, data: luma.data }, header.orientation), kind: "luma" };
}

/** A lossy WebP's luma plane at full size (VP8 cannot decode smaller); null for lossless or alpha files. */
function webpLuma(bytes: Uint8Array, header: ImageHeader, limits: DecodeLimits): LumaImage | null {
  checkComplete(bytes, header);
  assertWholeDecodeAllowed(header, limits);
  try {
    return decodeWebpLuma(bytes);
  } catch {
    return null; // corrupt: decodeNear gives the verdict
  }
}
