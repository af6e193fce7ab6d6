/**
 * Soft shadows, multiplied into the canvas and tinted by the floor's own colour (a shadow on warm wood is
 * warm, not grey): a tight contact line where the product touches the floor, a wider occlusion under it,
 * and its silhouette squashed and thrown away from the key light; seen from above, the silhouette offset.
 * Each is drawn on a buffer at about 1/4 scale, blurred there with box passes and upsampled bilinearly
 * while multiplying, only over the rows and columns it reaches.
 *
 * @example
 * drawPropShadow(canvas, style, frame); // before drawProp
 * drawProductShadow(canvas, product, style, frame); // after it, before the product
 */
import type { RgbaImage } from "../../images";
import { productOrigin } from "./compose";
import { propTop } from "./props";
import { boxBlur3, sampleBilinear } from "./raster";
import type { Frame, SceneStyle } from "./style";

/** A low-resolution float map over a region of the canvas (full-resolution pixels [x0, x0 + w * f)). */
class ShadowMap {
  readonly f: number;
  readonly x0: number;
  readonly y0: number;
  readonly w: number;
  readonly h: number;
  readonly buf: Float32Array;
  constructor(canvas: RgbaImage, scaleDown: number, region: { x0: number; y0: number; x1: number; y1: number }) {
    this.f = scaleDown;
    this.x0 = Math.max(0, Math.floor(region.x0));
    this.y0 = Math.max(0, Math.floor(region.y0));
    this.w = Math.max(1, Math.ceil((Math.min(canvas.width, region.x1) - this.x0) / scaleDown));
    this.h = Math.max(1, Math.ceil((Math.min(canvas.height, region.y1) - this.y0) / scaleDown));
    this.buf = new Float32Array(this.w * this.h);
  }

  /** Full-resolution x of map column `x` (its centre). */
  cx(x: number): number {
    return this.x0 + x * this.f + this.f / 2;
  }

  cy(y: number): number {
    return this.y0 + y * this.f + this.f / 2;
  }

  /** Multiplies the blurred map into the canvas: pixel *= 1 - v * strength * (1 - tint). */
  multiplyInto(canvas: RgbaImage, strength: number, tint: readonly number[]): void {
    const { buf, w, h, f } = this;
    let x0 = w;
    let x1 = -1;
    let y0 = h;
    let y1 = -1;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        if (buf[y * w + x]! > 0.002) {
          if (x < x0) x0 = x;
          if (x > x1) x1 = x;
          if (y < y0) y0 = y;
          if (y > y1) y1 = y;
        }
      }
    }
    if (x1 < 0) return;
    const W = canvas.width;
    const { x0: ox, y0: oy } = this;
    const out = new Uint8ClampedArray(canvas.data.buffer, canvas.data.byteOffset, canvas.data.length);
    const k0 = strength * (1 - tint[0]!);
    const k1 = strength * (1 - tint[1]!);
    const k2 = strength * (1 - tint[2]!);
    for (let y = Math.max(0, oy + (y0 - 1) * f); y < Math.min(canvas.height, oy + (y1 + 2) * f); y++) {
      const ly = (y - oy + 0.5) / f - 0.5;
      for (let x = Math.max(0, ox + (x0 - 1) * f); x < Math.min(W, ox + (x1 + 2) * f); x++) {
        const v = sampleBilinear(buf, w, h, (x - ox + 0.5) / f - 0.5, ly);
        if (v < 0.002) continue;
        const i = (y * W + x) * 4;
        out[i] = out[i]! * (1 - v * k0);
        out[i + 1] = out[i + 1]! * (1 - v * k1);
        out[i + 2] = out[i + 2]! * (1 - v * k2);
      }
    }
  }

  /** Adds a filled ellipse (max-blended). */
  ellipse(cx: number, cy: number, rx: number, ry: number, value: number): void {
    const { w, h, f, buf } = this;
    for (let y = Math.max(0, Math.floor((cy - ry - this.y0) / f) - 1); y <= Math.min(h - 1, Math.ceil((cy + ry - this.y0) / f) + 1); y++) {
      for (let x = Math.max(0, Math.floor((cx - rx - this.x0) / f) - 1); x <= Math.min(w - 1, Math.ceil((cx + rx - this.x0) / f) + 1); x++) {
        const ex = (this.cx(x) - cx) / rx;
        const ey = (this.cy(y) - cy) / ry;
        const v = Math.min(1, Math.max(0, 1 - (ex * ex + ey * ey)) * 2.5) * value;
        if (v > buf[y * w + x]!) buf[y * w + x] = v;
      }
    }
  }
}

function scaleDownFor(canvas: RgbaImage, fine: boolean): number {
  return Math.max(fine ? 1 : 2, Math.ceil(Math.max(canvas.width, canvas.height) / (fine ? 1024 : 400)));
}

/** A shadow colour factor per channel: a darker version of the floor's front colour. */
function tintOf(style: SceneStyle): number[] {
  return style.floor[1].map((v) => 0.22 + 0.3 * (v / 255));
}

/** The plinth's or podium's own shadow on the floor (drawn before the prop itself). */
export function drawPropShadow(canvas: RgbaImage, style: SceneStyle, frame: Frame): void {
  const prop = propTop(style, frame);
  if (!prop || style.shadow <= 0) return;
  const podium = style.prop === "podium";
  const by = frame.baseY + prop.height * (podium ? 1.35 : 1);
  const rx = prop.rx * (podium ? 1.3 : 1.02);
  const margin = rx * 0.5 + frame.s * 0.1;
  const map = new ShadowMap(canvas, scaleDownFor(canvas, false), { x0: frame.cx - rx - margin, y0: by - margin, x1: frame.cx + rx + margin, y1: by + margin });
  map.ellipse(frame.cx - style.lightFrom * rx * 0.12, by + prop.ry * 0.3, rx * 1.04, prop.ry * (podium ? 1.5 : 1.3), 0.8);
  boxBlur3(map.buf, map.w, map.h, (frame.s * 0.025) / map.f);
  map.multiplyInto(canvas, style.shadow, tintOf(style));
}

/** The product's shadow: contact line, occlusion and cast silhouette (or an offset silhouette from above). */
export function drawProductShadow(canvas: RgbaImage, product: RgbaImage, style: SceneStyle, frame: Frame): void {
  if (style.shadow <= 0) return;
  const { x: ox, y: oy } = productOrigin(style, frame);
  const pa = product.data;
  const pw = product.width;
  const ph = product.height;
  const alphaAt = (px: number, py: number): number => {
    const ix = px | 0;
    const iy = py | 0;
    return ix < 0 || iy < 0 || ix >= pw || iy >= ph ? 0 : pa[(iy * pw + ix) * 4 + 3]! / 255;
  };
  const tint = tintOf(style);
  const margin = frame.s * 0.12;
  if (style.backdrop === "top") {
    const soft = new ShadowMap(canvas, scaleDownFor(canvas, false), { x0: ox - margin, y0: oy - margin, x1: ox + pw + margin, y1: oy + ph + margin });
    const { w: sw, h: sh, buf } = soft;
    const dx = 0.015 * frame.s * -style.lightFrom;
    const dy = 0.022 * frame.s;
    for (let y = 0; y < sh; y++) for (let x = 0; x < sw; x++) buf[y * sw + x] = alphaAt(soft.cx(x) - ox - dx, soft.cy(y) - oy - dy) * 0.8;
    boxBlur3(buf, sw, sh, (0.02 * frame.s) / soft.f);
    soft.multiplyInto(canvas, style.shadow, tint);
    return;
  }
  // The footprint: which columns of the product reach its lowest 5 %.
  let fx0 = pw;
  let fx1 = -1;
  for (let y = Math.floor(ph * 0.95); y < ph; y++) {
    for (let x = 0; x < pw; x++) {
      if (pa[(y * pw + x) * 4 + 3]! > 128) {
        if (x < fx0) fx0 = x;
        if (x > fx1) fx1 = x;
      }
    }
  }
  if (fx1 < 0) (fx0 = 0), (fx1 = pw - 1);
  const footCx = ox + (fx0 + fx1) / 2;
  const footRx = Math.max(2, ((fx1 - fx0) / 2) * 1.06);
  const lift = style.lift * frame.s;
  const fade = 1 / (1 + lift / (0.06 * frame.s));
  const baseY = frame.baseY;
  const squash = 0.12;
  const skew = -style.lightFrom * 0.4;
  const reach = ph * squash;
  const lean = Math.abs(skew) * ph;
  const soft = new ShadowMap(canvas, scaleDownFor(canvas, false), {
    x0: Math.min(ox, footCx - footRx * 2) - lean - margin,
    y0: baseY - reach - margin,
    x1: Math.max(ox + pw, footCx + footRx * 2) + lean + margin,
    y1: baseY + margin,
  });
  const { f, w: sw, h: sh, buf } = soft;
  soft.ellipse(footCx, baseY, footRx * (1.05 + lift / frame.s), Math.max(2, Math.min(footRx * 0.2, 0.04 * frame.s)), 0.75 * fade);
  for (let y = 0; y < sh; y++) {
    const up = baseY - soft.cy(y);
    if (up < 0 || up > reach) continue;
    // Floor rows above the base map to product rows, squashed, leaning away from the light.
    const height = up / squash;
    const py = ph - 1 - height;
    const strength = 0.5 * (1 - up / reach) * fade;
    for (let x = 0; x < sw; x++) {
      const v = alphaAt(soft.cx(x) - ox - skew * height, py) * strength;
      if (v > buf[y * sw + x]!) buf[y * sw + x] = v;
    }
  }
  boxBlur3(buf, sw, sh, (0.014 * frame.s + lift * 0.5) / f);
  soft.multiplyInto(canvas, style.shadow, tint);
  if (lift > 0) return;
  // The contact line: thin and dark, barely blurred, so the product sits on the floor.
  const cm = frame.s * 0.04;
  const contact = new ShadowMap(canvas, scaleDownFor(canvas, true), { x0: footCx - footRx - cm, y0: baseY - cm, x1: footCx + footRx + cm, y1: baseY + cm });
  contact.ellipse(footCx, baseY - 0.002 * frame.s, footRx * 0.98, Math.max(1.5, 0.008 * frame.s), 1);
  boxBlur3(contact.buf, contact.w, contact.h, (0.005 * frame.s) / contact.f);
  contact.multiplyInto(canvas, Math.min(1, style.shadow * 1.1), tint);
}
