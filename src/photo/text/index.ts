/**
 * Area B's text engine: overlay and marketing text composited by the service itself, shaped by HarfBuzz
 * (conjuncts, the pre-base short-i matra, real spaces) and drawn from the shipped Noto fonts' outlines by
 * our own anti-aliased rasteriser. Latin (with ₹) and Devanagari; wraps at spaces, shrinks to fit, never
 * draws outside the canvas, and adds a panel or halo where the scene behind would make it hard to read.
 *
 * The entry point must call configureTextEngine() first (see ./engine.ts).
 *
 * @example
 * await drawText(photo, "दिवाली सेल ₹499", { x: 64, y: 900, width: 896, height: 100 }, { fontSize: 72, color: [255, 255, 255], weight: 700, align: "center", anchor: "bottom" });
 */
import type { RgbaImage } from "../../images/types";
import { loadFonts } from "./engine";
import { layoutBlock, type LayoutBox } from "./layout";
import { backingFor, chooseBacking, measureBackground, type Rect } from "./legibility";
import { paintBlock, paintOnto } from "./paint";
import { shapeLine, unsupportedCharacters as missingIn } from "./shape";
import { unpremultiply } from "../../images";
import { rasterizePremultiplied, type Rgb } from "./svg";

export { configureTextEngine, isTextEngineConfigured, type FontKey, type TextEngineSources } from "./engine";

export interface TextStyle {
  color: [number, number, number];
  weight?: 400 | 700;
  align?: "left" | "center" | "right";
}

export type TextBox = LayoutBox;

export interface DrawTextOptions extends TextStyle {
  fontSize: number;
  minFontSize?: number;
  maxLines?: number;
  anchor?: "top" | "center" | "bottom";
  legibility?: "auto" | "panel" | "outline" | "none";
}

const round2 = (v: number) => Math.round(v * 100) / 100;

/**
 * Lays out `text` into a box: wraps at spaces (never inside a grapheme cluster; a single word wider than the
 * box is scaled down, never cut), shrinks the font from `fontSize` down to `minFontSize` (default half of it,
 * at least 8 px) until it fits `maxWidth` x `maxHeight` and `maxLines`, and below that if it still does not.
 * Returns the rendered block (tight around the ink, transparent background) and the layout.
 *
 * @example
 * const { image, fontSize, lines } = await renderTextBlock("Diwali Sale ₹499", { maxWidth: 800, maxHeight: 200, fontSize: 96 }, { color: [255, 255, 255], weight: 700 });
 */
export async function renderTextBlock(text: string, box: TextBox, style: TextStyle): Promise<{ image: RgbaImage; fontSize: number; lines: string[] }> {
  const fonts = await loadFonts(style.weight ?? 400);
  const layout = layoutBlock(fonts, text, box, style.align ?? "left");
  const result = { fontSize: round2(layout.fontSize), lines: layout.lines };
  if (!layout.glyphs.length) return { image: { width: 0, height: 0, data: new Uint8Array(0) }, ...result };
  return { image: paintBlock(layout, style.color as Rgb), ...result };
}

/**
 * Draws a text block onto `canvas` (mutating it) inside `rect`, anchored by `anchor` ("top" | "center" |
 * "bottom" within rect, horizontally per `align`), and keeps it legible: "auto" measures how busy and how
 * contrasty the pixels behind are and adds a rounded semi-opaque panel (black or white, whichever contrasts
 * with the text) or a halo; "panel" / "outline" / "none" force one. The part of `rect` outside the canvas is
 * ignored. Returns the rectangle actually covered (panel or halo included), always inside the canvas.
 *
 * @example
 * const covered = await drawText(photo, "Fresh roast", { x: 40, y: 40, width: 600, height: 160 }, { fontSize: 64, color: [20, 20, 20], anchor: "top" });
 */
export async function drawText(canvas: RgbaImage, text: string, rect: Rect, options: DrawTextOptions): Promise<Rect & { fontSize: number; lines: string[] }> {
  const x0 = Math.max(0, Math.round(rect.x));
  const y0 = Math.max(0, Math.round(rect.y));
  const w = Math.min(canvas.width, Math.round(rect.x + rect.width)) - x0;
  const h = Math.min(canvas.height, Math.round(rect.y + rect.height)) - y0;
  const empty = {
    x: Math.min(x0, canvas.width),
    y: Math.min(y0, canvas.height),
    width: 0,
    height: 0,
    fontSize: round2(options.fontSize),
    lines: [] as string[],
  };
  if (w < 1 || h < 1) return empty;

  const mode = options.legibility ?? "auto";
  // Room for a panel is kept even when "auto" ends up adding none, so the text sits in the same place either way.
  const room = mode === "none" ? 0 : Math.max(1, Math.min(Math.round(options.fontSize * 0.3), Math.floor(Math.min(w, h) * 0.15)));
  const fonts = await loadFonts(options.weight ?? 400);
  const align = options.align ?? "left";
  const layout = layoutBlock(
    fonts,
    text,
    { maxWidth: w - 2 * room, maxHeight: h - 2 * room, fontSize: options.fontSize, minFontSize: options.minFontSize, maxLines: options.maxLines },
    align,
  );
  if (!layout.glyphs.length) return { ...empty, fontSize: round2(layout.fontSize), lines: layout.lines };

  const bx = align === "left" ? x0 + room : align === "right" ? x0 + w - room - layout.width : x0 + Math.round((w - layout.width) / 2);
  const anchor = options.anchor ?? "top";
  const by = anchor === "top" ? y0 + room : anchor === "bottom" ? y0 + h - room - layout.height : y0 + Math.round((h - layout.height) / 2);

  const color = options.color as Rgb;
  const around = { x: bx - room, y: by - room, width: layout.width + 2 * room, height: layout.height + 2 * room };
  const stats = mode === "none" ? null : measureBackground(canvas, around, color);
  const backing = mode === "auto" ? chooseBacking(stats!) : mode;
  const margin =
    backing === "panel"
      ? Math.min(room, Math.max(2, Math.round(layout.fontSize * 0.4)))
      : backing === "outline"
        ? Math.min(room, Math.max(2, Math.ceil(layout.fontSize * 0.07)))
        : 0;
  const covered = clip({ x: bx - margin, y: by - margin, width: layout.width + 2 * margin, height: layout.height + 2 * margin }, canvas);
  const tone = stats ? backingFor(color, stats) : null;
  paintOnto(canvas, layout, covered, bx, by, {
    color,
    panel: backing === "panel" ? { color: tone!.color, opacity: tone!.opacity, radius: Math.max(2, layout.fontSize * 0.25) } : undefined,
    halo: backing === "outline" ? { color: tone!.color, opacity: 0.85, width: margin } : undefined,
  });
  return { ...covered, fontSize: round2(layout.fontSize), lines: layout.lines };
}

/**
 * Rasterises an SVG document string to RGBA (straight alpha) at `width` px wide, height by its aspect ratio,
 * with resvg. Needs `resvg` in configureTextEngine (Node has it; the Worker leaves it out to stay small).
 * Text inside the SVG is not shaped: draw text with drawText or renderTextBlock.
 *
 * @example
 * const product = await rasterizeSvg('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle cx="5" cy="5" r="4"/></svg>', 512);
 */
export async function rasterizeSvg(svg: string, width: number): Promise<RgbaImage> {
  return unpremultiply(await rasterizePremultiplied(svg, width));
}

/**
 * Characters of `text` that neither shipped font can draw (emoji, CJK, ...), so callers can refuse them
 * with a clear message instead of drawing empty boxes.
 *
 * @example
 * await unsupportedCharacters("Sale 🎉"); // ["🎉"]
 */
export async function unsupportedCharacters(text: string, weight: 400 | 700 = 400): Promise<string[]> {
  return missingIn(await loadFonts(weight), text);
}

/** One glyph of shapeText's result, positions in em (multiply by the font size). */
export interface ShapedGlyphInfo {
  font: "sans" | "devanagari";
  /** Glyph id in that font; 0 would be .notdef (the font lacks the character). */
  gid: number;
  /** UTF-16 index in `text` of the first character of the glyph's cluster. */
  cluster: number;
  x: number;
  y: number;
  advance: number;
}

/**
 * Shapes one line as drawText would (runs itemized by script, each shaped by HarfBuzz with its font), for
 * inspection and tests: glyph order, clusters and positions.
 *
 * @example
 * const { glyphs } = await shapeText("कि"); // the matra ि comes first, left of क
 */
export async function shapeText(text: string, weight: 400 | 700 = 400): Promise<{ glyphs: ShapedGlyphInfo[]; width: number }> {
  const fonts = await loadFonts(weight);
  const line = shapeLine(fonts, text);
  const glyphs = line.glyphs.map((g) => ({
    font: g.font === fonts.devanagari ? ("devanagari" as const) : ("sans" as const),
    gid: g.gid,
    cluster: g.cluster,
    x: g.x,
    y: g.y,
    advance: g.advance,
  }));
  return { glyphs, width: line.width };
}

/**
 * Loads HarfBuzz and the fonts of the given weights ahead of the first request (optional: everything also
 * loads on first use).
 *
 * @example
 * await preloadTextEngine(); // at server start, after configureTextEngine
 */
export async function preloadTextEngine(weights: (400 | 700)[] = [400, 700]): Promise<void> {
  await Promise.all(weights.map((w) => loadFonts(w)));
}

function clip(r: Rect, canvas: RgbaImage): Rect {
  const x = Math.max(0, r.x);
  const y = Math.max(0, r.y);
  return { x, y, width: Math.max(0, Math.min(canvas.width, r.x + r.width) - x), height: Math.max(0, Math.min(canvas.height, r.y + r.height) - y) };
}
