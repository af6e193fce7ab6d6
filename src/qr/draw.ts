/**
 * Matrix (+ logo) -> pixels: the output PNG and the small opaque image the scan check decodes.
 *
 * Geometry: every module is `scale` = floor(size / (modules + 8)) pixels, the same for all modules, so edges
 * stay crisp; the pixels left over go to the quiet zone, split evenly (an odd pixel goes right/bottom). The
 * quiet zone is therefore at least 4 modules and the image exactly size x size.
 *
 * @example
 * const geo = geometry(512, matrix.size);
 * const png = drawPng({ matrix, geo, fg, bg, transparent: false });
 */
import type { Rgb } from "./colors";
import type { LogoPlan } from "./logo";
import type { QrMatrix } from "./matrix";
import { bitDepthFor, encodePngRows, type PaletteEntry, type PngColor } from "../images/codecs";
import { resizePremultiplied, unpremultiply } from "../images/alpha";
import type { RgbaImage } from "../images/types";
import type { ZxingImage } from "./zxing-loader";

export const QUIET_ZONE = 4;

export interface Geometry {
  size: number;
  /** Pixels per module. */
  scale: number;
  /** Left/top quiet zone in pixels. */
  offset: number;
}

/**
 * Module size and quiet-zone offset for an n-module symbol in a size x size image.
 *
 * @example
 * geometry(512, 33); // { size: 512, scale: 12, offset: 58 }
 */
export function geometry(size: number, n: number): Geometry {
  const scale = Math.floor(size / (n + 2 * QUIET_ZONE));
  return { size, scale, offset: Math.floor((size - n * scale) / 2) };
}

export interface DrawInput {
  /** Modules with the logo's modules already cleared. */
  matrix: QrMatrix;
  geo: Geometry;
  fg: Rgb;
  bg: Rgb;
  transparent: boolean;
  logo?: { image: RgbaImage; plan: LogoPlan } | null;
}

/** The logo resized for this geometry and composited over what lies beneath each of its pixels. */
interface PlacedLogo {
  x: number;
  y: number;
  width: number;
  height: number;
  /** RGBA per logo pixel, final. */
  rgba: Uint8Array;
}

function moduleIsDark(input: DrawInput, px: number, py: number): boolean {
  const { matrix, geo } = input;
  const mx = Math.floor((px - geo.offset) / geo.scale);
  const my = Math.floor((py - geo.offset) / geo.scale);
  return px >= geo.offset && py >= geo.offset && mx < matrix.size && my < matrix.size && matrix.modules[my * matrix.size + mx] === 1;
}

/**
 * Where the logo's pixels go and what they look like. Decoders ignore alpha, so the RGB of every pixel is the
 * logo blended over the module colour beneath it; alpha is the logo's own only over a transparent background.
 */
function placeLogo(input: DrawInput, keepAlpha: boolean): PlacedLogo | null {
  if (!input.logo) return null;
  const { image, plan } = input.logo;
  const { scale, offset } = input.geo;
  const width = Math.max(1, Math.round(plan.width * scale));
  const height = Math.max(1, Math.round(plan.height * scale));
  const x = offset + Math.round(plan.left * scale);
  const y = offset + Math.round(plan.top * scale);
  // Premultiplied, so the colour of transparent pixels cannot bleed into the logo's edges.
  const resized = unpremultiply(resizePremultiplied(image, width, height));
  const rgba = new Uint8Array(width * height * 4);
  for (let ly = 0; ly < height; ly++) {
    for (let lx = 0; lx < width; lx++) {
      const p = (ly * width + lx) * 4;
      const a = resized.data[p + 3]!;
      const dark = moduleIsDark(input, x + lx, y + ly);
      const base = dark ? input.fg : input.bg;
      rgba[p] = Math.round((resized.data[p]! * a + base.r * (255 - a)) / 255);
      rgba[p + 1] = Math.round((resized.data[p + 1]! * a + base.g * (255 - a)) / 255);
      rgba[p + 2] = Math.round((resized.data[p + 2]! * a + base.b * (255 - a)) / 255);
      rgba[p + 3] = keepAlpha && !dark ? a : 255;
    }
  }
  return { x, y, width, height, rgba };
}

/**
 * The small opaque RGBA image the scan check decodes (CHECK_SCALE px per module, 4-module quiet zone).
 *
 * @example
 * const image = drawCheckImage({ matrix, geo: checkGeometry(matrix.size, 4), fg, bg, transparent: false });
 */
export function drawCheckImage(input: DrawInput): ZxingImage {
  const { size } = input.geo;
  const data = new Uint8ClampedArray(size * size * 4);
  const { fg, bg } = input;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const c = moduleIsDark(input, x, y) ? fg : bg;
      const p = (y * size + x) * 4;
      data[p] = c.r;
      data[p + 1] = c.g;
      data[p + 2] = c.b;
      data[p + 3] = 255;
    }
  }
  const placed = placeLogo(input, false);
  if (placed) {
    for (let ly = 0; ly < placed.height; ly++) {
      data.set(placed.rgba.subarray(ly * placed.width * 4, (ly + 1) * placed.width * 4), ((placed.y + ly) * size + placed.x) * 4);
    }
  }
  return { width: size, height: size, data };
}

/**
 * Geometry of a check image: `scale` px per module, exactly the quiet zone around.
 *
 * @example
 * checkGeometry(33, 4); // { size: 164, scale: 4, offset: 16 }
 */
export function checkGeometry(n: number, scale: number): Geometry {
  return { size: (n + 2 * QUIET_ZONE) * scale, scale, offset: QUIET_ZONE * scale };
}

/**
 * The output PNG: a 1-bit palette without a logo; with one, a palette while the colours fit in 256 entries,
 * else 8-bit RGB (RGBA when transparent). Lossless either way: logos are not quantised.
 *
 * @example
 * const png = drawPng({ matrix, geo: geometry(512, matrix.size), fg, bg, transparent: true });
 */
export function drawPng(input: DrawInput): Uint8Array {
  const bg: PaletteEntry = [input.bg.r, input.bg.g, input.bg.b, input.transparent ? 0 : 255];
  const fg: PaletteEntry = [input.fg.r, input.fg.g, input.fg.b, 255];
  const placed = placeLogo(input, input.transparent);
  if (!placed) return drawWithoutLogo(input, bg, fg);
  const size = input.geo.size;
  const rows = moduleRows(input);
  const logo = logoPalette(placed, bg, fg);
  if (logo) {
    const bitDepth = bitDepthFor(logo.palette.length);
    const writeRow = indexedRows(rows, placed, logo.indices, bitDepth, size);
    return encodePngRows({ width: size, height: size, color: { kind: "indexed", bitDepth, palette: logo.palette }, writeRow });
  }
  const color: PngColor = { kind: input.transparent ? "rgba" : "rgb" };
  return encodePngRows({ width: size, height: size, color, writeRow: directRows(rows, placed, [bg, fg], input.transparent ? 4 : 3, size) });
}

/** Module index of every pixel column (-1 in the quiet zone). */
function moduleOfColumns({ size, scale, offset }: Geometry, n: number): Int32Array {
  const moduleOfX = new Int32Array(size);
  for (let x = 0; x < size; x++) moduleOfX[x] = x >= offset && x < offset + n * scale ? Math.floor((x - offset) / scale) : -1;
  return moduleOfX;
}

/**
 * No logo: bg = index 0, fg = index 1. The filtered data is built directly: the first pixel row of each
 * module row with filter None, the rows repeating it with filter Up (all zeros), the quiet zone all zeros.
 */
function drawWithoutLogo({ matrix, geo }: DrawInput, bg: PaletteEntry, fg: PaletteEntry): Uint8Array {
  const { size, scale, offset } = geo;
  const n = matrix.size;
  const moduleOfX = moduleOfColumns(geo, n);
  const stride = Math.ceil(size / 8);
  const filtered = new Uint8Array((stride + 1) * size);
  for (let my = 0; my < n; my++) {
    const first = (offset + my * scale) * (stride + 1);
    for (let x = offset; x < offset + n * scale; x++) {
      if (matrix.modules[my * n + moduleOfX[x]!]) filtered[first + 1 + (x >> 3)]! |= 0x80 >> (x & 7);
    }
    for (let r = 1; r < scale; r++) filtered[first + r * (stride + 1)] = 2;
  }
  return encodePngRows({ width: size, height: size, color: { kind: "indexed", bitDepth: 1, palette: [bg, fg] }, filtered });
}

/** Palette index (0 bg, 1 fg) of every pixel of each module row, built once and shared by its pixel rows. */
interface ModuleRows {
  /** The line of pixel row `y`: its module row's, or the quiet zone's. */
  lineOf(y: number): Uint8Array;
}

function moduleRows({ matrix, geo }: DrawInput): ModuleRows {
  const { size, scale, offset } = geo;
  const n = matrix.size;
  const moduleOfX = moduleOfColumns(geo, n);
  const quiet = new Uint8Array(size);
  const lines: Uint8Array[] = [];
  for (let my = 0; my < n; my++) {
    const line = new Uint8Array(size);
    for (let x = offset; x < offset + n * scale; x++) line[x] = matrix.modules[my * n + moduleOfX[x]!]!;
    lines.push(line);
  }
  return { lineOf: (y) => (y >= offset && y < offset + n * scale ? lines[Math.floor((y - offset) / scale)]! : quiet) };
}

/** Palette bg, fg, then the composited logo's colours, and the logo as indices; null past 256 colours. */
function logoPalette(placed: PlacedLogo, bg: PaletteEntry, fg: PaletteEntry): { palette: PaletteEntry[]; indices: Uint8Array } | null {
  const palette: PaletteEntry[] = [bg, fg];
  const indexOf = new Map<number, number>();
  const pack = (r: number, g: number, b: number, a: number) => ((r << 24) | (g << 16) | (b << 8) | a) >>> 0;
  indexOf.set(pack(bg[0], bg[1], bg[2], bg[3]!), 0);
  if (!indexOf.has(pack(fg[0], fg[1], fg[2], 255))) indexOf.set(pack(fg[0], fg[1], fg[2], 255), 1);
  const indices = new Uint8Array(placed.width * placed.height);
  const { rgba } = placed;
  for (let i = 0, p = 0; i < indices.length; i++, p += 4) {
    const a = rgba[p + 3]!;
    // Fully transparent pixels are the (transparent) background whatever their blended RGB.
    const key = a === 0 ? pack(bg[0], bg[1], bg[2], 0) : pack(rgba[p]!, rgba[p + 1]!, rgba[p + 2]!, a);
    let index = indexOf.get(key);
    if (index === undefined) {
      if (palette.length === 256) return null;
      index = palette.length;
      palette.push([rgba[p]!, rgba[p + 1]!, rgba[p + 2]!, a]);
      indexOf.set(key, index);
    }
    indices[i] = index;
  }
  return { palette, indices };
}

type RowWriter = (y: number, out: Uint8Array) => void;

/** Rows of palette indices packed at `bitDepth`, the logo's indices laid over the modules. */
function indexedRows(rows: ModuleRows, placed: PlacedLogo, logoIndex: Uint8Array, bitDepth: number, size: number): RowWriter {
  const indicesOfRow = (y: number, out: Uint8Array): void => {
    out.set(rows.lineOf(y));
    const ly = y - placed.y;
    if (ly >= 0 && ly < placed.height) out.set(logoIndex.subarray(ly * placed.width, (ly + 1) * placed.width), placed.x);
  };
  if (bitDepth === 8) return indicesOfRow;
  const indices = new Uint8Array(size);
  const perByte = 8 / bitDepth;
  return (y, out) => {
    indicesOfRow(y, indices);
    for (let x = 0; x < size; x++) {
      if (indices[x]) out[(x / perByte) | 0]! |= indices[x]! << (8 - bitDepth * ((x % perByte) + 1));
    }
  };
}

/** Rows of RGB or RGBA samples: the module colours, then the logo's pixels over them. */
function directRows(rows: ModuleRows, placed: PlacedLogo, entries: PaletteEntry[], channels: 3 | 4, size: number): RowWriter {
  return (y, out) => {
    const line = rows.lineOf(y);
    for (let x = 0, o = 0; x < size; x++, o += channels) {
      const entry = entries[line[x]!]!;
      out[o] = entry[0];
      out[o + 1] = entry[1];
      out[o + 2] = entry[2];
      if (channels === 4) out[o + 3] = entry[3]!;
    }
    const ly = y - placed.y;
    if (ly < 0 || ly >= placed.height) return;
    for (let lx = 0, o = placed.x * channels, p = ly * placed.width * 4; lx < placed.width; lx++, o += channels, p += 4) {
      out[o] = placed.rgba[p]!;
      out[o + 1] = placed.rgba[p + 1]!;
      out[o + 2] = placed.rgba[p + 2]!;
      if (channels === 4) out[o + 3] = placed.rgba[p + 3]!;
    }
  };
}
