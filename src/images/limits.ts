/**
 * What a deployment lets decode: how many pixels any image may have (`maxPixels`), and how many may be
 * decoded whole (`wholeDecodePixels`). Our JPEG and PNG decoders shrink while they decode (JPEG at N/8
 * inside the IDCT, PNG box-filtered as it inflates), so their memory follows the size the work needs. A
 * whole decode holds every pixel: our WebP decoder (VP8 predicts each block from its decoded neighbours,
 * so it cannot decode smaller) about 6 bytes per pixel in memory the garbage collector gives back; photon,
 * for the rest, about 12 bytes per pixel at its peak in WebAssembly memory that never shrinks. So a small
 * file whose header says 40 MP would cost hundreds of MB decoded whole. Node's services set
 * NODE_DECODE_LIMITS (whole decodes up to 8 MP, below); in a Worker's 128 MB the edge services builder sets
 * both limits lower, and turns photon off (`photon`; src/edge-services.ts):
 * - any image with more pixels than `maxPixels` is refused from its header with 422 INVALID_IMAGE naming
 *   the limit and the image's size, before any decoding: our decoders' peaks (the inflate or entropy decode,
 *   the scaled result, the garbage they leave) grow with the image, and at 40 MP pass 128 MB;
 * - an image decoded whole (WebP, interlaced PNG, and what only photon decodes: a JPEG our decoder does not
 *   take) with more pixels than that is refused from its header with 422 INVALID_IMAGE naming the limit, before any
 *   decoding (`checkDecodeLimits`, called where a request's image is first sniffed); so is a progressive
 *   CMYK JPEG, whose four full-size components' coefficients our decoder holds until the last scan;
 * - a PNG with more pixels than that streams through our decoder even where photon would be faster;
 * - photon never gets an image above it, even as the fallback for data our decoders find corrupt (that is a
 *   422 then, `assertWholeDecodeAllowed`); with `photon` off it gets nothing, and a JPEG only it reads
 *   (subsampled by 3) is refused from its header.
 * And on every deployment an interlaced PNG with more pixels than INTERLACED_PNG_PIXELS (8 MP; the
 * whole-decode limit where that is lower) is refused from its header with 422 INVALID_IMAGE naming the
 * limit: it is decoded whole whichever decoder reads it.
 *
 * @example
 * const limits: DecodeLimits = { maxPixels: 12_500_000, wholeDecodePixels: 2_000_000, streamedPngPixels: 0, photon: false };
 * checkDecodeLimits(readImageHeader(webpBytes), limits); // 422 above 2 MP (any image above 12.5 MP)
 */
import { photon } from "#photon";
import { ApiError } from "../lib/errors";
import { MAX_IMAGE_PIXELS, type ImageHeader } from "./header";
import { samplingSupported } from "./jpeg-decode";

/** Node's threshold for PNGs through the streaming decoder (DecodeLimits.streamedPngPixels). */
export const STREAMED_PNG_PIXELS = 8_000_000;

/**
 * The most pixels an Adam7-interlaced PNG may have on any deployment (a lower `wholeDecodePixels` lowers it).
 * Such a PNG is decoded whole, whichever decoder reads it: its passes' rows are not whole rows, so nothing
 * can be shrunk before the last pass, and our decoder holds 4 bytes a pixel (createInterlacedSink). So it
 * gets the limit below which Node sends every PNG to photon anyway (STREAMED_PNG_PIXELS): an interlaced
 * PNG then costs no more than a non-interlaced one of its size, and where our decoder reads it (no photon)
 * it holds at most 32 MB, about what a 40 MP non-interlaced PNG costs as it streams. Above it, 422 naming
 * the limit and asking for a PNG saved without interlacing, which may have the full 40 MP.
 */
export const INTERLACED_PNG_PIXELS = STREAMED_PNG_PIXELS;

export interface DecodeLimits {
  /** The most pixels any image may have (Infinity: no limit beyond the 40 MP every image is held to). */
  maxPixels: number;
  /** The most pixels decoded whole, by photon or our WebP decoder (Infinity: no limit beyond the 40 MP every image has). */
  wholeDecodePixels: number;
  /**
   * PNGs above this many pixels go through our streaming decoder, smaller ones to photon
   * (`wholeDecodePixels` lowers it too; without photon, every PNG goes through ours). Ours never holds the whole image and its memory is the JS heap's
   * to give back; photon's Rust inflate is faster, but grows
   * a WebAssembly memory that never shrinks.
   */
  streamedPngPixels: number;
  /**
   * Whether photon may decode at all. Off on the edge: photon's WebAssembly memory grows with each decode
   * and never shrinks, so there a JPEG our decoder does not take (3:1 subsampling) is refused from its
   * header, and data our decoders find corrupt is a 422 without photon's second opinion.
   */
  photon: boolean;
}

/**
 * The decoders' own choice, for code given no deployment's limits (Replicate's outputs, whose pixel limits
 * are not an input's): every image up to the 40 MP `readImageHeader` holds them to, whole decodes of any
 * size, and PNGs up to 8 MP through photon (photon holds the whole image and more, so its memory grows with
 * the pixel count, while ours holds a shrunk result and a few rows). In a build without photon (workerd, `#photon`) photon is off, so code that uses the defaults
 * there never reaches for it.
 */
export const DEFAULT_DECODE_LIMITS: DecodeLimits = {
  maxPixels: Infinity,
  wholeDecodePixels: Infinity,
  streamedPngPixels: STREAMED_PNG_PIXELS,
  photon: photon !== null,
};

/**
 * Node's (functions/node/services.ts): the defaults, with images decoded whole held to 8 MP, the size up to
 * which Node sends every PNG to photon anyway (STREAMED_PNG_PIXELS; interlaced PNGs have the same limit).
 * An accepted WebP, progressive CMYK JPEG or 3:1-subsampled JPEG then costs no more than a PNG of its size
 * through photon, and a file of a few KB cannot ask for a 40 MP whole decode (hundreds of MB). Above
 * it, 422 from the header naming the limit; JPEGs and non-interlaced PNGs still stream up to 40 MP, and a
 * 3000x2000 WebP photo fits.
 */
export const NODE_DECODE_LIMITS: DecodeLimits = { ...DEFAULT_DECODE_LIMITS, wholeDecodePixels: STREAMED_PNG_PIXELS };

/** Whether every PNG stays off photon: photon is off, or the deployment sends every PNG through ours. */
export function pngsOffPhoton(limits: DecodeLimits): boolean {
  return !limits.photon || limits.streamedPngPixels === 0;
}

/**
 * Whether a PNG goes through our decoder (png-decode.ts): above the photon threshold, or any PNG when photon
 * is off. An interlaced one is decoded at full size there before any shrinking, so it is held to the
 * interlaced limit (above it, the caller's whole-decode guard refuses it: `assertWholeDecodeAllowed`).
 */
export function streamsPng(header: ImageHeader, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): boolean {
  if (header.format !== "png" || (header.interlaced && pixels(header) > interlacedPngPixels(limits))) return false;
  return pngsOffPhoton(limits) || pixels(header) > Math.min(limits.streamedPngPixels, limits.wholeDecodePixels);
}

/**
 * Whether this image costs a whole decode's memory whatever size the work needs: WebP and interlaced PNG
 * (our decoders, at full size), JPEGs subsampled by 3, which only photon decodes, and progressive CMYK or
 * YCCK JPEGs, whose coefficients for four full-size components our decoder holds until the last scan.
 */
export function decodedWhole(header: ImageHeader): boolean {
  if (header.format === "webp") return true;
  if (header.format === "png") return header.interlaced;
  return (header.components === 4 && header.progressive) || !samplingSupported(header.sampling);
}

/**
 * Refuses, from the header alone, an image with more pixels than the deployment accepts at all, one that
 * is decoded whole with more pixels than the deployment lets be decoded whole, or an interlaced PNG above
 * `interlacedPngPixels` (422 INVALID_IMAGE naming the limit, the image's size and what to send instead).
 *
 * @example
 * checkDecodeLimits(header, EDGE_DECODE_LIMITS); // a 3000x2000 WebP: 422
 */
export function checkDecodeLimits(header: ImageHeader, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): void {
  if (pixels(header) > limits.maxPixels) {
    throw new ApiError(
      "INVALID_IMAGE",
      `The image is ${header.width}x${header.height} (${megapixels(pixels(header))} million pixels); this server accepts images up to ${megapixels(limits.maxPixels)} million pixels. ` +
        "Scale it down to fit and send it again.",
    );
  }
  if (!limits.photon && header.format === "jpeg" && !samplingSupported(header.sampling)) {
    throw new ApiError(
      "INVALID_IMAGE",
      `The image is a JPEG with unusual chroma subsampling (${samplingName(header.sampling)}); this server does not decode those. ` +
        "Re-save it as a standard JPEG (4:2:0, 4:2:2 or 4:4:4 chroma subsampling) or a PNG.",
    );
  }
  if (decodedWhole(header) && pixels(header) > wholeDecodeLimit(header, limits)) throw wholeDecodeRefused(header, limits);
}

/** How many pixels an interlaced PNG may have under `limits`: INTERLACED_PNG_PIXELS, or the whole-decode limit if lower. */
export function interlacedPngPixels(limits: DecodeLimits = DEFAULT_DECODE_LIMITS): number {
  return Math.min(INTERLACED_PNG_PIXELS, limits.wholeDecodePixels);
}

/** How many pixels an image decoded whole may have under `limits`: an interlaced PNG's own limit, else the whole-decode limit. */
function wholeDecodeLimit(header: ImageHeader, limits: DecodeLimits): number {
  return header.format === "png" ? interlacedPngPixels(limits) : limits.wholeDecodePixels;
}

/** The 422 for an image decoded whole with more pixels than the deployment decodes whole: the limit, the image's size and what to send instead. */
function wholeDecodeRefused(header: ImageHeader, limits: DecodeLimits): ApiError {
  const size = `${header.width}x${header.height} (${megapixels(pixels(header))} million pixels)`;
  const limit = megapixels(wholeDecodeLimit(header, limits));
  const streamed = megapixels(Math.min(limits.maxPixels, MAX_IMAGE_PIXELS));
  if (header.format === "webp") {
    return new ApiError(
      "INVALID_IMAGE",
      `The image is a WebP of ${size}; WebP images are accepted up to ${limit} million pixels, since they are decoded whole. ` +
        `Send it as a JPEG or PNG (which may have up to ${streamed} million pixels), or make it smaller.`,
    );
  }
  if (header.format === "png") {
    return new ApiError(
      "INVALID_IMAGE",
      `The image is an interlaced PNG of ${size}; interlaced PNGs are accepted up to ${limit} million pixels, since they are decoded whole. ` +
        `Save it without interlacing (a PNG that is not interlaced may have up to ${streamed} million pixels), or make it smaller.`,
    );
  }
  return new ApiError(
    "INVALID_IMAGE",
    `The image is ${kindOf(header)} of ${size}; this server decodes such images only up to ${limit} million pixels. Send it as a standard JPEG (baseline, or progressive and not CMYK) or a non-interlaced PNG, ` +
      `which may have up to ${streamed} million pixels, or make it smaller.`,
  );
}

/**
 * The last guard before a whole decode (photon, or our WebP decoder): an image above the deployment's
 * whole-decode limit never reaches one, even as the fallback for data our shrinking decoders found corrupt.
 * What is decoded whole by its kind was refused by its header above; what remains is a JPEG or PNG our
 * decoders read and refused, so the 422 is the one for corrupt data that photon's refusal would have been.
 */
export function assertWholeDecodeAllowed(header: ImageHeader, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): void {
  checkDecodeLimits(header, limits);
  if (pixels(header) > limits.wholeDecodePixels) {
    throw new ApiError("INVALID_IMAGE", "The image data is corrupt or uses a feature we cannot decode; re-save it as a standard JPEG, PNG or WebP.");
  }
}

/** A JPEG decoded whole, by what makes it so. */
function kindOf(header: ImageHeader): string {
  return header.components === 4 && samplingSupported(header.sampling)
    ? "a progressive CMYK JPEG"
    : `a JPEG with unusual chroma subsampling (${samplingName(header.sampling)})`;
}

const pixels = (h: ImageHeader) => h.width * h.height;

/** Each component's sampling factors as H x V: "3x1, 1x1, 1x1". */
const samplingName = (sampling: number[]) => sampling.map((s) => `${s >> 4}x${s & 15}`).join(", ");

/** Millions of pixels with one decimal, without a trailing ".0": 12.5, 2, 40. */
const megapixels = (n: number) => (n / 1e6).toFixed(1).replace(/\.0$/, "");
