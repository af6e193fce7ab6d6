/**
 * The image codecs behind one interface: read a header, decode at the size the work needs, encode JPEG or
 * PNG. Code outside src/images imports decoding and encoding from here only, so it never knows which
 * decoder runs: our TypeScript decoders (JPEG, PNG, WebP) or photon (Node only, `#photon`) for what they
 * decline, chosen inside by format and the deployment's `DecodeLimits`. The layer check holds that rule.
 * The specialised fast paths (the JPEG-to-JPEG planes and their two-thread split, normalise.ts and
 * plane-pipe.ts) stay behind normalise.
 *
 * Decisions:
 * - Memory: the decoders are our own. A Worker isolate has 128 MB for its heap, ArrayBuffers and WebAssembly
 *   memories together; a WebAssembly memory grows to its high-water mark and never shrinks, so photon's
 *   whole-image decode would stay in every later request of a long-lived isolate. Our decoders live in
 *   memory the garbage collector gives back. The Worker's build has no photon at all.
 * - Scaled decoding: our decoders decode at the size the work needs, JPEG at N/8 scale in the DCT domain and
 *   PNG box-filtered while it streams, so a 40 MP PNG bomb never exists at full size. No maintained PNG
 *   decoder that runs on Workers decodes row by row.
 * - WebP in TypeScript, not libwebp in WebAssembly: the WebAssembly builds of libwebp on npm predate the fix
 *   for CVE-2023-4863 (a heap overflow in the lossless decoder), which we do not run on untrusted input; our
 *   decoder is bounds-checked JavaScript whose output equals libwebp's byte for byte.
 *
 * @example
 * const header = readHeader(bytes); // format, width, height, orientation, ... (422/413 before decoding)
 * const logo = decode(bytes, { atLeast: 640, limits }); // longer side >= 640 where it has that many pixels
 * const thumbnail = encodeJpeg(logo, 82);
 */
import { encodeJpeg as encodeJpegFlattened, encodePng as encodeRgbaPng, decodeImage } from "../codec";
import { encodeJpegBaseline } from "../jpeg-encode";
import { DEFAULT_DECODE_LIMITS, type DecodeLimits } from "../limits";
import { decodeAtLeast, decodeAtMost, decodeLumaNear, decodeNear, openPhoto as openScaled, type PhotoSource } from "../scaled";
import { readImageHeader, type ImageHeader } from "../sniff";
import type { LumaImage, RgbaImage } from "../types";

export { assemblePng, bitDepthFor, configurePngDeflate, encodePng as encodePngRows } from "../png";
export type { BitDepth, DeflateLevel, PaletteEntry, PngColor, PngInput, WholeDeflate } from "../png";
export type { DecodeLimits, ImageHeader, LumaImage, PhotoSource, RgbaImage };

/**
 * The image's header: format, stored width and height, EXIF orientation and what the decode limits look at
 * (JPEG components, sampling and progressive; PNG interlacing). Throws ApiError: 413 above 10 MB or 40 MP,
 * 422 for what is not a JPEG, PNG or still WebP.
 *
 * @example
 * readHeader(jpeg4000x3000).width; // 4000
 */
export function readHeader(bytes: Uint8Array): ImageHeader {
  return readImageHeader(bytes);
}

/**
 * The size a decode is for, as the image's longer side (upright): at least `atLeast` where the image has that
 * many pixels (for a caller that resizes to an exact size next), at most `atMost` (shrunk with alpha-weighted
 * colour), or near `near` without a resize pass (for a reader that reduces the image itself). None: full size.
 */
export type DecodeSize =
  | { atLeast?: undefined; atMost?: undefined; near?: undefined }
  | { atLeast: number; atMost?: undefined; near?: undefined }
  | { atMost: number; atLeast?: undefined; near?: undefined }
  | { near: number; atLeast?: undefined; atMost?: undefined };

export type DecodeOptions = DecodeSize & {
  /** The deployment's limits (Services.imageLimits): pixels, whole decodes, whether photon may decode. */
  limits?: DecodeLimits;
};

/**
 * Decodes to upright RGBA (EXIF orientation applied) at the size `options` asks for, as cheaply as the
 * format allows: a JPEG at the smallest N/8 scale that covers it, a large PNG box-filtered while it streams,
 * a WebP (and an interlaced PNG) whole; photon where our decoders decline and the limits let it. Bad input
 * throws ApiError INVALID_IMAGE (422) or PAYLOAD_TOO_LARGE (413), never a 500.
 *
 * @example
 * decode(jpeg4000x3000, { atMost: 1536 }); // 1536 x 1152
 * decode(png, { limits }); // full size
 */
export function decode(bytes: Uint8Array, options: DecodeOptions = {}): RgbaImage {
  const limits = options.limits ?? DEFAULT_DECODE_LIMITS;
  if (options.atLeast !== undefined) return decodeAtLeast(bytes, options.atLeast, limits);
  if (options.atMost !== undefined) return decodeAtMost(bytes, options.atMost, limits);
  if (options.near !== undefined) return decodeNear(bytes, options.near, limits);
  return decodeImage(bytes, limits);
}

/**
 * The upright luma (one byte a pixel) near `near`, as `decode(bytes, { near })` sizes it, where the format
 * gives luma without RGBA (a YCbCr JPEG, a lossy WebP without alpha); null otherwise, and for data the luma
 * decoders find corrupt: the caller then decodes RGBA, which gives the verdict.
 *
 * @example
 * decodeLuma(jpeg6000x4000, { near: 3200 })?.width; // 3750 (5/8 scale)
 */
export function decodeLuma(bytes: Uint8Array, options: { near: number; limits?: DecodeLimits }): LumaImage | null {
  return decodeLumaNear(bytes, options.near, options.limits ?? DEFAULT_DECODE_LIMITS);
}

/**
 * Opens an image for decoding at several sizes, each as cheaply as its format allows (`PhotoSource.at`).
 * Bad input throws on the first `at`, as `decode` would.
 *
 * @example
 * openPhoto(jpeg1200x1500).at(256).height; // 375: decoded at 2/8
 */
export function openPhoto(bytes: Uint8Array, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): PhotoSource {
  return openScaled(bytes, limits);
}

export interface JpegOptions {
  /**
   * What becomes of alpha: composited onto `background` (default, white), or ignored (the colour of each
   * pixel as stored, for an image known to be opaque or whose transparent pixels already hold their colour).
   */
  alpha?: "flatten" | "ignore";
  background?: [number, number, number];
}

/**
 * Encodes RGBA as a baseline 4:2:0 JPEG at `quality` (1..100, rounded).
 *
 * @example
 * const jpeg = encodeJpeg(rgba, 85);
 */
export function encodeJpeg(image: RgbaImage, quality = 85, options: JpegOptions = {}): Uint8Array {
  if (options.alpha === "ignore") return encodeJpegBaseline(image, quality);
  return encodeJpegFlattened(image, quality, options.background);
}

/**
 * Encodes RGBA as an 8-bit RGBA PNG (alpha kept). `encodePngRows` writes palette, RGB or RGBA PNGs from rows.
 *
 * @example
 * const png = encodePng({ width: 1, height: 1, data: new Uint8Array([255, 0, 0, 255]) });
 */
export function encodePng(image: RgbaImage): Uint8Array {
  return encodeRgbaPng(image);
}
