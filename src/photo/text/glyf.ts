/**
 * Glyph outlines from a TrueType font's `glyf` table, as SVG path data in font units (y up).
 *
 * HarfBuzz can draw outlines too, but only through JS callbacks registered as WebAssembly function pointers,
 * which workerd cannot create (see ./harfbuzz.ts). The glyf format is small: contours of on- and off-curve
 * points (quadratic Béziers with implied on-curve midpoints) and composite glyphs made of transformed
 * components. The test suite checks these outlines against harfbuzzjs's own `glyphToPath` by rendering both.
 *
 * @example
 * const outlines = parseGlyf(ttfBytes);
 * const { d, xMin, yMax } = outlines.glyph(42); // d: "M120 0L..." in font units
 */

export interface GlyphOutline {
  /** Path ops (MOVE/LINE/QUAD/CLOSE below) in font units, y up; empty for blank glyphs such as the space. */
  ops: Float64Array;
  /** The same as SVG path data. */
  readonly d: string;
  /** Bounding box from the glyph header, font units (all 0 for blank glyphs). */
  xMin: number;
  yMin: number;
  xMax: number;
  yMax: number;
}

export interface GlyphOutlines {
  glyph(gid: number): GlyphOutline;
}

interface Point {
  x: number;
  y: number;
  on: boolean;
}

const ON_CURVE = 0x01;
const X_SHORT = 0x02;
const Y_SHORT = 0x04;
const REPEAT = 0x08;
const X_SAME_OR_POSITIVE = 0x10;
const Y_SAME_OR_POSITIVE = 0x20;

const ARGS_ARE_WORDS = 0x0001;
const ARGS_ARE_XY = 0x0002;
const HAVE_SCALE = 0x0008;
const MORE_COMPONENTS = 0x0020;
const HAVE_XY_SCALE = 0x0040;
const HAVE_2X2 = 0x0080;
const SCALED_COMPONENT_OFFSET = 0x0800;

const EMPTY: GlyphOutline = { ops: new Float64Array(0), d: "", xMin: 0, yMin: 0, xMax: 0, yMax: 0 };
const MAX_COMPONENT_DEPTH = 8;

/**
 * Reads the table directory and returns an outline reader that caches each glyph's path.
 *
 * @example
 * const { d } = parseGlyf(bytes).glyph(gid);
 */
export function parseGlyf(bytes: Uint8Array): GlyphOutlines {
  const font = readTables(bytes);
  const { view, glyf, numGlyphs, offsetOf } = font;
  const cache = new Map<number, GlyphOutline>();
  return {
    glyph(gid) {
      let outline = cache.get(gid);
      if (!outline) {
        const start = gid < numGlyphs ? offsetOf(gid) : 0;
        const blank = gid >= numGlyphs || offsetOf(gid + 1) <= start;
        const ops: number[] = [];
        if (!blank) for (const contour of contoursOf(font, gid, 0)) contourOps(contour, ops);
        let d: string | undefined;
        outline = blank
          ? EMPTY
          : {
              ops: Float64Array.from(ops),
              get d() {
                return (d ??= pathData(ops));
              },
              xMin: view.getInt16(glyf + start + 2),
              yMin: view.getInt16(glyf + start + 4),
              xMax: view.getInt16(glyf + start + 6),
              yMax: view.getInt16(glyf + start + 8),
            };
        cache.set(gid, outline);
      }
      return outline;
    },
  };
}

/** The font's bytes with the offsets the outline reader needs. */
interface FontTables {
  bytes: Uint8Array;
  view: DataView;
  /** Offset of the glyf table. */
  glyf: number;
  numGlyphs: number;
  /** Offset of a glyph's data within glyf (from loca, short or long form). */
  offsetOf(gid: number): number;
}

function readTables(bytes: Uint8Array): FontTables {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tables = new Map<string, number>();
  const numTables = view.getUint16(4);
  for (let i = 0; i < numTables; i++) {
    const rec = 12 + i * 16;
    const name = String.fromCharCode(bytes[rec]!, bytes[rec + 1]!, bytes[rec + 2]!, bytes[rec + 3]!);
    tables.set(name, view.getUint32(rec + 8));
  }
  const [head, loca, glyf, maxp] = ["head", "loca", "glyf", "maxp"].map((name) => {
    const offset = tables.get(name);
    if (offset === undefined) throw new Error(`not a TrueType-outline font (no ${name} table); ship TTF files, not CFF/OTF or WOFF`);
    return offset;
  }) as [number, number, number, number];
  const longOffsets = view.getInt16(head + 50) === 1;
  const numGlyphs = view.getUint16(maxp + 4);
  const offsetOf = (gid: number) => (longOffsets ? view.getUint32(loca + gid * 4) : view.getUint16(loca + gid * 2) * 2);
  return { bytes, view, glyf, numGlyphs, offsetOf };
}

/** A glyph's contours in font units: its own points, or its components' placed by their transforms. */
function contoursOf(font: FontTables, gid: number, depth: number): Point[][] {
  const { view, glyf, numGlyphs, offsetOf } = font;
  if (gid >= numGlyphs || depth > MAX_COMPONENT_DEPTH) return [];
  const start = offsetOf(gid);
  if (offsetOf(gid + 1) <= start) return [];
  let p = glyf + start;
  const numberOfContours = view.getInt16(p);
  p += 10;
  if (numberOfContours >= 0) return simpleContours(font, p, numberOfContours);

  const contours: Point[][] = [];
  let flags: number;
  do {
    flags = view.getUint16(p);
    const component = view.getUint16(p + 2);
    p += 4;
    let arg1: number, arg2: number;
    if (flags & ARGS_ARE_WORDS) {
      arg1 = view.getInt16(p);
      arg2 = view.getInt16(p + 2);
      p += 4;
    } else {
      arg1 = view.getInt8(p);
      arg2 = view.getInt8(p + 1);
      p += 2;
    }
    let [a, b, c, d] = [1, 0, 0, 1];
    if (flags & HAVE_SCALE) {
      a = d = view.getInt16(p) / 16384;
      p += 2;
    } else if (flags & HAVE_XY_SCALE) {
      a = view.getInt16(p) / 16384;
      d = view.getInt16(p + 2) / 16384;
      p += 4;
    } else if (flags & HAVE_2X2) {
      [a, b, c, d] = [view.getInt16(p) / 16384, view.getInt16(p + 2) / 16384, view.getInt16(p + 4) / 16384, view.getInt16(p + 6) / 16384];
      p += 8;
    }
    // Point-matching anchors (args are point numbers, not offsets) do not occur in the fonts we ship.
    let [dx, dy] = flags & ARGS_ARE_XY ? [arg1, arg2] : [0, 0];
    if (flags & SCALED_COMPONENT_OFFSET) [dx, dy] = [a * dx + c * dy, b * dx + d * dy];
    for (const contour of contoursOf(font, component, depth + 1)) {
      contours.push(contour.map((pt) => ({ x: a * pt.x + c * pt.y + dx, y: b * pt.x + d * pt.y + dy, on: pt.on })));
    }
  } while (flags & MORE_COMPONENTS);
  return contours;
}

/** A simple glyph's contours: end points, flags (run-length coded), then delta-coded x and y. */
function simpleContours({ bytes, view }: FontTables, p: number, count: number): Point[][] {
  const ends: number[] = [];
  for (let i = 0; i < count; i++) ends.push(view.getUint16(p + i * 2));
  p += count * 2;
  p += 2 + view.getUint16(p); // skip hinting instructions
  const total = count ? ends[count - 1]! + 1 : 0;
  const flags = new Uint8Array(total);
  for (let i = 0; i < total; ) {
    const f = bytes[p++]!;
    flags[i++] = f;
    if (f & REPEAT) for (let r = bytes[p++]!; r > 0 && i < total; r--) flags[i++] = f;
  }
  const coords = (short: number, same: number) => {
    const out = new Array<number>(total);
    let value = 0;
    for (let i = 0; i < total; i++) {
      const f = flags[i]!;
      if (f & short) value += f & same ? bytes[p++]! : -bytes[p++]!;
      else if (!(f & same)) {
        value += view.getInt16(p);
        p += 2;
      }
      out[i] = value;
    }
    return out;
  };
  const xs = coords(X_SHORT, X_SAME_OR_POSITIVE);
  const ys = coords(Y_SHORT, Y_SAME_OR_POSITIVE);
  const contours: Point[][] = [];
  let first = 0;
  for (const end of ends) {
    const contour: Point[] = [];
    for (let i = first; i <= end; i++) contour.push({ x: xs[i]!, y: ys[i]!, on: (flags[i]! & ON_CURVE) !== 0 });
    if (contour.length) contours.push(contour);
    first = end + 1;
  }
  return contours;
}

/** Path opcodes in GlyphOutline.ops: MOVE x y, LINE x y, QUAD cx cy x y, CLOSE. */
export const MOVE = 0;
export const LINE = 1;
export const QUAD = 2;
export const CLOSE = 3;

/** One closed contour as path ops: quadratic segments, with the on-curve midpoint implied between two off-curve points. */
function contourOps(points: Point[], ops: number[]): void {
  const n = points.length;
  const firstOn = points.findIndex((pt) => pt.on);
  // A contour of only off-curve points starts at the midpoint of its first two.
  const start: Point = firstOn >= 0 ? points[firstOn]! : { x: (points[0]!.x + points[1 % n]!.x) / 2, y: (points[0]!.y + points[1 % n]!.y) / 2, on: true };
  const offset = firstOn >= 0 ? firstOn : 0;
  ops.push(MOVE, start.x, start.y);
  let control: Point | null = null;
  for (let k = 1; k <= n; k++) {
    const pt = points[(offset + k) % n]!;
    if (pt.on) {
      if (control) ops.push(QUAD, control.x, control.y, pt.x, pt.y);
      else ops.push(LINE, pt.x, pt.y);
      control = null;
    } else if (control) {
      ops.push(QUAD, control.x, control.y, (control.x + pt.x) / 2, (control.y + pt.y) / 2);
      control = pt;
    } else {
      control = pt;
    }
  }
  if (control) ops.push(QUAD, control.x, control.y, start.x, start.y);
  ops.push(CLOSE);
}

const num = (v: number) => String(Math.round(v * 100) / 100);

/** SVG path data for path ops, formatted as HarfBuzz's draw API would give it. */
function pathData(ops: ArrayLike<number>): string {
  let d = "";
  for (let i = 0; i < ops.length; ) {
    const op = ops[i++];
    if (op === MOVE) d += `M${num(ops[i++]!)} ${num(ops[i++]!)}`;
    else if (op === LINE) d += `L${num(ops[i++]!)} ${num(ops[i++]!)}`;
    else if (op === QUAD) d += `Q${num(ops[i++]!)} ${num(ops[i++]!)} ${num(ops[i++]!)} ${num(ops[i++]!)}`;
    else d += "Z";
  }
  return d;
}
