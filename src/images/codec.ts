/**
 * Decoding a whole image (decodeImage, decodeWhole): our TypeScript decoders first (JPEG, PNG, WebP), and
 * @cf-wasm/photon (Rust `image` compiled to WASM) for what they decline, where the deployment lets photon
 * decode; and photon's encoders.
 *
 * The bare specifier resolves per runtime through the package's export conditions: `node` (tsx, vitest, the
 * Node server) loads the WASM from an inlined copy, `workerd` (wrangler's bundle) imports the .wasm module.
 * Every PhotonImage lives in WASM memory and must be freed; the helpers here never hand one out.
 */
import { PhotonImage } from "@cf-wasm/photon";
import { ApiError } from "../http/errors";
import { applyOrientation } from "./exif";
import { checkComplete } from "./integrity";
import { assertWholeDecodeAllowed, DEFAULT_DECODE_LIMITS, streamsPng, type DecodeLimits } from "./limits";
import { decodeJpegScaled } from "./jpeg-decode";
import { decodePngAtMost } from "./png-decode";
import { readImageHeader, type ImageHeader } from "./sniff";
import type { RgbaImage } from "./types";
import { decodeWebp } from "./webp-decode";

/**
 * Sniffs, checks limits and decodes to RGBA with the EXIF orientation applied (JPEG). Corrupt or unsupported
 * data throws ApiError INVALID_IMAGE (422); over 10 MB throws PAYLOAD_TOO_LARGE (413). Never a 500 for input.
 * A JPEG goes through our decoder at full size and a WebP through ours (webp-decode.ts); a PNG through
 * ours when it has more pixels than `limits` let photon decode whole or the deployment keeps every PNG off
 * photon (`streamedPngPixels: 0`, the edge), else photon; and what our decoders refuse (a JPEG with 3:1
 * subsampling, data they find corrupt) through photon where the deployment lets photon decode at all
 * (`photon`), within its whole-decode limit (see limits.ts). Otherwise a 422.
 *
 * @example
 * const { width, height, data } = decodeImage(bytes); // data: RGBA, width * height * 4 bytes
 */
export function decodeImage(bytes: Uint8Array, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): RgbaImage {
  const header = readImageHeader(bytes);
  checkComplete(bytes, header);
  if (streamsPng(header, limits) && (header.width * header.height > limits.wholeDecodePixels || limits.streamedPngPixels === 0)) {
    try {
      const png = decodePngAtMost(bytes, Infinity);
      if (png) return png;
    } catch {
      // corrupt by our reading; photon may not have it at this size, so the guard below decides
    }
  }
  if (header.format === "jpeg") {
    try {
      const jpeg = decodeJpegScaled(bytes);
      if (jpeg) return applyOrientation({ width: jpeg.width, height: jpeg.height, data: jpeg.data }, header.orientation);
    } catch {
      // corrupt by our reading: photon gives the verdict, where the deployment lets it (decodeWhole)
    }
  }
  return applyOrientation(decodeWhole(bytes, header, limits), header.orientation);
}

/**
 * The image at full size in its stored orientation, for what no decoder of ours shrinks while decoding:
 * a WebP through webp-decode.ts, anything else through photon (never where `limits.photon` is off: a 422
 * then). Never above the deployment's whole-decode limit (422 then, `assertWholeDecodeAllowed`); corrupt
 * data is a 422 too.
 */
export function decodeWhole(bytes: Uint8Array, header: ImageHeader, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): RgbaImage {
  assertWholeDecodeAllowed(header, limits);
  if (header.format !== "webp") {
    // Our decoders have refused it (corrupt by their reading, or a JPEG they do not take); photon decides.
    if (!limits.photon) throw corrupt(new Error("photon is off in this deployment"));
    return withDecoded(bytes, (img) => ({ width: img.get_width(), height: img.get_height(), data: img.get_raw_pixels() }));
  }
  try {
    return decodeWebp(bytes);
  } catch (cause) {
    throw corrupt(cause);
  }
}

/**
 * Decodes with photon and runs `use` on the image, always freeing it. Callers have run the header and
 * integrity checks; a WASM trap here still becomes a 422, never a 500.
 */
export function withDecoded<T>(bytes: Uint8Array, use: (img: PhotonImage) => T): T {
  let img: PhotonImage;
  try {
    img = PhotonImage.new_from_byteslice(bytes);
  } catch (cause) {
    throw corrupt(cause);
  }
  try {
    return use(img);
  } finally {
    img.free();
  }
}

/** The 422 for data a decoder could not read. */
export function corrupt(cause: unknown): ApiError {
  return new ApiError("INVALID_IMAGE", "The image data is corrupt or uses a feature we cannot decode; re-save it as a standard JPEG, PNG or WebP.", { cause });
}

/** Copies RGBA into WASM, runs `use`, frees. */
export function withRgba<T>(rgba: RgbaImage, use: (img: PhotonImage) => T): T {
  assertRgba(rgba);
  const img = new PhotonImage(rgba.data, rgba.width, rgba.height);
  try {
    return use(img);
  } finally {
    img.free();
  }
}

/**
 * Encodes RGBA as PNG (alpha kept).
 *
 * @example
 * const png = encodePng({ width: 2, height: 1, data: new Uint8Array([255, 0, 0, 255, 0, 0, 255, 128]) });
 */
export function encodePng(img: RgbaImage): Uint8Array {
  return withRgba(img, (p) => p.get_bytes());
}

/**
 * Encodes RGBA as baseline JPEG at `quality` (1..100). Alpha is flattened onto `background` (default white)
 * first, because JPEG has no alpha and the encoder would otherwise drop it and show whatever colour the
 * transparent pixels happened to hold (often black).
 *
 * @example
 * const jpeg = encodeJpeg(rgba, 85);
 */
export function encodeJpeg(img: RgbaImage, quality = 85, background: [number, number, number] = [255, 255, 255]): Uint8Array {
  const q = Math.max(1, Math.min(100, Math.round(quality)));
  return withRgba(flattenAlpha(img, background), (p) => p.get_bytes_jpeg(q));
}

/** Composites RGBA over an opaque background colour; returns the same object when already opaque. */
export function flattenAlpha(img: RgbaImage, background: [number, number, number] = [255, 255, 255]): RgbaImage {
  const d = img.data;
  let opaque = true;
  for (let i = 3; i < d.length; i += 4) {
    if (d[i] !== 255) { opaque = false; break; }
  }
  if (opaque) return img;
  const [br, bg, bb] = background;
  const out = new Uint8Array(d.length);
  for (let i = 0; i < d.length; i += 4) {
    const a = d[i + 3]!;
    const ia = 255 - a;
    out[i] = (d[i]! * a + br * ia + 127) / 255;
    out[i + 1] = (d[i + 1]! * a + bg * ia + 127) / 255;
    out[i + 2] = (d[i + 2]! * a + bb * ia + 127) / 255;
    out[i + 3] = 255;
  }
  return { width: img.width, height: img.height, data: out };
}

function assertSize(width: number, height: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width * height > 100_000_000) {
    throw new RangeError(`resize target ${width}x${height} is not a valid size`);
  }
}

function assertRgba(img: RgbaImage): void {
  assertSize(img.width, img.height);
  if (img.data.length !== img.width * img.height * 4) {
    throw new RangeError(`RGBA data is ${img.data.length} bytes; ${img.width}x${img.height} needs ${img.width * img.height * 4}`);
  }
}
