/**
 * Where a logo goes and which modules it hides. The logo is fitted (aspect kept) inside a square whose side
 * is `ratio` x the symbol side (modules only, quiet zone excluded), centred. Only the modules under the
 * logo's visible pixels (alpha >= 1/16), plus a quarter module of pad, are cleared: a round logo hides about
 * 79% of what its square would, and the modules in its transparent corners stay readable.
 *
 * @example
 * const shape = logoShape(decodedLogo);
 * const plan = planLogo(37, 0.3, shape); // plan.cleared: 1 for each module the logo hides
 */
import type { RgbaImage } from "../images/types";

/** Pad around the logo's visible pixels, in modules. */
export const LOGO_MARGIN = 0.25;
/** Alpha at or above which a logo pixel counts as covering what is beneath. */
const VISIBLE_ALPHA = 16;
/** The opacity map is kept at most this many cells per side (max-pooled), whatever the logo's size. */
const SHAPE_CELLS = 256;

/** The logo's opaque area, as a summed-area table over a max-pooled opacity grid. */
export interface LogoShape {
  aspect: number;
  cols: number;
  rows: number;
  /** (cols + 1) x (rows + 1) prefix sums of "some pixel in this cell is visible". */
  integral: Uint32Array;
}

export interface LogoPlan {
  ratio: number;
  /** Logo box in module units (fractional), relative to the symbol's top-left. */
  left: number;
  top: number;
  width: number;
  height: number;
  /** n x n, 1 where a module is cleared to the background. */
  cleared: Uint8Array;
}

/**
 * Summarises where the logo is visible, once per request; planLogo then asks it about any rectangle in O(1).
 *
 * @example
 * const shape = logoShape(decodedLogo); // shape.aspect === width / height
 */
export function logoShape(logo: RgbaImage): LogoShape {
  const factor = Math.max(1, Math.ceil(Math.max(logo.width, logo.height) / SHAPE_CELLS));
  const cols = Math.ceil(logo.width / factor);
  const rows = Math.ceil(logo.height / factor);
  const visible = new Uint8Array(cols * rows);
  for (let y = 0; y < logo.height; y++) {
    const row = Math.floor(y / factor) * cols;
    for (let x = 0; x < logo.width; x++) {
      if (logo.data[(y * logo.width + x) * 4 + 3]! >= VISIBLE_ALPHA) visible[row + Math.floor(x / factor)] = 1;
    }
  }
  const integral = new Uint32Array((cols + 1) * (rows + 1));
  for (let y = 0; y < rows; y++) {
    let rowSum = 0;
    for (let x = 0; x < cols; x++) {
      rowSum += visible[y * cols + x]!;
      integral[(y + 1) * (cols + 1) + x + 1] = integral[y * (cols + 1) + x + 1]! + rowSum;
    }
  }
  return { aspect: logo.width / logo.height, cols, rows, integral };
}

function anyVisible(shape: LogoShape, x0: number, y0: number, x1: number, y1: number): boolean {
  const c0 = Math.max(0, Math.floor(x0));
  const r0 = Math.max(0, Math.floor(y0));
  const c1 = Math.min(shape.cols, Math.ceil(x1));
  const r1 = Math.min(shape.rows, Math.ceil(y1));
  if (c1 <= c0 || r1 <= r0) return false;
  const w = shape.cols + 1;
  const sum = shape.integral[r1 * w + c1]! - shape.integral[r0 * w + c1]! - shape.integral[r1 * w + c0]! + shape.integral[r0 * w + c0]!;
  return sum > 0;
}

/**
 * Places a logo of `ratio` x the symbol side in an n x n symbol and marks the modules it hides.
 *
 * @example
 * planLogo(41, 0.3, shape).cleared; // 1 for each hidden module
 */
export function planLogo(n: number, ratio: number, shape: LogoShape): LogoPlan {
  const box = ratio * n;
  const width = shape.aspect >= 1 ? box : box * shape.aspect;
  const height = shape.aspect >= 1 ? box / shape.aspect : box;
  const left = (n - width) / 2;
  const top = (n - height) / 2;
  const cleared = new Uint8Array(n * n);
  const sx = shape.cols / width;
  const sy = shape.rows / height;
  const rFirst = Math.max(0, Math.floor(top - LOGO_MARGIN));
  const rLast = Math.min(n, Math.ceil(top + height + LOGO_MARGIN));
  const cFirst = Math.max(0, Math.floor(left - LOGO_MARGIN));
  const cLast = Math.min(n, Math.ceil(left + width + LOGO_MARGIN));
  for (let r = rFirst; r < rLast; r++) {
    for (let c = cFirst; c < cLast; c++) {
      const x0 = (c - LOGO_MARGIN - left) * sx;
      const x1 = (c + 1 + LOGO_MARGIN - left) * sx;
      const y0 = (r - LOGO_MARGIN - top) * sy;
      const y1 = (r + 1 + LOGO_MARGIN - top) * sy;
      if (anyVisible(shape, x0, y0, x1, y1)) cleared[r * n + c] = 1;
    }
  }
  return { ratio, left, top, width, height, cleared };
}
