/**
 * Decoding a product or reference photo at the size the scene needs, not the size it was shot at: JPEGs go
 * through the shared TypeScript decoder's shrink-on-load (any N/8 scale inside the IDCT), so a 12 MP photo
 * never exists at full size in memory; everything else, and any JPEG that decoder leaves alone, through
 * decodeImage. Alpha-weighted shrinking to the limit follows either way.
 *
 * @example
 * const photo = decodeAtMost(request.product.bytes, 2048); // longer side <= 2048
 */
import { applyOrientation, decodeImage, readImageHeader, resizePremultiplied, unpremultiply, type RgbaImage } from "../../images";
import { checkComplete } from "../../images/integrity";
import { decodeJpegScaled } from "../../images/jpeg-decode";

/**
 * Decodes `bytes` (upright, EXIF orientation applied) with its longer side at most `limit`. Bad input
 * throws decodeImage's ApiError (INVALID_IMAGE, PAYLOAD_TOO_LARGE).
 *
 * @example
 * decodeAtMost(jpeg4000x3000, 1536); // 1536 x 1152
 */
export function decodeAtMost(bytes: Uint8Array, limit: number): RgbaImage {
  const header = readImageHeader(bytes);
  if (header.format === "jpeg") {
    checkComplete(bytes, header);
    const k = Math.min(1, limit / Math.max(header.width, header.height));
    let scaled: RgbaImage | null = null;
    try {
      scaled = decodeJpegScaled(bytes, Math.ceil(header.width * k), Math.ceil(header.height * k));
    } catch {
      scaled = null; // corrupt by the TypeScript decoder's reading: photon gives the verdict below
    }
    if (scaled) return applyOrientation(shrinkTo(scaled, limit), header.orientation);
  }
  return shrinkTo(decodeImage(bytes), limit);
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
