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
  const [tr, tg, tb] = o.color;
  const [hr, hg, hb] = o.halo?.color ?? [0, 0, 0];
  const [pr, pg, pb] = o.panel?.color ?? [0, 0, 0];
  const haloOpacity = o.halo?.opacity ?? 0;
  const panelOpacity = o.panel?.opacity ?? 0;
  const d = canvas.data;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const m = y * width + x;
      // Premultiplied layer colour (0..255) and alpha (0..1), built bottom-up: panel, halo, text.
      let r = 0;
      let g = 0;
      let b = 0;
      let a = 0;
      if (panel) {
        a = panel[m]! * panelOpacity;
        r = pr * a;
        g = pg * a;
        b = pb * a;
      }
      if (halo) {
        const h = halo[m]! * haloOpacity;
        if (h > 0) {
          const k = 1 - h;
          r = hr * h + r * k;
          g = hg * h + g * k;
          b = hb * h + b * k;
          a = h + a * k;
        }
      }
      const t = text[m]!;
      if (t > 0) {
        const k = 1 - t;
        r = tr * t + r * k;
        g = tg * t + g * k;
        b = tb * t + b * k;
        a = t + a * k;
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
