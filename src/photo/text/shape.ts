/**
 * Itemizes a line of text into runs by script/font and shapes each run with HarfBuzz. Devanagari code points
 * (U+0900–U+097F, U+A8E0–U+A8FF, Vedic extensions U+1CD0–U+1CFF) use Noto Sans Devanagari with script Deva
 * and language hi; everything else uses Noto Sans (which has ₹ U+20B9) as Latin. Spaces, joiners and
 * combining marks belong to the run they sit in, so a space between two Hindi words is shaped by the
 * Devanagari font and keeps its real advance, and ZWJ/ZWNJ stay with the conjunct they control.
 *
 * @example
 * const line = shapeLine(await loadFonts(400), "दिवाली सेल ₹499");
 * line.width; // in em (multiply by the font size in px)
 */
import type { LoadedFont } from "./engine";
import type { HarfBuzz } from "./harfbuzz";

/** A glyph placed on a line, in em units: x from the line's start, y up from the baseline. */
export interface PositionedGlyph {
  font: LoadedFont;
  gid: number;
  /** UTF-16 index in the line's text of the cluster the glyph belongs to. */
  cluster: number;
  x: number;
  y: number;
  advance: number;
}

export interface ShapedLine {
  text: string;
  glyphs: PositionedGlyph[];
  /** Sum of the advances, em. */
  width: number;
  usesDevanagari: boolean;
  usesSans: boolean;
}

export interface FontSet {
  hb: HarfBuzz;
  sans: LoadedFont;
  devanagari: LoadedFont;
}

type Script = "deva" | "latn" | "neutral";

function scriptOf(cp: number): Script {
  if ((cp >= 0x0900 && cp <= 0x097f) || (cp >= 0xa8e0 && cp <= 0xa8ff) || (cp >= 0x1cd0 && cp <= 0x1cff)) return "deva";
  if (cp <= 0x20 || cp === 0xa0 || cp === 0x200c || cp === 0x200d || cp === 0x25cc || (cp >= 0x0300 && cp <= 0x036f)) return "neutral";
  return "latn";
}

/**
 * Runs of one script, neutral characters (spaces, joiners, combining marks) joined to the run before them,
 * or to the first run when they lead. Offsets are UTF-16 indices.
 *
 * @example
 * itemize("Sale दिवाली"); // [{ script: "latn", start: 0, end: 5 }, { script: "deva", start: 5, end: 11 }]
 */
export function itemize(text: string): { script: "deva" | "latn"; start: number; end: number }[] {
  const runs: { script: "deva" | "latn"; start: number; end: number }[] = [];
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i)!;
    const size = cp > 0xffff ? 2 : 1;
    const script = scriptOf(cp);
    const last = runs[runs.length - 1];
    if (script === "neutral") {
      if (last) last.end = i + size;
    } else if (last && last.script === script) {
      last.end = i + size;
    } else {
      runs.push({ script, start: last ? i : 0, end: i + size }); // leading neutrals join the first run
    }
    i += size;
  }
  if (!runs.length && text.length) runs.push({ script: "latn", start: 0, end: text.length });
  return runs;
}

/**
 * Shapes one line (no line breaks inside) into positioned glyphs.
 *
 * @example
 * const { glyphs, width } = shapeLine(fonts, "विचार कि हिंदी");
 */
export function shapeLine(fonts: FontSet, text: string): ShapedLine {
  const glyphs: PositionedGlyph[] = [];
  let pen = 0;
  let usesDevanagari = false;
  let usesSans = false;
  for (const run of itemize(text)) {
    const deva = run.script === "deva";
    const font = deva ? fonts.devanagari : fonts.sans;
    usesDevanagari ||= deva;
    usesSans ||= !deva;
    const shaped = fonts.hb.shape(font.hb, text.slice(run.start, run.end), deva ? { script: "Deva", language: "hi" } : { script: "Latn", language: "en" });
    const upem = font.hb.upem;
    for (const g of shaped) {
      glyphs.push({ font, gid: g.gid, cluster: run.start + g.cluster, x: pen + g.xOffset / upem, y: g.yOffset / upem, advance: g.xAdvance / upem });
      pen += g.xAdvance / upem;
    }
  }
  return { text, glyphs, width: pen, usesDevanagari, usesSans };
}

/**
 * Characters that neither shipped font can draw (they would come out as empty boxes), e.g. emoji or CJK.
 * Callers can reject such text up front instead of drawing tofu.
 *
 * @example
 * unsupportedCharacters(fonts, "Sale 🎉"); // ["🎉"]
 */
export function unsupportedCharacters(fonts: FontSet, text: string): string[] {
  const missing = new Set<string>();
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp <= 0x20 || cp === 0x200c || cp === 0x200d || /\s/.test(ch)) continue;
    const font = scriptOf(cp) === "deva" ? fonts.devanagari : fonts.sans;
    if (fonts.hb.glyphFor(font.hb, cp) === 0) missing.add(ch);
  }
  return [...missing];
}
