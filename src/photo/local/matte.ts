/**
 * The second half of the cut-out: specks dropped from the product mask, the mask feathered into alpha, and
 * edge pixels recoloured from the product's interior so the old background leaves no halo; plus the
 * trimming helpers. Everything after the mask works only inside the product's bounding box.
 *
 * @example
 * removeSpecks(mask, queue, w, h);
 * const { image, x, y } = matte(photo, mask);
 */
import type { RgbaImage } from "../../images";

/**
 * Drops product components smaller than 0.05 % of the image or 2 % of the largest one (dust, JPEG
 * specks at the border). Returns the product pixels kept.
 */
export function removeSpecks(mask: Uint8Array, queue: Int32Array, w: number, h: number): number {
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
  return kept;
}

/**
 * The bounding box of the product cells (0) of a mask; null when there are none.
 *
 * @example
 * maskBox(new Uint8Array([1, 0, 0, 1]), 2, 2); // { x0: 0, y0: 0, x1: 1, y1: 1, width: 2, height: 2 }
 */
export function maskBox(mask: Uint8Array, w: number, h: number): { x0: number; y0: number; x1: number; y1: number; width: number; height: number } | null {
  let x0 = w;
  let y0 = h;
  let x1 = -1;
  let y1 = -1;
  for (let y = 0; y < h; y++) {
    const row = y * w;
    for (let x = 0; x < w; x++) {
      if (mask[row + x] === 0) {
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
    }
  }
  return x1 < 0 ? null : { x0, y0, x1, y1, width: x1 - x0 + 1, height: y1 - y0 + 1 };
}

/**
 * Alpha from the binary mask, feathered by a small box blur (its radius grows with the image), trimmed to
 * the product, with edge pixels recoloured from the nearest interior pixels so the old background's colour
 * does not fringe the product.
 */
export function matte(img: RgbaImage, mask: Uint8Array): { image: RgbaImage; x: number; y: number } {
  const { width: w, height: h, data } = img;
  const r = Math.max(1, Math.round(Math.max(w, h) / 1200));
  const found = maskBox(mask, w, h);
  if (!found) return { image: img, x: 0, y: 0 }; // nothing left as product: keep the photo whole
  const { x0, y0, width: tw, height: th } = found;
  // Outside the box nothing is product, so feathering the box alone gives the same alpha.
  const box = new Uint8Array(tw * th);
  for (let y = 0; y < th; y++) box.set(mask.subarray((y + y0) * w + x0, (y + y0) * w + x0 + tw), y * tw);
  const alpha = featherMask(box, tw, th, r);
  const out = new Uint8Array(tw * th * 4);
  const reach = r + 2;
  for (let y = 0; y < th; y++) {
    for (let x = 0; x < tw; x++) {
      const sp = (y + y0) * w + x + x0;
      const a = alpha[y * tw + x]!;
      const o = (y * tw + x) * 4;
      out[o + 3] = a;
      if (a === 0) continue;
      const si = sp * 4;
      // Full alpha after a box feather of radius >= 1 means no background within 1 px: a clean colour.
      if (a === 255) {
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

/**
 * The whole image as the product: nothing removed. `inPlace` makes it opaque where it is (for a caller that
 * owns the pixels: no copy of a full-size photo), else in a copy.
 */
export function whole(img: RgbaImage, inPlace = false): { image: RgbaImage; foundBackground: false; x: number; y: number } {
  const data = inPlace ? img.data : img.data.slice();
  for (let i = 3; i < data.length; i += 4) data[i] = 255;
  return { image: { width: img.width, height: img.height, data }, foundBackground: false, x: 0, y: 0 };
}

/** Trims an image with its own alpha to the box of pixels with alpha above `threshold`. */
export function trim(img: RgbaImage, threshold: number): { image: RgbaImage; x: number; y: number } {
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
