/**
 * Straight and premultiplied alpha. Resizing or blending straight-alpha colour lets the invisible colour of
 * transparent pixels bleed in as a dark or light fringe, so cut-outs, logos and rendered text are resized
 * premultiplied and turned back only where straight alpha is needed.
 *
 * @example
 * const logo = resizePremultiplied(decoded, 300, 120); // premultiplied RGBA, ready to composite
 * const straight = unpremultiply(logo);                 // in place
 */
import { resizeRgba } from "./resize";
import type { RgbaImage } from "./types";

/**
 * Resizes a straight-alpha image and returns it premultiplied. A caller that `owns` the pixels lets them be
 * premultiplied in place (they are spent), instead of in a copy of the whole image.
 */
export function resizePremultiplied(img: RgbaImage, width: number, height: number, owned = false): RgbaImage {
  const s = img.data;
  if (isOpaque(s)) {
    // Premultiplying changes no pixel: resize them as they are, without a premultiplied copy of the whole image
    // (4 bytes a pixel), and still hand back an image of its own.
    return width === img.width && height === img.height ? { width, height, data: s.slice() } : resizeRgba(img, width, height);
  }
  const pre = premultiply(img, owned);
  return resizeRgba(pre, width, height);
}

/**
 * Straight to premultiplied alpha, rounded to the nearest value: in place for a caller that owns the pixels,
 * else in a copy.
 */
export function premultiply(img: RgbaImage, inPlace: boolean): RgbaImage {
  const s = img.data;
  const pre = inPlace ? s : new Uint8Array(s.length);
  for (let i = 0; i < s.length; i += 4) {
    const a = s[i + 3]!;
    if (a === 255) {
      pre[i] = s[i]!;
      pre[i + 1] = s[i + 1]!;
      pre[i + 2] = s[i + 2]!;
    } else if (a > 0) {
      pre[i] = (s[i]! * a + 127) / 255;
      pre[i + 1] = (s[i + 1]! * a + 127) / 255;
      pre[i + 2] = (s[i + 2]! * a + 127) / 255;
    } else {
      pre[i] = pre[i + 1] = pre[i + 2] = 0;
    }
    pre[i + 3] = a;
  }
  return { width: img.width, height: img.height, data: pre };
}

function isOpaque(d: Uint8Array): boolean {
  for (let i = 3; i < d.length; i += 4) if (d[i] !== 255) return false;
  return true;
}

/** Premultiplied to straight alpha, in place, rounded to the nearest value. */
export function unpremultiply(img: RgbaImage): RgbaImage {
  const d = img.data;
  for (let i = 0; i < d.length; i += 4) {
    const a = d[i + 3]!;
    if (a === 0 || a === 255) continue;
    d[i] = Math.min(255, Math.round((d[i]! * 255) / a));
    d[i + 1] = Math.min(255, Math.round((d[i + 1]! * 255) / a));
    d[i + 2] = Math.min(255, Math.round((d[i + 2]! * 255) / a));
  }
  return img;
}

/**
 * Draws `src` (premultiplied RGBA) over the opaque `dst` with its top-left corner at (x, y), clipped to
 * `dst`. Channels are clamped: rounding in a premultiplied resize can leave one a hair above its alpha.
 *
 * @example
 * drawOver(canvas, resizePremultiplied(logo, 300, 120), 40, 40);
 */
export function drawOver(dst: RgbaImage, src: RgbaImage, x: number, y: number): void {
  const W = dst.width;
  const c = new Uint8ClampedArray(dst.data.buffer, dst.data.byteOffset, dst.data.length);
  const p = src.data;
  const x0 = Math.max(0, x);
  const x1 = Math.min(W, x + src.width);
  for (let sy = Math.max(0, -y); sy < src.height && y + sy < dst.height; sy++) {
    let si = (sy * src.width + (x0 - x)) * 4;
    let di = ((y + sy) * W + x0) * 4;
    for (let cx = x0; cx < x1; cx++, si += 4, di += 4) {
      const a = p[si + 3]!;
      if (a === 0) continue;
      if (a === 255) {
        c[di] = p[si]!;
        c[di + 1] = p[si + 1]!;
        c[di + 2] = p[si + 2]!;
      } else {
        const keep = 255 - a;
        c[di] = p[si]! + (c[di]! * keep + 127) / 255;
        c[di + 1] = p[si + 1]! + (c[di + 1]! * keep + 127) / 255;
        c[di + 2] = p[si + 2]! + (c[di + 2]! * keep + 127) / 255;
      }
    }
  }
}
