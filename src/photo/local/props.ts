/**
 * Props drawn at full resolution under or behind the product: a round plaster plinth, a two-tier promo
 * podium (ellipse-topped cylinders, shaded by the key light), and a flat circle on the wall for the
 * two-tone social look. Edges are anti-aliased from their distance to the outline.
 *
 * @example
 * drawProp(canvas, style, frame); // before the shadow and the product
 */
import type { RgbaImage } from "../../images";
import { mix, type Rgb } from "./raster";
import type { Frame, SceneStyle } from "./style";

/** The plinth or podium top: the product stands on an ellipse centred at (cx, baseY). */
export function propTop(style: SceneStyle, frame: Frame): { rx: number; ry: number; height: number } | null {
  if (style.prop !== "plinth" && style.prop !== "podium") return null;
  const rx = Math.min(frame.width * 0.44, Math.max(frame.s * 0.2, frame.pw * 0.8));
  return { rx, ry: rx * 0.17, height: frame.s * (style.prop === "podium" ? 0.17 : 0.2) };
}

/** Draws the style's prop onto the canvas. */
export function drawProp(canvas: RgbaImage, style: SceneStyle, frame: Frame): void {
  const top = propTop(style, frame);
  if (top) {
    if (style.prop === "podium") {
      // A wider, darker lower tier, then the main tier.
      const lower = { rx: top.rx * 1.28, ry: top.ry * 1.28, height: top.height * 0.35 };
      cylinder(canvas, frame.cx, frame.baseY + top.height, lower, mix(style.propColour, [40, 20, 60], 0.45), style.lightFrom, 0.6);
      cylinder(canvas, frame.cx, frame.baseY, top, style.propColour, style.lightFrom, 0.9);
    } else {
      cylinder(canvas, frame.cx, frame.baseY, top, style.propColour, style.lightFrom, 0.15);
    }
  } else if (style.prop === "circle") {
    const r = Math.min(frame.s * 0.33, frame.ph * 0.5);
    disc(canvas, frame.cx, frame.baseY - frame.ph * 0.5 - 0.04 * frame.s, r, style.propColour);
  }
}

/**
 * An upright cylinder whose top ellipse is centred at (cx, ty): the side shaded like a matte (or, with
 * `gloss`, satin) surface lit from one side, the top face lighter than the side.
 */
function cylinder(
  canvas: RgbaImage,
  cx: number,
  ty: number,
  shape: { rx: number; ry: number; height: number },
  colour: Rgb,
  lightFrom: number,
  gloss: number,
): void {
  const { width: W, height: H, data } = canvas;
  const out = new Uint8ClampedArray(data.buffer, data.byteOffset, data.length);
  const { rx, ry, height } = shape;
  const x0 = Math.max(0, Math.floor(cx - rx - 1));
  const x1 = Math.min(W - 1, Math.ceil(cx + rx + 1));
  const y0 = Math.max(0, Math.floor(ty - ry - 1));
  const y1 = Math.min(H - 1, Math.ceil(ty + height + ry + 1));
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      const nx = (x + 0.5 - cx) / rx;
      const edgeX = Math.min(1, Math.max(0, (1 - Math.abs(nx)) * rx + 0.5));
      if (edgeX <= 0) continue;
      const half = Math.sqrt(Math.max(0, 1 - nx * nx)) * ry;
      const py = y + 0.5;
      // Coverage of the top face, and of the side (between the top ellipse's front and the bottom's).
      const topCover = Math.min(1, Math.max(0, half - Math.abs(py - ty) + 0.5)) * edgeX;
      const sideCover = Math.min(1, Math.max(0, py - ty + 0.5)) * Math.min(1, Math.max(0, ty + height + half - py + 0.5)) * edgeX;
      const cover = Math.max(topCover, sideCover);
      if (cover <= 0) continue;
      let r: number;
      let g: number;
      let b: number;
      if (topCover >= sideCover || py < ty) {
        const k = 1.04 + 0.04 * (-nx * lightFrom);
        r = colour[0] * k;
        g = colour[1] * k;
        b = colour[2] * k;
      } else {
        // Lambert across the round side, light from the key side; a soft highlight band when glossy.
        const nz = Math.sqrt(Math.max(0, 1 - nx * nx));
        const lx = -lightFrom * 0.6;
        const lambert = Math.max(0, nx * lx + nz * 0.8);
        const spec = gloss * Math.max(0, 1 - Math.abs(nx - lx * 0.5) * 3.2) ** 3 * 0.35;
        const depth = 1 - 0.1 * ((py - ty) / height);
        const k = (0.62 + 0.34 * lambert) * depth;
        r = colour[0] * k + 255 * spec;
        g = colour[1] * k + 255 * spec;
        b = colour[2] * k + 255 * spec;
        // The front rim of the top face catches light.
        const rim = Math.max(0, 1 - Math.abs(py - (ty + half)) / Math.max(1, ry * 0.08));
        r += (255 - r) * rim * 0.25;
        g += (255 - g) * rim * 0.25;
        b += (255 - b) * rim * 0.25;
      }
      const i = (y * W + x) * 4;
      out[i] = out[i]! + (r - out[i]!) * cover;
      out[i + 1] = out[i + 1]! + (g - out[i + 1]!) * cover;
      out[i + 2] = out[i + 2]! + (b - out[i + 2]!) * cover;
    }
  }
}

function disc(canvas: RgbaImage, cx: number, cy: number, r: number, colour: Rgb): void {
  const { width: W, height: H, data } = canvas;
  const out = new Uint8ClampedArray(data.buffer, data.byteOffset, data.length);
  for (let y = Math.max(0, Math.floor(cy - r - 1)); y <= Math.min(H - 1, cy + r + 1); y++) {
    for (let x = Math.max(0, Math.floor(cx - r - 1)); x <= Math.min(W - 1, cx + r + 1); x++) {
      const a = Math.min(1, Math.max(0, r - Math.hypot(x + 0.5 - cx, y + 0.5 - cy) + 0.5));
      if (a <= 0) continue;
      const i = (y * W + x) * 4;
      for (let k = 0; k < 3; k++) out[i + k] = out[i + k]! + (colour[k]! - out[i + k]!) * a;
    }
  }
}
