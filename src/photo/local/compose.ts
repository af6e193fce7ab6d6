/**
 * Composition of a cut-out product into a backdrop: where it goes and how big (layoutFor), its contact
 * shadow (a blurred, squashed silhouette multiplied into the floor, tinted by the floor's own colour), the
 * faded mirror image on a glossy floor, and the product itself (premultiplied "over").
 *
 * @example
 * const frame = layoutFor(style, cut.width, cut.height, 1536, 1536);
 * const product = resizePremultiplied(cut, frame.pw, frame.ph);
 * const canvas = renderBackdrop(style, frame);
 * drawShadow(canvas, product, style, frame); drawReflection(canvas, product, style, frame); drawProduct(canvas, product, frame);
 */
import type { RgbaImage } from "../../images";
import type { Frame } from "./lights";
import { propTop } from "./props";
import { boxBlur3, sampleBilinear } from "./raster";
import type { SceneStyle } from "./style";

/** Product size and position, the horizon, for a cut-out of `bw` x `bh` in a `W` x `H` frame. */
export function layoutFor(style: SceneStyle, bw: number, bh: number, W: number, H: number): Frame {
  const s = Math.min(W, H);
  const longest = style.productScale * s;
  let pw = bw >= bh ? longest : (longest * bw) / bh;
  let ph = bw >= bh ? (longest * bh) / bw : longest;
  const onProp = style.prop === "plinth" || style.prop === "podium";
  const maxW = W * (style.productX === 0.5 ? 0.84 : 0.5);
  const maxH = H * (onProp ? 0.46 : 0.72);
  const fit = Math.min(1, maxW / pw, maxH / ph);
  pw = Math.max(1, Math.round(pw * fit));
  ph = Math.max(1, Math.round(ph * fit));
  const margin = 0.06 * W;
  const cx = Math.min(W - margin - pw / 2, Math.max(margin + pw / 2, style.productX * W));
  let baseY: number;
  if (onProp) {
    const stack = ph + s * 0.24;
    baseY = H / 2 - stack / 2 + ph + 0.03 * s;
  } else if (style.backdrop === "top") {
    baseY = H / 2 + ph / 2;
  } else {
    baseY = H / 2 + ph / 2 + 0.035 * s;
  }
  const horizonY = Math.max(H * 0.3, baseY - (onProp ? 0.08 : 0.2) * s - (onProp ? 0 : 0));
  return { width: W, height: H, s, horizonY: onProp ? Math.min(H * 0.78, baseY + 0.2 * s) : horizonY, cx, baseY, pw, ph };
}

/** Where the product's top-left corner goes (it is raised by `lift` when levitating). */
export function productOrigin(style: SceneStyle, frame: Frame): { x: number; y: number } {
  const lift = style.backdrop === "top" ? 0 : style.lift * frame.s;
  return { x: Math.round(frame.cx - frame.pw / 2), y: Math.round(frame.baseY - frame.ph - lift) };
}

/**
 * Multiplies a soft shadow into the canvas: an occlusion ellipse under the base, the silhouette squashed
 * and thrown away from the key light onto the floor, or, seen from above, the silhouette itself offset.
 * Drawn on a buffer at 1/4 scale or less and blurred there; upsampled bilinearly while multiplying.
 */
export function drawShadow(canvas: RgbaImage, product: RgbaImage, style: SceneStyle, frame: Frame): void {
  if (style.shadow <= 0) return;
  const { width: W, height: H } = canvas;
  const f = Math.max(2, Math.ceil(Math.max(W, H) / 400));
  const sw = Math.ceil(W / f);
  const sh = Math.ceil(H / f);
  const buf = new Float32Array(sw * sh);
  const { x: ox, y: oy } = productOrigin(style, frame);
  const alphaAt = (px: number, py: number) => {
    // Product alpha (0..1) at product pixel (px, py), nearest.
    const ix = px | 0;
    const iy = py | 0;
    if (ix < 0 || iy < 0 || ix >= product.width || iy >= product.height) return 0;
    return product.data[(iy * product.width + ix) * 4 + 3]! / 255;
  };
  const lift = style.backdrop === "top" ? 0 : style.lift * frame.s;
  const fade = 1 / (1 + lift / (0.02 * frame.s));
  let blur: number;
  if (style.backdrop === "top") {
    const dx = 0.015 * frame.s * -style.lightFrom;
    const dy = 0.02 * frame.s;
    for (let y = 0; y < sh; y++) {
      for (let x = 0; x < sw; x++) buf[y * sw + x] = alphaAt(x * f + f / 2 - ox - dx, y * f + f / 2 - oy - dy) * 0.75;
    }
    blur = 0.018 * frame.s / f;
  } else {
    // The footprint: which columns of the product touch its lowest 6 %.
    const footY0 = Math.floor(product.height * 0.94);
    let fx0 = product.width;
    let fx1 = -1;
    for (let y = footY0; y < product.height; y++) {
      for (let x = 0; x < product.width; x++) {
        if (product.data[(y * product.width + x) * 4 + 3]! > 128) {
          if (x < fx0) fx0 = x;
          if (x > fx1) fx1 = x;
        }
      }
    }
    if (fx1 < 0) (fx0 = 0), (fx1 = product.width - 1);
    const footCx = ox + (fx0 + fx1) / 2;
    const footRx = Math.max(2, ((fx1 - fx0) / 2) * 1.08);
    const footRy = Math.max(2, Math.min(footRx * 0.16, 0.03 * frame.s));
    const baseY = frame.baseY;
    const squash = 0.14;
    const skew = -style.lightFrom * 0.55;
    for (let y = 0; y < sh; y++) {
      const cy = y * f + f / 2;
      for (let x = 0; x < sw; x++) {
        const cxp = x * f + f / 2;
        // Occlusion right under the base.
        const ex = (cxp - footCx) / footRx;
        const ey = (cy - baseY) / footRy;
        const occ = Math.max(0, 1 - (ex * ex + ey * ey)) * 0.9 * fade;
        // Cast shadow: floor rows above the base map to product rows, squashed, leaning away from the light.
        let cast = 0;
        const up = baseY - cy;
        if (up >= -footRy && up < frame.ph * squash * 1.2) {
          const py = product.height - 1 - Math.max(0, up) / squash;
          const px = cxp - ox - skew * (Math.max(0, up) / squash);
          cast = alphaAt(px, py) * 0.55 * (1 - Math.max(0, up) / (frame.ph * squash * 1.2)) * fade;
        }
        buf[y * sw + x] = Math.max(occ, cast);
      }
    }
    blur = (0.012 * frame.s + lift * 0.4) / f;
  }
  // Plinth and podium also cast a shadow of their own onto the floor.
  const prop = propTop(style, frame);
  if (prop) {
    const by = frame.baseY + prop.height * (style.prop === "podium" ? 1.35 : 1);
    const rx = prop.rx * (style.prop === "podium" ? 1.32 : 1.05);
    for (let y = 0; y < sh; y++) {
      for (let x = 0; x < sw; x++) {
        const ex = (x * f - frame.cx) / rx;
        const ey = (y * f - by) / (prop.ry * 1.3);
        const v = Math.max(0, 1 - (ex * ex + ey * ey));
        if (v > buf[y * sw + x]!) buf[y * sw + x] = Math.min(1, v * 1.6) * 0.7;
      }
    }
  }
  boxBlur3(buf, sw, sh, Math.max(1, blur));
  const out = new Uint8ClampedArray(canvas.data.buffer, canvas.data.byteOffset, canvas.data.length);
  const strength = style.shadow;
  // Shadow colour: a darker version of the floor, so shadows on warm wood look warm, not grey.
  const tint = style.floor[1].map((v) => 0.25 + 0.35 * (v / 255)) as [number, number, number];
  for (let y = 0; y < H; y++) {
    const ly = (y + 0.5) / f - 0.5;
    for (let x = 0; x < W; x++) {
      const v = sampleBilinear(buf, sw, sh, (x + 0.5) / f - 0.5, ly) * strength;
      if (v < 0.004) continue;
      const i = (y * W + x) * 4;
      out[i] = out[i]! * (1 - v * (1 - tint[0]));
      out[i + 1] = out[i + 1]! * (1 - v * (1 - tint[1]));
      out[i + 2] = out[i + 2]! * (1 - v * (1 - tint[2]));
    }
  }
}

/** A glossy floor's mirror image: the product flipped under its base, fading out over 45 % of its height. */
export function drawReflection(canvas: RgbaImage, product: RgbaImage, style: SceneStyle, frame: Frame): void {
  if (style.reflection <= 0 || style.backdrop === "top") return;
  const { x: ox, y: oy } = productOrigin(style, frame);
  const { width: pw, height: ph, data: p } = product;
  const gap = Math.round((frame.baseY - (oy + ph)) * 2);
  const rows = Math.round(ph * 0.45);
  const W = canvas.width;
  const c = new Uint8ClampedArray(canvas.data.buffer, canvas.data.byteOffset, canvas.data.length);
  for (let r = 0; r < rows; r++) {
    const y = oy + ph + gap + r;
    if (y < 0 || y >= canvas.height) continue;
    const k = style.reflection * (1 - r / rows) ** 2;
    const src = (ph - 1 - r) * pw * 4;
    for (let x = 0; x < pw; x++) {
      const cx = ox + x;
      if (cx < 0 || cx >= W) continue;
      const si = src + x * 4;
      const a = (p[si + 3]! * k) / 255;
      if (a <= 0.002) continue;
      const di = (y * W + cx) * 4;
      c[di] = p[si]! * k + c[di]! * (1 - a);
      c[di + 1] = p[si + 1]! * k + c[di + 1]! * (1 - a);
      c[di + 2] = p[si + 2]! * k + c[di + 2]! * (1 - a);
    }
  }
}

/** Composites the premultiplied product over the canvas at its place. */
export function drawProduct(canvas: RgbaImage, product: RgbaImage, style: SceneStyle, frame: Frame): void {
  const { x: ox, y: oy } = productOrigin(style, frame);
  const { width: pw, height: ph, data: p } = product;
  const W = canvas.width;
  // Clamped: rounding in the premultiplied resize can leave a channel a hair above its alpha.
  const c = new Uint8ClampedArray(canvas.data.buffer, canvas.data.byteOffset, canvas.data.length);
  for (let y = 0; y < ph; y++) {
    const cy = oy + y;
    if (cy < 0 || cy >= canvas.height) continue;
    let si = y * pw * 4;
    for (let x = 0; x < pw; x++, si += 4) {
      const cx = ox + x;
      const a = p[si + 3]!;
      if (a === 0 || cx < 0 || cx >= W) continue;
      const di = (cy * W + cx) * 4;
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
