/**
 * Decoding a whole image (decodeImage, decodeWhole): our TypeScript decoders first (JPEG, PNG, WebP), and
 * photon (Rust `image` compiled to WebAssembly) for what they decline, where the build has it and the
 * deployment lets it decode; and whole-image PNG and JPEG encoding on our encoders.
 *
 * `#photon` is a package.json import: functions/node/photon.ts on Node (tsx, vitest, the server), photon-none.ts in
 * workerd (condition "workerd"), so the Worker's bundle holds no photon.
 */
import { photon } from "#photon";
import { ApiError } from "../lib/errors";
import { applyOrientation } from "./exif";
import { checkComplete } from "./integrity";
import { assertWholeDecodeAllowed, DEFAULT_DECODE_LIMITS, pngsOffPhoton, streamsPng, type DecodeLimits } from "./limits";
import { decodeJpegScaled } from "./jpeg-decode";
import { encodeJpegBaseline } from "./jpeg-encode";
import { encodePng as writePng } from "./png";
import { decodePngAtMost } from "./png-decode";
import { readImageHeader, type ImageHeader } from "./sniff";
import type { RgbaImage } from "./types";
import { decodeWebp } from "./webp-decode";

/**
 * Sniffs, checks limits and decodes to RGBA with the EXIF orientation applied (JPEG). Corrupt or unsupported
 * data throws ApiError INVALID_IMAGE (422); over 10 MB throws PAYLOAD_TOO_LARGE (413). Never a 500 for input.
 * A JPEG goes through our decoder at full size and a WebP through ours (webp-decode.ts); a PNG through
 * ours when it has more pixels than `limits` let photon decode whole or the deployment keeps every PNG off
 * photon (`pngsOffPhoton`: the edge, or no photon in the build), else photon; and what our decoders refuse (a JPEG with 3:1
 * subsampling, data they find corrupt) through photon where the deployment lets photon decode at all
 * (`photon`), within its whole-decode limit (see limits.ts). Otherwise a 422.
 *
 * @example
 * const { width, height, data } = decodeImage(bytes); // data: RGBA, width * height * 4 bytes
 */
export function decodeImage(bytes: Uint8Array, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): RgbaImage {
  const header = readImageHeader(bytes);
  checkComplete(bytes, header);
  if (streamsPng(header, limits) && (header.width * header.height > limits.wholeDecodePixels || pngsOffPhoton(limits))) {
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
    if (!limits.photon || !photon) throw corrupt(new Error("photon does not decode in this deployment"));
    try {
      return photon.decode(bytes);
    } catch (cause) {
      throw corrupt(cause); // a WebAssembly trap too: a 422, never a 500
    }
  }
  try {
    return decodeWebp(bytes);
  } catch (cause) {
    throw corrupt(cause);
  }
}

/** The 422 for data a decoder could not read. */
export function corrupt(cause: unknown): ApiError {
  return new ApiError("INVALID_IMAGE", "The image data is corrupt or uses a feature we cannot decode; re-save it as a standard JPEG, PNG or WebP.", { cause });
}

/**
 * Encodes RGBA as PNG (alpha kept).
 *
 * @example
 * const png = encodePng({ width: 2, height: 1, data: new Uint8Array([255, 0, 0, 255, 0, 0, 255, 128]) });
 */
export function encodePng(img: RgbaImage): Uint8Array {
  assertRgba(img);
  const row = img.width * 4;
  return writePng({ width: img.width, height: img.height, color: { kind: "rgba" }, writeRow: (y, out) => out.set(img.data.subarray(y * row, (y + 1) * row)) });
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
  assertRgba(img);
  const q = Math.max(1, Math.min(100, Math.round(quality)));
  return encodeJpegBaseline(flattenAlpha(img, background), q);
}

/** Composites RGBA over an opaque background colour; returns the same object when already opaque. */
export function flattenAlpha(img: RgbaImage, background: [number, number, number] = [255, 255, 255]): RgbaImage {
  const d = img.data;
  let opaque = true;
  for (let i = 3; i < d.length; i += 4) {
    if (d[i] !== 255) {
      opaque = false;
      break;
    }
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
