/**
 * Classical product cut-out for photos on a plain or near-plain background, no model involved:
 *
 * 1. A background model from the image border: one smoothed colour profile per side, outliers (where the
 *    product touches the edge) replaced by the side's median, blended over the image as a Coons patch so a
 *    linear gradient or a gentle vignette is still "background".
 * 2. A flood fill from the border over pixels close to that model, and over smooth darker pixels of the
 *    same hue (the product's own soft shadow), so the shadow is not kept as product.
 * 3. Specks removed, then the edge feathered by a small box blur and edge colours replaced by nearby
 *    interior colours, so no trace of the old background shows as a halo on the new one.
 *
 * An image that already has meaningful transparency keeps its own alpha; one whose border is not plain
 * is kept whole (foundBackground false) rather than chewed up.
 *
 * @example
 * const { image, foundBackground, x, y } = cutOut(decodeImage(bytes));
 */
import type { RgbaImage } from "../../images";
import { BorderModel } from "./border-model";

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

/**
 * Cuts the product out of its background.
 *
 * @example
 * const { image } = cutOut(photo); // image.width <= photo.width, alpha 0 where the background was
 */
export function cutOut(product: RgbaImage): CutOut {
  if (hasOwnAlpha(product)) return { ...trim(product, 8), foundBackground: true };
  const { width: w, height: h, data } = product;
  if (w < 8 || h < 8) return whole(product);
  const model = new BorderModel(product);
  if (!model.plain) return whole(product);

  const n = w * h;
  const mask = new Uint8Array(n);
  const queue = new Int32Array(n);
  const tol = model.tolerance;
  const shadowTol = tol * 0.8;
  const gradMax = 6 + model.noise * 2.5;
  const bg = new Float32Array(3);

  // A pixel joins the background when it matches the model, or when it is a smooth, same-hue, darker
  // version of it (a soft shadow): steep luminance edges stop the fill at the product's outline.
  const isBackground = (p: number): boolean => {
    const x = p % w;
    const y = (p - x) / w;
    model.colourAt(x, y, bg);
    const i = p * 4;
    const r = data[i]!;
    const g = data[i + 1]!;
    const b = data[i + 2]!;
    const dr = Math.abs(r - bg[0]!);
    const dg = Math.abs(g - bg[1]!);
    const db = Math.abs(b - bg[2]!);
    if (dr < tol && dg < tol && db < tol) return true;
    const k = (r * bg[0]! + g * bg[1]! + b * bg[2]!) / (bg[0]! * bg[0]! + bg[1]! * bg[1]! + bg[2]! * bg[2]! + 1);
    if (k < 0.35 || k > 1.05) return false;
    if (Math.abs(r - k * bg[0]!) > shadowTol || Math.abs(g - k * bg[1]!) > shadowTol || Math.abs(b - k * bg[2]!) > shadowTol) return false;
    return gradient(data, w, h, x, y) < gradMax;
  };

  let tail = 0;
  const seed = (p: number) => {
    if (mask[p] === 0 && isBackground(p)) {
      mask[p] = BG;
      queue[tail++] = p;
    }
  };
  for (let x = 0; x < w; x++) {
    seed(x);
    seed((h - 1) * w + x);
  }
  for (let y = 1; y < h - 1; y++) {
    seed(y * w);
    seed(y * w + w - 1);
  }
  for (let head = 0; head < tail; head++) {
    const p = queue[head]!;
    const x = p % w;
    if (x > 0) seed(p - 1);
    if (x < w - 1) seed(p + 1);
    if (p >= w) seed(p - w);
    if (p < n - w) seed(p + w);
  }
  const background = tail;
  if (background < n * 0.02 || background > n * 0.995) return whole(product);

  const kept = removeSpecks(mask, queue, w, h, n - background);
  if (kept < n * 0.003) return whole(product);
  return { ...matte(product, mask), foundBackground: true };
}

/** Meaningful own alpha: some of the image is clearly transparent and some clearly opaque. */
function hasOwnAlpha(img: RgbaImage): boolean {
  const d = img.data;
  const n = img.width * img.height;
  let clear = 0;
  let solid = 0;
  for (let i = 3; i < d.length; i += 4) {
    if (d[i]! < 128) clear++;
    else solid++;
  }
  return clear >= n * 0.01 && solid >= n * 0.01;
}

/** Central-difference luminance gradient (max of both axes), halved to per-pixel units. */
function gradient(d: Uint8Array, w: number, h: number, x: number, y: number): number {
  const l = (q: number) => d[q * 4]! * 0.299 + d[q * 4 + 1]! * 0.587 + d[q * 4 + 2]! * 0.114;
  const p = y * w + x;
  const gx = Math.abs(l(x < w - 1 ? p + 1 : p) - l(x > 0 ? p - 1 : p));
  const gy = Math.abs(l(y < h - 1 ? p + w : p) - l(y > 0 ? p - w : p));
  return (gx > gy ? gx : gy) / 2;
}

/**
 * Drops product components smaller than 0.05 % of the image or 2 % of the largest one (dust, JPEG
 * specks at the border). Returns the product pixels kept.
 */
function removeSpecks(mask: Uint8Array, queue: Int32Array, w: number, h: number, productPixels: number): number {
  const n = w * h;
  const VISITED = 3;
  const starts: number[] = [];
  let tail = 0;
  for (let s = 0; s < n; s++) {
    if (mask[s] !== 0) continue;
    starts.push(tail);
    mask[s] = VISITED;
    queue[tail++] = s;
    for (let head = starts[starts.length - 1]!; head < tail; head++) {
      const p = queue[head]!;
      const x = p % w;
      if (x > 0 && mask[p - 1] === 0) (mask[p - 1] = VISITED), (queue[tail++] = p - 1);
      if (x < w - 1 && mask[p + 1] === 0) (mask[p + 1] = VISITED), (queue[tail++] = p + 1);
      if (p >= w && mask[p - w] === 0) (mask[p - w] = VISITED), (queue[tail++] = p - w);
      if (p < n - w && mask[p + w] === 0) (mask[p + w] = VISITED), (queue[tail++] = p + w);
    }
  }
  starts.push(tail);
  let largest = 0;
  for (let c = 0; c + 1 < starts.length; c++) largest = Math.max(largest, starts[c + 1]! - starts[c]!);
  const minSize = Math.max(n * 0.0005, largest * 0.02);
  let kept = 0;
  for (let c = 0; c + 1 < starts.length; c++) {
    const size = starts[c + 1]! - starts[c]!;
    const value = size >= minSize ? 0 : 2;
    if (value === 0) kept += size;
    for (let k = starts[c]!; k < starts[c + 1]!; k++) mask[queue[k]!] = value;
  }
  void productPixels;
  void h;
  return kept;
}

/**
 * Alpha from the binary mask, feathered by a small box blur (its radius grows with the image), trimmed to
 * the product, with edge pixels recoloured from the nearest interior pixels so the old background's colour
 * does not fringe the product.
 */
function matte(img: RgbaImage, mask: Uint8Array): { image: RgbaImage; x: number; y: number } {
  const { width: w, height: h, data } = img;
  const r = Math.max(1, Math.round(Math.max(w, h) / 1200));
  const alpha = featherMask(mask, w, h, r);
  let x0 = w;
  let y0 = h;
  let x1 = -1;
  let y1 = -1;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      if (alpha[y * w + x]! > 0) {
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
    }
  }
  const tw = x1 - x0 + 1;
  const th = y1 - y0 + 1;
  const out = new Uint8Array(tw * th * 4);
  const reach = r + 2;
  for (let y = 0; y < th; y++) {
    for (let x = 0; x < tw; x++) {
      const sp = (y + y0) * w + x + x0;
      const a = alpha[sp]!;
      const o = (y * tw + x) * 4;
      out[o + 3] = a;
      if (a === 0) continue;
      const si = sp * 4;
      if (a === 255 && !nearEdge(mask, w, h, x + x0, y + y0)) {
        out[o] = data[si]!;
        out[o + 1] = data[si + 1]!;
        out[o + 2] = data[si + 2]!;
        continue;
      }
      interiorColour(data, mask, w, h, x + x0, y + y0, reach, out, o);
    }
  }
  return { image: { width: tw, height: th, data: out }, x: x0, y: y0 };
}

/** Whether a product pixel has background within 1 px (its colour is likely mixed with it). */
function nearEdge(mask: Uint8Array, w: number, h: number, x: number, y: number): boolean {
  for (let dy = -1; dy <= 1; dy++) {
    const yy = y + dy;
    if (yy < 0 || yy >= h) continue;
    for (let dx = -1; dx <= 1; dx++) {
      const xx = x + dx;
      if (xx >= 0 && xx < w && mask[yy * w + xx] !== 0) return true;
    }
  }
  return false;
}

/**
 * Average colour of product pixels at least 2 px inside the outline within `reach`, weighted towards the
 * nearest; the pixel's own colour when the product is too thin to have any.
 */
function interiorColour(d: Uint8Array, mask: Uint8Array, w: number, h: number, x: number, y: number, reach: number, out: Uint8Array, o: number): void {
  let sr = 0;
  let sg = 0;
  let sb = 0;
  let sw = 0;
  for (let dy = -reach; dy <= reach; dy++) {
    const yy = y + dy;
    if (yy < 2 || yy >= h - 2) continue;
    for (let dx = -reach; dx <= reach; dx++) {
      const xx = x + dx;
      if (xx < 2 || xx >= w - 2) continue;
      const p = yy * w + xx;
      if (mask[p] !== 0 || mask[p - 2] !== 0 || mask[p + 2] !== 0 || mask[p - 2 * w] !== 0 || mask[p + 2 * w] !== 0) continue;
      const wt = 1 / (1 + dx * dx + dy * dy);
      sr += d[p * 4]! * wt;
      sg += d[p * 4 + 1]! * wt;
      sb += d[p * 4 + 2]! * wt;
      sw += wt;
    }
  }
  const si = (y * w + x) * 4;
  if (sw === 0) {
    out[o] = d[si]!;
    out[o + 1] = d[si + 1]!;
    out[o + 2] = d[si + 2]!;
  } else {
    out[o] = sr / sw;
    out[o + 1] = sg / sw;
    out[o + 2] = sb / sw;
  }
}

/** Product (mask 0) as 255, everything else 0, box-blurred with radius r in both axes. */
function featherMask(mask: Uint8Array, w: number, h: number, r: number): Uint8Array {
  const tmp = new Uint16Array(w * h);
  const span = 2 * r + 1;
  for (let y = 0; y < h; y++) {
    const o = y * w;
    let acc = 0;
    for (let x = -r; x <= r; x++) if (x >= 0 && x < w && mask[o + x] === 0) acc++;
    for (let x = 0; x < w; x++) {
      tmp[o + x] = acc;
      const add = x + r + 1;
      const sub = x - r;
      if (add < w && mask[o + add] === 0) acc++;
      if (sub >= 0 && mask[o + sub] === 0) acc--;
    }
  }
  const out = new Uint8Array(w * h);
  const scaleBy = 255 / (span * span);
  for (let x = 0; x < w; x++) {
    let acc = 0;
    for (let y = -r; y <= r; y++) if (y >= 0 && y < h) acc += tmp[y * w + x]!;
    for (let y = 0; y < h; y++) {
      // Only pixels of the product or right next to it may be visible: the blur must not grow the
      // product outward by its full radius (that would show a band of old background).
      out[y * w + x] = mask[y * w + x] === 0 ? Math.round(acc * scaleBy) : 0;
      const add = y + r + 1;
      const sub = y - r;
      if (add < h) acc += tmp[add * w + x]!;
      if (sub >= 0) acc -= tmp[sub * w + x]!;
    }
  }
  return out;
}

/** The whole image as the product: nothing removed. */
function whole(img: RgbaImage): CutOut {
  const data = img.data.slice();
  for (let i = 3; i < data.length; i += 4) data[i] = 255;
  return { image: { width: img.width, height: img.height, data }, foundBackground: false, x: 0, y: 0 };
}

/** Trims an image with its own alpha to the box of pixels with alpha above `threshold`. */
function trim(img: RgbaImage, threshold: number): { image: RgbaImage; x: number; y: number } {
  const { width: w, height: h, data } = img;
  let x0 = w;
  let y0 = h;
  let x1 = -1;
  let y1 = -1;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      if (data[(y * w + x) * 4 + 3]! > threshold) {
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
    }
  }
  if (x1 < 0) return { image: img, x: 0, y: 0 };
  const tw = x1 - x0 + 1;
  const th = y1 - y0 + 1;
  const out = new Uint8Array(tw * th * 4);
  for (let y = 0; y < th; y++) out.set(data.subarray(((y + y0) * w + x0) * 4, ((y + y0) * w + x0 + tw) * 4), y * tw * 4);
  return { image: { width: tw, height: th, data: out }, x: x0, y: y0 };
}
