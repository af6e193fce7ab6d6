/**
 * A product photo drawn in code, for the catalogue's demo images and the README: an amber glass serum
 * bottle with a black ribbed collar and rubber dropper bulb, a wrapped paper label with a brand mark made of
 * shapes, on a plain off-white backdrop with a faint natural shadow. Every part is shaded as a cylinder lit
 * from the front left (transmission through the glass, a specular stripe, rim light), and every edge is
 * anti-aliased from a signed distance, so it reads as a studio photo rather than a flat icon.
 *
 * @example
 * const photo = renderDemoProduct(640); // 640 x 800, opaque
 */
import type { RgbaImage } from "../../images";
import { clamp01, dither } from "./raster";

/**
 * Renders the demo product photo, `width` wide and 1.25 x as tall.
 *
 * @example
 * const { image } = cutOut(renderDemoProduct(800));
 */
export function renderDemoProduct(width: number): RgbaImage {
  const w = Math.max(64, Math.round(width));
  const h = Math.round(w * 1.25);
  const data = new Uint8Array(w * h * 4);
  const out = new Uint8ClampedArray(data.buffer);
  const cx = w / 2;
  const shape = bottleShape(w / 100);
  const px = [0, 0, 0];

  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const fx = x + 0.5 - cx;
      const fy = y + 0.5;
      paintBackdrop(px, shape, fx, fy, h);
      paintGlass(px, shape, fx, fy);
      paintCollar(px, shape, fx, fy);
      paintBulb(px, shape, fx, fy);
      const n = dither(x, y) * 2.5;
      const i = (y * w + x) * 4;
      out[i] = px[0]! + n;
      out[i + 1] = px[1]! + n;
      out[i + 2] = px[2]! + n;
      out[i + 3] = 255;
    }
  }
  return { width: w, height: h, data };
}

/** The silhouette in pixels (design units of w / 100, y down, x relative to the centre line). */
function bottleShape(u: number) {
  return {
    u,
    body: { hw: 19 * u, top: 52 * u, bottom: 113 * u, rTop: 10 * u, rBottom: 2.5 * u },
    neck: { hw: 7 * u, top: 45 * u, bottom: 54 * u },
    collar: { hw: 9 * u, top: 33 * u, bottom: 46 * u, r: 1.2 * u },
    bulb: { hw: 6 * u, top: 15 * u, bottom: 34 * u },
    label: { top: 71 * u, bottom: 101 * u },
    liquid: 60 * u,
  };
}

type Shape = ReturnType<typeof bottleShape>;

/** Backdrop: off-white, a touch darker toward the bottom, with the bottle's soft shadow. */
function paintBackdrop(px: number[], { u, body }: Shape, fx: number, fy: number, h: number): void {
  const g = 1 - 0.035 * (fy / h);
  const contact = Math.exp(-((Math.abs(fx + 1 * u) / (21 * u)) ** 4) - ((fy - body.bottom) / (3.2 * u)) ** 2) * 0.28;
  const cast = Math.exp(-(((fx - 12 * u) / (30 * u)) ** 2) - ((fy - body.bottom + 2 * u) / (6 * u)) ** 2) * 0.16;
  const shade = 1 - Math.min(0.5, contact + cast);
  px[0] = 243 * g * shade;
  px[1] = 241 * g * shade;
  px[2] = 237 * g * shade;
}

/** Glass body (with neck): amber, denser where the path through the glass is longer; the label on it. */
function paintGlass(px: number[], shape: Shape, fx: number, fy: number): void {
  const { u, body, neck, liquid } = shape;
  const bodyCover = coverage(
    Math.min(roundBox(fx, fy, body.hw, body.top, body.bottom, body.rTop, body.rBottom), roundBox(fx, fy, neck.hw, neck.top, neck.bottom + 4 * u, u, u)),
  );
  if (bodyCover <= 0) return;
  // The silhouette's half-width on this row (the bottle is a surface of revolution), and how far
  // up the rounded shoulder we are: its surface faces the light above, so it is brighter.
  const shoulderT = clamp01((body.top + body.rTop - fy) / body.rTop);
  const hw = Math.max(neck.hw, body.hw - body.rTop + body.rTop * Math.sqrt(Math.max(0, 1 - shoulderT * shoulderT)));
  const nx = Math.max(-1, Math.min(1, fx / hw));
  const nz = Math.sqrt(1 - nx * nx);
  const shoulderLight = shoulderT * shoulderT * 0.35 * (fy > body.top - u ? 1 : 0);
  const filled = fy > liquid ? 1 : 0.45;
  const density = (0.3 + 0.78 * nz ** 0.7) * (1 - 0.18 * clamp01((fy - body.top) / (body.bottom - body.top)));
  let r = 176 * density + (1 - filled) * 40;
  let gg = 86 * density + (1 - filled) * 28;
  let b = 24 * density + (1 - filled) * 12;
  // The pipette inside: a lighter strip down the middle, above the label.
  const pipette = coverage(Math.abs(fx + 0.5 * u) - 1.4 * u) * (fy > neck.top && fy < 96 * u ? 1 : 0);
  r += 40 * pipette;
  gg += 22 * pipette;
  b += 8 * pipette;
  // Thick glass base.
  const base = clamp01((fy - (body.bottom - 4 * u)) / (3 * u));
  r *= 1 - 0.35 * base;
  gg *= 1 - 0.35 * base;
  b *= 1 - 0.35 * base;
  const spec = Math.exp(-(((nx + 0.58) / 0.07) ** 2)) * 0.9 * (1 - shoulderT * 0.6) + Math.exp(-(((nx - 0.78) / 0.08) ** 2)) * 0.22 + shoulderLight * nz;
  const rim = Math.abs(nx) ** 10 * 0.25;
  r += (255 - r) * (spec + rim);
  gg += (255 - gg) * (spec + rim * 0.9);
  b += (255 - b) * (spec + rim * 0.8);
  // Liquid surface line.
  const meniscus = Math.exp(-(((fy - liquid) / (0.5 * u)) ** 2)) * 0.2;
  over(px, r * (1 - meniscus), gg * (1 - meniscus), b * (1 - meniscus), bodyCover);
  paintLabel(px, shape, fy, nx, nz, hw, bodyCover);
}

/** Paper label wrapped round the front, its brand mark following the curve. */
function paintLabel(px: number[], { u, label }: Shape, fy: number, nx: number, nz: number, hw: number, bodyCover: number): void {
  const labelCover = coverage(Math.max(label.top - fy, fy - label.bottom)) * coverage((Math.abs(nx) - 0.965) * hw);
  if (labelCover <= 0) return;
  const lambert = Math.max(0, -nx * 0.5 + nz * 0.85);
  const k = 0.5 + 0.52 * lambert;
  let lr = 246;
  let lg = 240;
  let lb = 228;
  const lu = Math.asin(nx) * hw; // arc length on the label, so the mark wraps with the bottle
  const mark = brandMark(lu / u, (fy - label.top) / u, u);
  lr += (mark.r - lr) * mark.a;
  lg += (mark.g - lg) * mark.a;
  lb += (mark.b - lb) * mark.a;
  const sheen = Math.exp(-(((nx + 0.5) / 0.12) ** 2)) * 0.12;
  over(px, lr * k + 255 * sheen, lg * k + 255 * sheen, lb * k + 255 * sheen, labelCover * bodyCover);
}

/** Black ribbed collar. */
function paintCollar(px: number[], { collar }: Shape, fx: number, fy: number): void {
  const collarCover = coverage(roundBox(fx, fy, collar.hw, collar.top, collar.bottom, collar.r, collar.r));
  if (collarCover <= 0) return;
  const nx = Math.max(-1, Math.min(1, fx / collar.hw));
  const nz = Math.sqrt(1 - nx * nx);
  const rib = 0.5 + 0.5 * Math.sin(Math.asin(nx) * 22);
  const lambert = Math.max(0, -nx * 0.5 + nz * 0.85);
  const spec = Math.exp(-(((nx + 0.5) / 0.1) ** 2)) * (0.5 + 0.2 * rib);
  const v = 20 + 26 * lambert + 10 * rib;
  over(px, v + (255 - v) * spec, v + (255 - v) * spec, v + 2 + (255 - v) * spec, collarCover);
}

/** Rubber bulb: matte, a broad soft highlight, domed top. */
function paintBulb(px: number[], { u, bulb }: Shape, fx: number, fy: number): void {
  const bulbCover = coverage(roundBox(fx, fy, bulb.hw, bulb.top, bulb.bottom, bulb.hw, 0.8 * u));
  if (bulbCover <= 0) return;
  const nx = Math.max(-1, Math.min(1, fx / bulb.hw));
  const nz = Math.sqrt(1 - nx * nx);
  const dome = clamp01((bulb.top + bulb.hw - fy) / bulb.hw);
  const lambert = Math.max(0, -nx * 0.5 + nz * 0.85) * (1 - 0.3 * dome);
  const spec = Math.exp(-(((nx + 0.45) / 0.18) ** 2)) * 0.14 * (1 - dome);
  const v = 26 + 30 * lambert;
  over(px, v + 255 * spec, v + 255 * spec, v + 3 + 255 * spec, bulbCover);
}

/** Signed distance (px) to a box centred on x = 0 from `top` to `bottom`, top and bottom corner radii apart. */
function roundBox(x: number, y: number, hw: number, top: number, bottom: number, rTop: number, rBottom: number): number {
  const cy = (top + bottom) / 2;
  const hh = (bottom - top) / 2;
  const r = y < cy ? rTop : rBottom;
  const qx = Math.abs(x) - hw + r;
  const qy = Math.abs(y - cy) - hh + r;
  return Math.min(Math.max(qx, qy), 0) + Math.hypot(Math.max(qx, 0), Math.max(qy, 0)) - r;
}

/** Pixel coverage from a signed distance (negative inside). */
function coverage(d: number): number {
  return d <= -0.5 ? 1 : d >= 0.5 ? 0 : 0.5 - d;
}

function over(px: number[], r: number, g: number, b: number, a: number): void {
  px[0] = px[0]! + (r - px[0]!) * a;
  px[1] = px[1]! + (g - px[1]!) * a;
  px[2] = px[2]! + (b - px[2]!) * a;
}

/**
 * The label's artwork in label units (u across from the centre line, v down from the label's top): a
 * ring with a leaf, two bars standing in for the brand name and the product line, and thin gold rules.
 */
function brandMark(lu: number, lv: number, pxPerUnit: number): { r: number; g: number; b: number; a: number } {
  const ink = { r: 38, g: 66, b: 56 };
  const ring = Math.abs(Math.hypot(lu, lv - 9.5) - 5.2) - 0.55;
  // Leaf: the intersection of two offset circles, tilted.
  const ax = (lu - lv + 9.5) * 0.7071;
  const ay = (lu + lv - 9.5) * 0.7071;
  const leaf = Math.max(Math.hypot(ax - 2.2, ay) - 3.4, Math.hypot(ax + 2.2, ay) - 3.4);
  const bar1 = Math.max(Math.abs(lu) - 10, Math.abs(lv - 19) - 1.1);
  const bar2 = Math.max(Math.abs(lu) - 6.5, Math.abs(lv - 23.2) - 0.55);
  const inkD = Math.min(ring, leaf, bar1, bar2) * pxPerUnit;
  const gold = Math.min(Math.abs(lv - 1.3), Math.abs(lv - 28.7)) - 0.25;
  const goldA = clamp01(0.5 - gold * pxPerUnit);
  const inkA = clamp01(0.5 - inkD);
  if (inkA > 0) return { ...ink, a: inkA };
  return { r: 190, g: 150, b: 70, a: goldA };
}
