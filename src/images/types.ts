/**
 * The image types every area shares (media, QR, photo). RGBA is straight (not premultiplied) unless a
 * function says otherwise; `resizePremultiplied` is the one producer of premultiplied RGBA.
 */

/** An 8-bit RGBA bitmap: 4 bytes per pixel, row-major, no padding (`data.length === width * height * 4`). */
export interface RgbaImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/** An 8-bit single-channel bitmap (gray, a mask, a YCbCr plane): row-major, no padding. */
export interface GrayImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/**
 * An image's brightness alone, for a reader that needs no colour (the QR reader), made without an RGBA copy
 * (a JPEG's luma plane); tagged so it is never taken for RGBA, whose shape is the same.
 */
export interface LumaImage extends GrayImage {
  kind: "luma";
}

/** Photon's decoder, where the build has it (`#photon`: functions/node/photon.ts on Node, none in workerd). */
export interface PhotonCodec {
  /** Decodes any JPEG, PNG or WebP whole to RGBA; throws for what it cannot read. */
  decode(bytes: Uint8Array): RgbaImage;
}

/** A Uint32 view of RGBA bytes (one element per pixel); copies only when the bytes are not 4-aligned. */
export function pixels32(data: Uint8Array): Uint32Array {
  const aligned = data.byteOffset % 4 === 0 ? data : data.slice();
  return new Uint32Array(aligned.buffer, aligned.byteOffset, aligned.byteLength >>> 2);
}
