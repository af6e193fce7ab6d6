/**
 * EXIF orientation: read the tag from a JPEG APP1 segment and apply it to RGBA pixels. Phones store photos
 * sideways and set this tag; ignoring it publishes sideways images.
 */
import { pixels32, type GrayImage, type RgbaImage } from "./types";

/**
 * Reads the Orientation tag (0x0112) of IFD0 from an APP1 payload ("Exif\0\0" + TIFF). Returns 1..8, or null
 * when the segment is not EXIF or the tag is absent or malformed (a bad EXIF block must not fail the image).
 *
 * @example
 * readJpegOrientation(app1Payload); // 6: rotate 90 degrees clockwise to display
 */
export function readJpegOrientation(app1: Uint8Array): number | null {
  if (app1.length < 14 || app1[0] !== 0x45 || app1[1] !== 0x78 || app1[2] !== 0x69 || app1[3] !== 0x66 || app1[4] !== 0 || app1[5] !== 0) {
    return null;
  }
  const tiff = app1.subarray(6);
  const little = tiff[0] === 0x49 && tiff[1] === 0x49;
  if (!little && !(tiff[0] === 0x4d && tiff[1] === 0x4d)) return null;
  const u16 = (i: number) => (little ? tiff[i]! | (tiff[i + 1]! << 8) : (tiff[i]! << 8) | tiff[i + 1]!);
  const u32 = (i: number) => (little ? u16(i) + u16(i + 2) * 0x10000 : u16(i) * 0x10000 + u16(i + 2));
  if (u16(2) !== 42) return null;
  const ifd = u32(4);
  if (ifd + 2 > tiff.length) return null;
  const count = u16(ifd);
  for (let n = 0; n < count; n++) {
    const entry = ifd + 2 + n * 12;
    if (entry + 12 > tiff.length) return null;
    if (u16(entry) === 0x0112) {
      const value = u16(entry + 8);
      return value >= 1 && value <= 8 ? value : null;
    }
  }
  return null;
}

/** True when the orientation swaps width and height (5..8). */
export function swapsAxes(orientation: number): boolean {
  return orientation >= 5 && orientation <= 8;
}

/**
 * The size an image shows at once its EXIF orientation is applied (a header's stored size, turned a quarter
 * for 5..8).
 *
 * @example
 * uprightSize(readImageHeader(bytes)); // { width: 3000, height: 4000 } for a 4000x3000 photo at orientation 6
 */
export function uprightSize(header: { width: number; height: number; orientation: number }): { width: number; height: number } {
  return swapsAxes(header.orientation) ? { width: header.height, height: header.width } : { width: header.width, height: header.height };
}

/**
 * Returns an upright copy of `img` for an EXIF orientation (1 returns the same object).
 *
 * @example
 * const upright = applyOrientation(decoded, 6); // a 40x20 stored image becomes 20x40
 */
export function applyOrientation(img: RgbaImage, orientation: number): RgbaImage {
  if (orientation <= 1 || orientation > 8) return img;
  const out = new Uint8Array(img.data.length);
  reorient(pixels32(img.data), new Uint32Array(out.buffer), img.width, img.height, orientation);
  return { ...uprightSize({ ...img, orientation }), data: out };
}

/**
 * `applyOrientation` for a one-channel image (a JPEG's luma).
 *
 * @example
 * applyOrientationGray(luma, 8); // a 40x20 stored plane becomes 20x40
 */
export function applyOrientationGray(img: GrayImage, orientation: number): GrayImage {
  if (orientation <= 1 || orientation > 8) return img;
  const out = new Uint8Array(img.data.length);
  reorient(img.data, out, img.width, img.height, orientation);
  return { ...uprightSize({ ...img, orientation }), data: out };
}

/** Copies each stored pixel of a w x h image (one element each) to where it lands in the upright image. */
function reorient<T extends Uint8Array | Uint32Array>(src: T, dst: T, w: number, h: number, orientation: number): void {
  const ow = swapsAxes(orientation) ? h : w;
  for (let y = 0; y < h; y++) {
    const row = y * w;
    for (let x = 0; x < w; x++) {
      let dx: number;
      let dy: number;
      switch (orientation) {
        case 2:
          dx = w - 1 - x;
          dy = y;
          break;
        case 3:
          dx = w - 1 - x;
          dy = h - 1 - y;
          break;
        case 4:
          dx = x;
          dy = h - 1 - y;
          break;
        case 5:
          dx = y;
          dy = x;
          break;
        case 6:
          dx = h - 1 - y;
          dy = x;
          break;
        case 7:
          dx = h - 1 - y;
          dy = w - 1 - x;
          break;
        default:
          dx = y;
          dy = w - 1 - x;
          break; // 8
      }
      dst[dy * ow + dx] = src[row + x]!;
    }
  }
}
