/**
 * SVG in and out of the text engine: a laid-out block as an SVG of glyph outlines (never `<text>`: resvg's
 * own text layout misplaces Devanagari matras and drops spaces), for export and for checking our rasteriser
 * against resvg, and rasterising any SVG with resvg (when the entry point provides it). Each glyph's path is
 * defined once and reused with `<use>`, scaled from font units (y up) to pixels (y down).
 *
 * @example
 * const svg = blockSvg(layout, { width: layout.width, height: layout.height, x: 0, y: 0, color: [255, 255, 255] });
 * const { data } = await rasterizePremultiplied(svg);
 */
import type { RgbaImage } from "../../images/types";
import { loadResvg } from "./engine";
import type { BlockLayout } from "./layout";

export type Rgb = [number, number, number];

export interface BlockSvgOptions {
  /** Size of the SVG canvas, px. */
  width: number;
  height: number;
  /** Where the block's top-left goes in the SVG. */
  x: number;
  y: number;
  color: Rgb;
  /** A stroke of `width` px drawn around every glyph beneath the fill (an outline/halo). */
  halo?: { color: Rgb; opacity: number; width: number };
  /** A rounded rectangle filling the whole SVG canvas, beneath the text. */
  panel?: { color: Rgb; opacity: number; radius: number };
}

const n = (v: number) => String(Math.round(v * 100) / 100);
const hex = ([r, g, b]: Rgb) =>
  `#${[r, g, b]
    .map((c) =>
      Math.max(0, Math.min(255, Math.round(c)))
        .toString(16)
        .padStart(2, "0"),
    )
    .join("")}`;

/**
 * The SVG document for a block, optionally with a backing panel and a halo.
 *
 * @example
 * blockSvg(layout, { width: 400, height: 120, x: 12, y: 8, color: [0, 0, 0], panel: { color: [255, 255, 255], opacity: 0.7, radius: 10 } });
 */
export function blockSvg(layout: BlockLayout, o: BlockSvgOptions): string {
  const defs = new Map<string, string>();
  const uses: string[] = [];
  for (const g of layout.glyphs) {
    const { d, ops } = g.font.outlines.glyph(g.gid);
    if (!ops.length) continue;
    const id = `${g.font.key}-${g.gid}`;
    if (!defs.has(id)) defs.set(id, `<path id="${id}" d="${d}"/>`);
    // The scale keeps six significant digits: rounded like the positions it would be off by several percent.
    const k = g.scale.toPrecision(6);
    uses.push(`<use xlink:href="#${id}" transform="matrix(${k} 0 0 -${k} ${n(o.x + g.x)} ${n(o.y + g.y)})"`);
  }
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="${o.width}" height="${o.height}" viewBox="0 0 ${o.width} ${o.height}">`,
    `<defs>${[...defs.values()].join("")}</defs>`,
  ];
  if (o.panel) {
    parts.push(`<rect width="${o.width}" height="${o.height}" rx="${n(o.panel.radius)}" fill="${hex(o.panel.color)}" fill-opacity="${n(o.panel.opacity)}"/>`);
  }
  if (o.halo && uses.length) {
    // Stroke widths are in the glyph's own units (font units), so each use carries its own.
    const strokes = layout.glyphs
      .filter((g) => g.font.outlines.glyph(g.gid).ops.length)
      .map((g, i) => `${uses[i]} stroke-width="${n((2 * o.halo!.width) / g.scale)}"/>`);
    parts.push(`<g fill="${hex(o.halo.color)}" stroke="${hex(o.halo.color)}" stroke-linejoin="round" opacity="${n(o.halo.opacity)}">${strokes.join("")}</g>`);
  }
  parts.push(`<g fill="${hex(o.color)}">${uses.map((u) => `${u}/>`).join("")}</g></svg>`);
  return parts.join("");
}

/**
 * Renders SVG with resvg (configured by the entry point, see ./engine.ts), optionally scaled to `width` px
 * wide. Pixels are premultiplied RGBA, as tiny-skia produces them.
 *
 * @example
 * const { width, height, data } = await rasterizePremultiplied(svg);
 */
export async function rasterizePremultiplied(svg: string, width?: number): Promise<RgbaImage> {
  const { Resvg } = await loadResvg();
  const resvg = await Resvg.async(svg, width ? { fitTo: { mode: "width", value: Math.round(width) } } : {});
  try {
    const rendered = resvg.render();
    try {
      return { width: rendered.width, height: rendered.height, data: rendered.pixels };
    } finally {
      rendered.free();
    }
  } finally {
    resvg.free();
  }
}
