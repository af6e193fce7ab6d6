/**
 * Classical product cut-out for photos on a plain or near-plain background, no model involved:
 *
 * 1. A background model from the image border: one smoothed colour profile per side, outliers (where the
 *    product touches the edge) replaced by the side's median, blended over the image as a Coons patch so a
 *    linear gradient or a gentle vignette is still "background" (border-model.ts).
 * 2. A flood fill from the border over pixels close to that model, and over smooth darker pixels of the
 *    same hue (the product's own soft shadow), so the shadow is not kept as product. Large photos are
 *    flooded on a copy of at most 640 px, and only the pixels along the found outline are decided again at
 *    full resolution: the outline is where precision matters, the flood is where the time goes.
 * 3. Specks removed, then the edge feathered and edge colours replaced by nearby interior colours, so no
 *    trace of the old background shows as a halo on the new one (matte.ts).
 *
 * An image that already has meaningful transparency keeps its own alpha; one whose border is not plain
 * is kept whole (foundBackground false) rather than chewed up.
 *
 * @example
 * const { image, foundBackground, x, y } = cutOut(decode(bytes));
 */
import { resizeRgba, type RgbaImage } from "../../images";
import { BorderModel } from "./border-model";
import { maskBox, matte, removeSpecks, trim, whole } from "./matte";

export interface CutOut {
  /** The product trimmed to its bounding box, straight (not premultiplied) alpha. */
  image: RgbaImage;
  /** Whether a background was found and removed (or the image's own alpha was used). */
  foundBackground: boolean;
  /** Where `image` was in the input, in input pixels. */
  x: number;
  y: number;
}

const BG = 1; // mask values: 0 = product, 1 = background, 2 = product removed as a speck
/** The analysis copy's longer side: the flood runs here, the outline is decided again at full size. */
export const ANALYSIS_SIDE = 640;

/**
 * Cuts the product out of its background.
 *
 * @example
 * const { image } = cutOut(photo); // image.width <= photo.width, alpha 0 where the background was
 */
export function cutOut(product: RgbaImage): CutOut {
  const { width: w, height: h } = product;
  const k = Math.min(1, ANALYSIS_SIDE / Math.max(w, h));
  const small = k < 0.75 ? resizeRgba(product, Math.max(8, Math.round(w * k)), Math.max(8, Math.round(h * k))) : product;
  return planCutOut(small).finish(product);
}

/** A cut-out decided on a small copy of a photo, to be finished on any copy of it at least that large. */
export interface CutOutPlan {
  /** The product's box in the small copy's pixels (the whole copy when no background was found). */
  box: { width: number; height: number };
  /**
   * The cut-out of `photo`, the same photo as the small copy at that size or larger. With `owned`, the
   * caller gives up `photo` and its pixels may become the cut-out's.
   */
  finish(photo: RgbaImage, owned?: boolean): CutOut;
}

/**
 * Finds the background on a small copy of the photo (at most ANALYSIS_SIDE, see cutOut), so a caller can
 * learn the product's size before it decides how large a copy to finish the cut-out on.
 *
 * @example
 * const plan = planCutOut(source.at(480, ANALYSIS_SIDE));
 * const { image } = plan.finish(source.at(needed)); // the outline decided again at that size
 */
export function planCutOut(small: RgbaImage): CutOutPlan {
  const found = analyse(small);
  if ("image" in found) {
    // Nothing to decide at full size: the photo's own alpha, or no plain background (kept whole).
    const box = { width: found.image.width, height: found.image.height };
    return { box, finish: (photo, owned) => (found.foundBackground ? { ...trim(photo, 8), foundBackground: true } : whole(photo, owned)) };
  }
  const { low } = found;
  const { width: sw, height: sh } = small;
  return {
    box: maskBox(low, sw, sh) ?? { width: sw, height: sh },
    finish(photo) {
      const same = photo.width === sw && photo.height === sh;
      const mask = same ? low : refine(photo, low, sw, sh, new BorderModel(photo));
      return { ...matte(photo, mask), foundBackground: true };
    },
  };
}

/**
 * Finds the background at analysis scale. Answers the finished cut-out of the small copy instead when
 * there is nothing to decide at full size: the image's own alpha, or no plain background (kept whole).
 */
function analyse(small: RgbaImage): CutOut | { low: Uint8Array } {
  if (hasOwnAlpha(small)) return { ...trim(small, 8), foundBackground: true };
  const { width: sw, height: sh } = small;
  if (sw < 8 || sh < 8) return whole(small);
  const model = new BorderModel(small);
  if (!model.plain) return whole(small);

  const n = sw * sh;
  const low = new Uint8Array(n);
  const queue = new Int32Array(n);
  const background = flood(small, model, low, queue);
  if (background < n * 0.02 || background > n * 0.995) return whole(small);
  dropShadowSlivers(small, model, low);
  const kept = removeSpecks(low, queue, sw, sh);
  if (kept < n * 0.003) return whole(small);
  return { low };
}

/** Meaningful own alpha: some of the image is clearly transparent and some clearly opaque. */
function hasOwnAlpha(img: RgbaImage): boolean {
  const d = img.data;
  const n = img.width * img.height;
  let clear = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i]! < 128) clear++;
  return clear >= n * 0.01 && n - clear >= n * 0.01;
}

/** Flood-fills the background from the border into `mask` (BG); returns how many pixels it took. */
function flood(img: RgbaImage, model: BorderModel, mask: Uint8Array, queue: Int32Array): number {
  const { width: w, height: h } = img;
  const n = w * h;
  const TESTED = 4; // rejected once: not tested again from another neighbour
  const bg = new Float32Array(3);
  let tail = 0;
  const visit = (p: number, x: number, y: number) => {
    if (mask[p] !== 0) return;
    if (isBackground(img, model, x, y, bg)) {
      mask[p] = BG;
      queue[tail++] = p;
    } else {
      mask[p] = TESTED;
    }
  };
  for (let x = 0; x < w; x++) {
    visit(x, x, 0);
    visit((h - 1) * w + x, x, h - 1);
  }
  for (let y = 1; y < h - 1; y++) {
    visit(y * w, 0, y);
    visit(y * w + w - 1, w - 1, y);
  }
  for (let head = 0; head < tail; head++) {
    const p = queue[head]!;
    const x = p % w;
    const y = (p - x) / w;
    if (x > 0) visit(p - 1, x - 1, y);
    if (x < w - 1) visit(p + 1, x + 1, y);
    if (y > 0) visit(p - w, x, y - 1);
    if (y < h - 1) visit(p + w, x, y + 1);
  }
  for (let p = 0; p < n; p++) if (mask[p] === TESTED) mask[p] = 0;
  return tail;
}

/**
 * A morphological opening (3 x 3) that may only remove shadow-coloured pixels: thin rims of a hard-edged
 * shadow, or a grey outline left where the fill stopped at a steep step, go; a grey product's own body
 * survives the erosion and gets its edge back from the dilation. Thin parts in any other colour stay.
 */
function dropShadowSlivers(img: RgbaImage, model: BorderModel, mask: Uint8Array): void {
  const { width: w, height: h } = img;
  const core = new Uint8Array(w * h);
  for (let y = 1; y < h - 1; y++) {
    for (let x = 1; x < w - 1; x++) {
      const p = y * w + x;
      if (mask[p] !== 0) continue;
      if (
        mask[p - 1] === 0 &&
        mask[p + 1] === 0 &&
        mask[p - w] === 0 &&
        mask[p + w] === 0 &&
        mask[p - w - 1] === 0 &&
        mask[p - w + 1] === 0 &&
        mask[p + w - 1] === 0 &&
        mask[p + w + 1] === 0
      )
        core[p] = 1;
    }
  }
  const bg = new Float32Array(3);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const p = y * w + x;
      if (mask[p] !== 0) continue;
      let restored = false;
      for (let dy = -1; dy <= 1 && !restored; dy++) {
        const yy = y + dy;
        if (yy < 0 || yy >= h) continue;
        for (let dx = -1; dx <= 1; dx++) {
          const xx = x + dx;
          if (xx >= 0 && xx < w && core[yy * w + xx] === 1) {
            restored = true;
            break;
          }
        }
      }
      if (!restored && shadowColoured(img, model, x, y, bg)) mask[p] = BG;
    }
  }
}

/** Same hue as the modelled background and no brighter: what a shadow on it looks like. */
function shadowColoured(img: RgbaImage, model: BorderModel, x: number, y: number, bg: Float32Array): boolean {
  model.colourAt(x, y, bg);
  const i = (y * img.width + x) * 4;
  const r = img.data[i]!;
  const g = img.data[i + 1]!;
  const b = img.data[i + 2]!;
  const k = (r * bg[0]! + g * bg[1]! + b * bg[2]!) / (bg[0]! * bg[0]! + bg[1]! * bg[1]! + bg[2]! * bg[2]! + 1);
  if (k < 0.35 || k > 1.05) return false;
  const t = model.tolerance * 0.8;
  return Math.abs(r - k * bg[0]!) <= t && Math.abs(g - k * bg[1]!) <= t && Math.abs(b - k * bg[2]!) <= t;
}

/**
 * Background: close to the model, or a smooth, same-hue, darker version of it (a soft shadow). Steep
 * luminance edges are never shadow, which stops the fill at the product's outline.
 */
function isBackground(img: RgbaImage, model: BorderModel, x: number, y: number, bg: Float32Array): boolean {
  model.colourAt(x, y, bg);
  const data = img.data;
  const i = (y * img.width + x) * 4;
  const r = data[i]!;
  const g = data[i + 1]!;
  const b = data[i + 2]!;
  const br = bg[0]!;
  const bgg = bg[1]!;
  const bb = bg[2]!;
  const tol = model.tolerance;
  if (Math.abs(r - br) < tol && Math.abs(g - bgg) < tol && Math.abs(b - bb) < tol) return true;
  const k = (r * br + g * bgg + b * bb) / (br * br + bgg * bgg + bb * bb + 1);
  if (k < 0.35 || k > 1.05) return false;
  const shadowTol = tol * 0.8;
  if (Math.abs(r - k * br) > shadowTol || Math.abs(g - k * bgg) > shadowTol || Math.abs(b - k * bb) > shadowTol) return false;
  // Contact shadows fall off over a few pixels; a product's outline is a step of one or two.
  return gradient(data, img.width, img.height, x, y) < 6 + model.noise * 2.5 + 0.03 * (br * 0.299 + bgg * 0.587 + bb * 0.114);
}

/**
 * The steepest luminance step to any of the four neighbours. Not a central difference: that is zero on
 * the ridge of a thin dark line (a seam, an outline), which would then pass for smooth shadow.
 */
function gradient(d: Uint8Array, w: number, h: number, x: number, y: number): number {
  const p = y * w + x;
  const c = lum(d, p);
  let g = 0;
  if (x > 0) g = Math.max(g, Math.abs(c - lum(d, p - 1)));
  if (x < w - 1) g = Math.max(g, Math.abs(c - lum(d, p + 1)));
  if (y > 0) g = Math.max(g, Math.abs(c - lum(d, p - w)));
  if (y < h - 1) g = Math.max(g, Math.abs(c - lum(d, p + w)));
  return g;
}

function lum(d: Uint8Array, q: number): number {
  return d[q * 4]! * 0.299 + d[q * 4 + 1]! * 0.587 + d[q * 4 + 2]! * 0.114;
}

/**
 * The full-resolution mask from the analysis mask: where all four nearest analysis cells agree, their
 * verdict; along the outline (they disagree), the pixel's own colour decides. Specks removed at analysis
 * scale stay removed.
 */
function refine(img: RgbaImage, low: Uint8Array, sw: number, sh: number, model: BorderModel): Uint8Array {
  const { width: w, height: h } = img;
  const mask = new Uint8Array(w * h).fill(BG);
  // Only the product's box (plus a cell of margin) can hold product pixels.
  const box = maskBox(low, sw, sh);
  if (!box) return mask;
  const { x0: lx0, y0: ly0, x1: lx1, y1: ly1 } = box;
  const kx = sw / w;
  const ky = sh / h;
  const fx0 = Math.max(0, Math.floor((lx0 - 1) / kx));
  const fx1 = Math.min(w - 1, Math.ceil((lx1 + 2) / kx));
  const fy0 = Math.max(0, Math.floor((ly0 - 1) / ky));
  const fy1 = Math.min(h - 1, Math.ceil((ly1 + 2) / ky));
  const cx0 = new Int32Array(w);
  const cx1 = new Int32Array(w);
  for (let x = fx0; x <= fx1; x++) {
    cx0[x] = Math.min(sw - 1, Math.max(0, (x + 0.5) * kx - 0.5) | 0);
    cx1[x] = Math.min(sw - 1, cx0[x]! + 1);
  }
  const bg = new Float32Array(3);
  for (let y = fy0; y <= fy1; y++) {
    const y0 = Math.min(sh - 1, Math.max(0, (y + 0.5) * ky - 0.5) | 0);
    const r0 = y0 * sw;
    const r1 = Math.min(sh - 1, y0 + 1) * sw;
    for (let x = fx0; x <= fx1; x++) {
      const a = low[r0 + cx0[x]!]!;
      const same = a === low[r0 + cx1[x]!] && a === low[r1 + cx0[x]!] && a === low[r1 + cx1[x]!];
      mask[y * w + x] = same ? a : isBackground(img, model, x, y, bg) ? BG : 0;
    }
  }
  return mask;
}
