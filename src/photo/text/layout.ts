/**
 * Line breaking and fitting: words are split at spaces only (so never inside a grapheme cluster), lines are
 * filled greedily and then balanced, and the font shrinks step by step from `fontSize` until the block fits
 * the box. Shaping does not depend on the size (positions are in em), so each distinct line is shaped once
 * and every size reuses it.
 *
 * @example
 * const layout = layoutBlock(fonts, "Diwali Sale ₹499", { maxWidth: 600, maxHeight: 200, fontSize: 64 }, "center");
 * layout.glyphs; // px positions inside a width x height box that holds all the ink
 */
import type { LoadedFont } from "./engine";
import { shapeLine, type FontSet, type ShapedLine } from "./shape";

export interface LayoutBox {
  maxWidth: number;
  maxHeight: number;
  fontSize: number;
  minFontSize?: number;
  maxLines?: number;
  /** Baseline-to-baseline distance as a multiple of the font size (default 1.2, or 1.45 with Devanagari, whose marks reach far above and below). */
  lineHeight?: number;
}

export type Align = "left" | "center" | "right";

/** A glyph in block pixels: (x, y) is its origin on the baseline, y down; scale = px per font unit. */
export interface GlyphPlacement {
  font: LoadedFont;
  gid: number;
  x: number;
  y: number;
  scale: number;
}

export interface BlockLayout {
  fontSize: number;
  lines: string[];
  /** The ink's bounding box rounded out by one pixel for anti-aliasing; glyphs are relative to its top-left. */
  width: number;
  height: number;
  glyphs: GlyphPlacement[];
}

const SHRINK = 0.94;
const NO_BREAK_SPACES = "\u00a0\u2007\u202f";
// A space followed by a combining mark or a joiner is the base of that grapheme cluster: no break there.
const BREAKABLE_SPACE = new RegExp(`[^\\S\\n${NO_BREAK_SPACES}]+(?![\\p{M}\\u200c\\u200d])`, "u");

/** Tokens that must not start a line: dashes, bars and closing punctuation stay with the word before. */
const GLUED = /^[\p{Pd}\p{Pe}\p{Pf}|:;,.!?।॥%]+$/u;

/**
 * Paragraphs (explicit line breaks) of words; blank lines and repeated spaces collapse, and a token such as
 * "—" or "!" stays with the word before it.
 *
 * @example
 * wordsOf("Sale — ₹499\nदिवाली"); // [["Sale —", "₹499"], ["दिवाली"]]
 */
export function wordsOf(text: string): string[][] {
  return text
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((paragraph) =>
      paragraph
        .split(BREAKABLE_SPACE)
        .filter(Boolean)
        .reduce<string[]>((words, token) => {
          if (words.length && GLUED.test(token)) words[words.length - 1] += ` ${token}`;
          else words.push(token);
          return words;
        }, []),
    )
    .filter((words) => words.length > 0);
}

function greedy(paragraphs: string[][], maxEm: number, measure: (s: string) => number): string[] {
  const lines: string[] = [];
  for (const words of paragraphs) {
    let current = words[0]!;
    for (const word of words.slice(1)) {
      const candidate = `${current} ${word}`;
      if (measure(candidate) <= maxEm) current = candidate;
      else {
        lines.push(current);
        current = word;
      }
    }
    lines.push(current);
  }
  return lines;
}

/** Narrows the wrap width as long as the line count stays the same, so a two-line title is two similar lines. */
function balanced(paragraphs: string[][], maxEm: number, measure: (s: string) => number): string[] {
  const lines = greedy(paragraphs, maxEm, measure);
  if (lines.length < 2) return lines;
  let low = Math.max(...paragraphs.flat().map(measure));
  let high = Math.max(...lines.map(measure));
  let best = lines;
  for (let i = 0; i < 10 && high - low > 0.01; i++) {
    const mid = (low + high) / 2;
    const attempt = greedy(paragraphs, mid, measure);
    if (attempt.length === lines.length) {
      best = attempt;
      high = mid;
    } else low = mid;
  }
  return best;
}

function place(shaped: ShapedLine[], size: number, align: Align, lineHeight: number | undefined): BlockLayout {
  const anyDeva = shaped.some((l) => l.usesDevanagari);
  const pitch = (lineHeight ?? (anyDeva ? 1.45 : 1.2)) * size;
  const advance = Math.max(...shaped.map((l) => l.width)) * size;
  const ascent = Math.max(...shaped.flatMap((l) => l.glyphs.map((g) => g.font.hb.ascender / g.font.hb.upem)), 0) * size;
  const glyphs: GlyphPlacement[] = [];
  let [minX, minY, maxX, maxY] = [Infinity, Infinity, -Infinity, -Infinity];
  shaped.forEach((line, i) => {
    const lineWidth = line.width * size;
    const left = align === "left" ? 0 : align === "right" ? advance - lineWidth : (advance - lineWidth) / 2;
    const baseline = ascent + i * pitch;
    for (const g of line.glyphs) {
      const scale = size / g.font.hb.upem;
      const placed = { font: g.font, gid: g.gid, x: left + g.x * size, y: baseline - g.y * size, scale };
      glyphs.push(placed);
      const box = g.font.outlines.glyph(g.gid);
      if (!box.ops.length) continue;
      minX = Math.min(minX, placed.x + box.xMin * scale);
      maxX = Math.max(maxX, placed.x + box.xMax * scale);
      minY = Math.min(minY, placed.y - box.yMax * scale);
      maxY = Math.max(maxY, placed.y - box.yMin * scale);
    }
  });
  const lines = shaped.map((l) => l.text);
  if (minX === Infinity) return { fontSize: size, lines, width: 0, height: 0, glyphs: [] };
  const [x0, y0] = [Math.floor(minX) - 1, Math.floor(minY) - 1];
  for (const g of glyphs) {
    g.x -= x0;
    g.y -= y0;
  }
  return { fontSize: size, lines, width: Math.ceil(maxX) + 1 - x0, height: Math.ceil(maxY) + 1 - y0, glyphs };
}

/** Font sizes to try: from fontSize down to minFontSize, then (last resort, never cutting text) smaller still. */
function sizes(fontSize: number, minFontSize: number): number[] {
  const out: number[] = [];
  for (let s = fontSize; s > minFontSize; s *= SHRINK) out.push(s);
  out.push(minFontSize);
  for (let s = minFontSize * 0.9; s >= 1; s *= 0.9) out.push(s);
  return out;
}

/**
 * Wraps and shrinks `text` until it fits the box: every line at most maxWidth, at most maxLines lines, the
 * ink at most maxWidth x maxHeight. Below minFontSize it keeps shrinking rather than cut text off.
 *
 * @example
 * const { fontSize, lines } = layoutBlock(fonts, "A long slogan", { maxWidth: 300, maxHeight: 120, fontSize: 48 }, "left");
 */
export function layoutBlock(fonts: FontSet, text: string, box: LayoutBox, align: Align): BlockLayout {
  if (!(box.fontSize > 0) || !Number.isFinite(box.fontSize)) throw new RangeError(`fontSize must be a positive number, got ${box.fontSize}`);
  const maxLines = Math.max(1, Math.floor(box.maxLines ?? Infinity));
  let paragraphs = wordsOf(text);
  // More explicit lines than allowed: the breaks give way (joined with spaces) rather than text being dropped.
  if (paragraphs.length > maxLines) paragraphs = [paragraphs.flat()];
  const fontSize = Math.max(1, box.fontSize);
  if (!paragraphs.length || !(box.maxWidth >= 1) || !(box.maxHeight >= 1)) return { fontSize, lines: [], width: 0, height: 0, glyphs: [] };
  const cache = new Map<string, ShapedLine>();
  const shape = (s: string) => {
    let line = cache.get(s);
    if (!line) cache.set(s, (line = shapeLine(fonts, s)));
    return line;
  };
  const measure = (s: string) => shape(s).width;
  // Candidate lines are measured as their words plus spaces (each word shaped once), not shaped whole:
  // shaping every candidate would cost quadratic time in a long paragraph. Chosen lines are shaped exactly.
  const space = measure(" ");
  const estimate = (s: string) => {
    const parts = s.split(" ");
    return parts.reduce((sum, part) => sum + measure(part), 0) + (parts.length - 1) * space;
  };
  const minFontSize = Math.min(fontSize, Math.max(1, box.minFontSize ?? Math.max(8, fontSize * 0.5)));
  let last: BlockLayout | null = null;
  for (const size of sizes(fontSize, minFontSize)) {
    const maxEm = box.maxWidth / size;
    const lines = balanced(paragraphs, maxEm, estimate);
    if (lines.length > maxLines || lines.some((l) => measure(l) > maxEm)) continue;
    last = place(lines.map(shape), size, align, box.lineHeight);
    if (last.width <= box.maxWidth && last.height <= box.maxHeight) return last;
  }
  // Only reached for boxes a few pixels wide: return the smallest attempt rather than nothing.
  return last ?? place(greedy(paragraphs, Infinity, estimate).map(shape), 1, align, box.lineHeight);
}
