/**
 * What a deployment lets photon decode whole. Our own decoders shrink while they decode (JPEG at N/8 inside
 * the IDCT, PNG box-filtered as it inflates), so their memory follows the size the work needs; photon
 * decodes every pixel into WebAssembly memory that never shrinks, copies it twice more on the way out, and
 * costs about 12 bytes per pixel at its peak. That is fine on Node, and not in a Worker's 128 MB: there
 * the edge services builder sets `wholeDecodePixels` (src/edge-services.ts), and
 * - an image only photon decodes (WebP, interlaced PNG, a JPEG our decoder does not take) with more
 *   pixels than that is refused from its header with 422 INVALID_IMAGE naming the limit, before any
 *   decoding (`checkDecodeLimits`, called where a request's image is first sniffed);
 * - a PNG with more pixels than that streams through our decoder even where photon would be faster;
 * - photon never gets an image above it, even as the fallback for data our decoders find corrupt (that is a
 *   422 then, `assertWholeDecodeAllowed`).
 *
 * @example
 * const limits: DecodeLimits = { wholeDecodePixels: 2_000_000 };
 * checkDecodeLimits(readImageHeader(webpBytes), limits); // 422 above 2 MP
 */
import { ApiError } from "../http/errors";
import { samplingSupported } from "./jpeg-decode";
import type { ImageHeader } from "./sniff";

export interface DecodeLimits {
  /** The most pixels photon may decode whole (Infinity: no limit beyond the 40 MP every image has). */
  wholeDecodePixels: number;
}

/** Node's: photon decodes whatever only it can decode, up to the 40 MP every image is held to. */
export const DEFAULT_DECODE_LIMITS: DecodeLimits = { wholeDecodePixels: Infinity };

/**
 * PNGs above this many pixels are decoded by our streaming decoder, smaller ones by photon: ours never
 * holds the whole image (a 40 MP PNG costs 40 MB instead of photon's 600 MB), photon's Rust inflate is
 * about twice as fast (2.2 MB PNG: 38 ms against 91 ms). `wholeDecodePixels` lowers it.
 */
export const STREAMED_PNG_PIXELS = 8_000_000;

/** Whether a PNG goes through the streaming decoder: non-interlaced and above the photon threshold. */
export function streamsPng(header: ImageHeader, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): boolean {
  return header.format === "png" && !header.interlaced && pixels(header) > Math.min(STREAMED_PNG_PIXELS, limits.wholeDecodePixels);
}

/**
 * Whether only photon decodes this image (so it is decoded whole): WebP, interlaced PNG, and JPEGs our
 * decoder leaves to photon (CMYK/YCCK, sampling factors other than 1 or 2 per axis).
 */
export function onlyPhotonDecodes(header: ImageHeader): boolean {
  if (header.format === "webp") return true;
  if (header.format === "png") return header.interlaced;
  return header.components === 4 || !samplingSupported(header.sampling);
}

/**
 * Refuses, from the header alone, an image that only photon decodes and that has more pixels than the
 * deployment lets photon decode (422 INVALID_IMAGE naming the limit and what to send instead).
 *
 * @example
 * checkDecodeLimits(header, { wholeDecodePixels: 2_000_000 }); // a 3000x2000 WebP: 422
 */
export function checkDecodeLimits(header: ImageHeader, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): void {
  if (!onlyPhotonDecodes(header) || pixels(header) <= limits.wholeDecodePixels) return;
  const max = (limits.wholeDecodePixels / 1e6).toFixed(1).replace(/\.0$/, "");
  throw new ApiError(
    "INVALID_IMAGE",
    `The image is ${kindOf(header)} of ${header.width}x${header.height} (${(pixels(header) / 1e6).toFixed(1)} million pixels); ` +
      `this server decodes such images only up to ${max} million pixels. Send it as a baseline or progressive JPEG (YCbCr) or a non-interlaced PNG, which may have up to 40 million pixels, or make it smaller.`,
  );
}

/**
 * The last guard before photon: an image above the deployment's whole-decode limit never reaches it, even as
 * the fallback for data our own decoders found corrupt (422, as the corruption would have been).
 */
export function assertWholeDecodeAllowed(header: ImageHeader, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): void {
  checkDecodeLimits(header, limits);
  if (pixels(header) > limits.wholeDecodePixels) {
    throw new ApiError(
      "INVALID_IMAGE",
      `The image data is corrupt, or the image needs a whole decode, which this server does only up to ${(limits.wholeDecodePixels / 1e6).toFixed(1).replace(/\.0$/, "")} million pixels; re-save it as a standard JPEG or PNG, or make it smaller.`,
    );
  }
}

function kindOf(header: ImageHeader): string {
  if (header.format === "webp") return "a WebP";
  if (header.format === "png") return "an interlaced PNG";
  return header.components === 4 ? "a CMYK JPEG" : "a JPEG with unusual chroma subsampling";
}

const pixels = (h: ImageHeader) => h.width * h.height;
