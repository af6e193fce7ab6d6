/**
 * Paints a laid-out block: as a standalone straight-alpha image (renderTextBlock), or straight onto a canvas
 * with an optional panel and halo beneath the text (drawText). Layers are combined per pixel, panel, then
 * halo, then text, and the result is composited source-over onto the canvas.
 *
 * @example
 * paintOnto(canvas, layout, { x: 40, y: 40, width: 420, height: 120 }, 60, 52, { color: [255, 255, 255], panel: { color: [0, 0, 0], opacity: 0.6, radius: 14 } });
 */
import type { RgbaImage } from "../../images/types";
import type { BlockLayout } from "./layout";
import type { Rect } from "./legibility";
import { dilate, rasterizeGlyphs, roundedRect } from "./raster";
import type { Rgb } from "./svg";

interface Layer {
  cover: ArrayLike<number>;
  opacity: number;
  color: Rgb;
}

export interface PaintOptions {
  color: Rgb;
  panel?: { color: Rgb; opacity: number; radius: number };
  /** A halo `width` px wide around the glyphs. */
  halo?: { color: Rgb; opacity: number; width: number };
}

/**
 * The block alone: its colour where there is ink, alpha from coverage, transparent elsewhere.
 *
 * @example
 * const image = paintBlock(layout, [0, 0, 0]); // layout.width x layout.height
 */
export function paintBlock(layout: BlockLayout, color: Rgb): RgbaImage {
  const mask = rasterizeGlyphs(layout.glyphs, layout.width, layout.height, 0, 0);
  const data = new Uint8Array(layout.width * layout.height * 4);
  for (let i = 0, o = 0; i < mask.data.length; i++, o += 4) {
    const a = mask.data[i]!;
    if (a === 0) continue;
    data[o] = color[0];
    data[o + 1] = color[1];
    data[o + 2] = color[2];
    data[o + 3] = Math.round(a * 255);
  }
  return { width: layout.width, height: layout.height, data };
}

/**
 * Paints the block onto `canvas` inside `area` (already clipped to the canvas), the block's top-left at
 * (blockX, blockY) in canvas pixels; the panel fills `area`, the halo hugs the glyphs.
 *
 * @example
 * paintOnto(canvas, layout, covered, covered.x + 12, covered.y + 12, { color: [20, 20, 20] });
 */
export function paintOnto(canvas: RgbaImage, layout: BlockLayout, area: Rect, blockX: number, blockY: number, o: PaintOptions): void {
  const { width, height } = area;
  if (width < 1 || height < 1) return;
  const text = rasterizeGlyphs(layout.glyphs, width, height, blockX - area.x, blockY - area.y).data;
  const halo = o.halo ? dilate({ width, height, data: text }, o.halo.width).data : null;
  const panel = o.panel ? roundedRect(width, height, o.panel.radius).data : null;
  // Bottom-up: panel, halo, text; each is a coverage map (0..1), an opacity and a colour.
  const layers: Layer[] = [];
  if (panel && o.panel) layers.push({ cover: panel, opacity: o.panel.opacity, color: o.panel.color });
  if (halo && o.halo) layers.push({ cover: halo, opacity: o.halo.opacity, color: o.halo.color });
  layers.push({ cover: text, opacity: 1, color: o.color });
  const d = canvas.data;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const m = y * width + x;
      // Premultiplied colour (0..255) and alpha (0..1) of the layers combined source-over.
      let r = 0;
      let g = 0;
      let b = 0;
      let a = 0;
      for (const layer of layers) {
        const h = layer.cover[m]! * layer.opacity;
        if (h <= 0) continue;
        const k = 1 - h;
        r = layer.color[0] * h + r * k;
        g = layer.color[1] * h + g * k;
        b = layer.color[2] * h + b * k;
        a = h + a * k;
      }
      if (a <= 0) continue;
      const i = ((area.y + y) * canvas.width + area.x + x) * 4;
      const da = d[i + 3]! / 255;
      const keep = 1 - a;
      if (da === 1) {
        d[i] = r + d[i]! * keep + 0.5;
        d[i + 1] = g + d[i + 1]! * keep + 0.5;
        d[i + 2] = b + d[i + 2]! * keep + 0.5;
        continue;
      }
      const outA = a + da * keep;
      d[i] = (r + d[i]! * da * keep) / outA + 0.5;
      d[i + 1] = (g + d[i + 1]! * da * keep) / outA + 0.5;
      d[i + 2] = (b + d[i + 2]! * da * keep) / outA + 0.5;
      d[i + 3] = outA * 255 + 0.5;
    }
  }
}
