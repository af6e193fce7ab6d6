/**
 * The shared image pipeline: safe bytes in (URL through the SafeFetcher, or Base64), sniff + header limits,
 * decode (./codecs: our decoders; photon on Node for what they decline), normalise. Used by QR (logos, decoding), social (media, post images) and photo.
 *
 * @example
 * const bytes = await loadImageBytes(services.fetcher, { url });
 * const info = sniffImage(bytes);          // 413/422 before any decoding
 * const rgba = decode(bytes, { atMost: 2048 }); // upright RGBA
 * const post = await normaliseToJpeg(bytes);
 */
export {
  imageFormat,
  MAX_IMAGE_BYTES,
  MAX_IMAGE_PIXELS,
  mimeTypeOf,
  readImageHeader,
  sniffImage,
  type ImageFormat,
  type ImageHeader,
  type ImageInfo,
} from "./sniff";
export type { GrayImage, RgbaImage } from "./types";
export {
  decode,
  decodeLuma,
  encodeJpeg,
  encodePng,
  openPhoto,
  readHeader,
  type DecodeOptions,
  type DecodeSize,
  type JpegOptions,
  type PhotoSource,
} from "./codecs";
export { decodeImage, flattenAlpha } from "./codec";
export { decodePngAtMost } from "./png-decode";
export { DEFAULT_DECODE_LIMITS, type DecodeLimits } from "./limits";
export { resizeGray, resizeRgba } from "./resize";
export { drawOver, resizePremultiplied, unpremultiply } from "./alpha";
export { applyOrientation, uprightSize } from "./exif";
export { bytesFromBase64 } from "./base64";
export { loadImageBytes, type ImageInput } from "./load";
export { normaliseToJpeg, planSocialSize, SOCIAL_IMAGE, type NormalisedJpeg } from "./normalise";
export { fitInside } from "./geometry";
