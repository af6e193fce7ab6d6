/**
 * Composition of a cut-out product into a backdrop: where it goes and how big (layoutFor), the faded
 * mirror image on a glossy floor, and the product itself (premultiplied "over").
 *
 * @example
 * const frame = layoutFor(style, cut.width, cut.height, 1536, 1536);
 * const product = resizePremultiplied(cut, frame.pw, frame.ph);
 * const canvas = renderBackdrop(style, frame);
 * drawReflection(canvas, product, style, frame);
 * drawProduct(canvas, product, style, frame);
 */
import { drawOver, type RgbaImage } from "../../images";
import type { Frame, SceneStyle } from "./style";

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
  const { x, y } = productOrigin(style, frame);
  drawOver(canvas, product, x, y);
}
