/**
 * What a sniffed image header says, and the size limits every image is held to. Its own module, below
 * sniff.ts and limits.ts, which both use it (sniff.ts reads headers and checks them against limits.ts).
 */
export type ImageFormat = "jpeg" | "png" | "webp";

export interface ImageInfo {
  format: ImageFormat;
  mimeType: string;
  width: number;
  height: number;
}

/** Header facts the decoder needs besides the public ImageInfo. */
export interface ImageHeader extends ImageInfo {
  /** EXIF orientation 1..8 (JPEG only; 1 when absent). */
  orientation: number;
  /** Colour components of a JPEG frame (1 grey, 3 YCbCr/RGB, 4 CMYK/YCCK); 0 for other formats. */
  components: number;
  /** JPEG: each component's sampling factors as written (horizontal << 4 | vertical); empty for other formats. */
  sampling: number[];
  /** JPEG: progressive (SOF2). */
  progressive: boolean;
  /** PNG: Adam7 interlaced. */
  interlaced: boolean;
}

export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;
export const MAX_IMAGE_PIXELS = 40_000_000;
