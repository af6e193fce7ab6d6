/**
 * Fits `width` x `height` inside a box keeping the aspect ratio; never enlarges unless `enlarge` is set.
 *
 * @example
 * fitInside(4000, 3000, 1024, 1024); // { width: 1024, height: 768 }
 */
export function fitInside(width: number, height: number, maxWidth: number, maxHeight: number, enlarge = false): { width: number; height: number } {
  let scale = Math.min(maxWidth / width, maxHeight / height);
  if (!enlarge) scale = Math.min(1, scale);
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/** The longer edge of an area B image's JPEG thumbnail, in px (the gallery's and the hub's). */
export const THUMBNAIL_EDGE = 384;

/**
 * The size of the thumbnail of a `width` x `height` image: its shape, THUMBNAIL_EDGE on its longer side.
 *
 * @example
 * thumbnailSize(1024, 1280); // { width: 307, height: 384 }
 */
export function thumbnailSize(width: number, height: number): { width: number; height: number } {
  return fitInside(width, height, THUMBNAIL_EDGE, THUMBNAIL_EDGE, true);
}
