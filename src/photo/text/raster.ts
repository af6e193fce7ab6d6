/**
 * Scan conversion of glyph outlines into anti-aliased coverage, and the layers drawn with it (halo, panel).
 *
 * Glyphs are rasterised here rather than by resvg so the Worker does not have to carry resvg's wasm just
 * for text: a Worker with it and the fonts would pass the 3 MB Free-plan limit. The
 * method is exact-area coverage accumulation (as in font-rs and stb_truetype): every edge adds its signed
 * area to the cells it crosses, a running sum along each row gives the winding-weighted coverage, clamped
 * to 1 (nonzero fill, as TrueType requires). Quadratic curves are flattened adaptively. The tests compare
 * the result with resvg's rendering of the same glyphs.
 *
 * @example
 * const mask = rasterizeGlyphs(layout.glyphs, layout.width, layout.height, 0, 0); // Float32Array coverage 0..1
 */
import { CLOSE, LINE, MOVE, QUAD } from "./glyf";
import type { GlyphPlacement } from "./layout";

/** Coverage per pixel, 0..1, row-major. */
export interface Mask {
  width: number;
  height: number;
  data: Float32Array;
}

/** Adds one edge's signed area to the accumulation buffer (stride = width + 2 absorbs the right edge). */
function edge(acc: Float32Array, stride: number, width: number, height: number, x0: number, y0: number, x1: number, y1: number): void {
  if (y0 === y1) return;
  let dir = 1;
  if (y0 > y1) {
    dir = -1;
    [x0, y0, x1, y1] = [x1, y1, x0, y0];
  }
  const dxdy = (x1 - x0) / (y1 - y0);
  let x = x0;
  let top = y0;
  if (top < 0) {
    x -= top * dxdy;
    top = 0;
  }
  const bottom = Math.min(height, y1);
  for (let y = Math.floor(top); y < bottom; y++) {
    const row = y * stride;
    const dy = Math.min(y + 1, y1) - Math.max(y, top);
    const xnext = x + dxdy * dy;
    const d = dy * dir;
    // Left of the mask counts in column 0 (everything to its right is inside); right of it lands in padding.
    const xa = Math.max(0, Math.min(width, Math.min(x, xnext)));
    const xb = Math.max(0, Math.min(width, Math.max(x, xnext)));
    const x0i = Math.floor(xa);
    const x1i = Math.ceil(xb);
    if (x1i <= x0i + 1) {
      const xmf = 0.5 * (xa + xb) - x0i;
      acc[row + x0i]! += d - d * xmf;
      acc[row + x0i + 1]! += d * xmf;
    } else {
      const s = 1 / (xb - xa);
      const x0f = xa - x0i;
      const a0 = 0.5 * s * (1 - x0f) * (1 - x0f);
      const x1f = xb - x1i + 1;
      const am = 0.5 * s * x1f * x1f;
      acc[row + x0i]! += d * a0;
      if (x1i === x0i + 2) acc[row + x0i + 1]! += d * (1 - a0 - am);
      else {
        const a1 = s * (1.5 - x0f);
        acc[row + x0i + 1]! += d * (a1 - a0);
        for (let xi = x0i + 2; xi < x1i - 1; xi++) acc[row + xi]! += d * s;
        const a2 = a1 + (x1i - x0i - 3) * s;
        acc[row + x1i - 1]! += d * (1 - a2 - am);
      }
      acc[row + x1i]! += d * am;
    }
    x = xnext;
  }
}

/**
 * Coverage of the glyphs, each placed at (offsetX + g.x, offsetY + g.y) on a width x height mask.
 *
 * @example
 * rasterizeGlyphs(layout.glyphs, 400, 120, 12, 8).data[0]; // 0: nothing at the corner
 */
export function rasterizeGlyphs(glyphs: GlyphPlacement[], width: number, height: number, offsetX: number, offsetY: number): Mask {
  const stride = width + 2;
  const acc = new Float32Array(stride * height + 2);
  for (const g of glyphs) {
    const ops = g.font.outlines.glyph(g.gid).ops;
    if (!ops.length) continue;
    const ox = offsetX + g.x;
    const oy = offsetY + g.y;
    const k = g.scale;
    let [cx, cy, sx, sy] = [0, 0, 0, 0];
    for (let i = 0; i < ops.length; ) {
      const op = ops[i++];
      if (op === MOVE) {
        cx = sx = ox + ops[i++]! * k;
        cy = sy = oy - ops[i++]! * k;
      } else if (op === LINE) {
        const x = ox + ops[i++]! * k;
        const y = oy - ops[i++]! * k;
        edge(acc, stride, width, height, cx, cy, x, y);
        [cx, cy] = [x, y];
      } else if (op === QUAD) {
        const qx = ox + ops[i++]! * k;
        const qy = oy - ops[i++]! * k;
        const x = ox + ops[i++]! * k;
        const y = oy - ops[i++]! * k;
        const devx = cx - 2 * qx + x;
        const devy = cy - 2 * qy + y;
        const devsq = devx * devx + devy * devy;
        if (devsq < 0.333) edge(acc, stride, width, height, cx, cy, x, y);
        else {
          const n = 1 + Math.floor(Math.sqrt(Math.sqrt(3 * devsq)));
          let [px, py] = [cx, cy];
          for (let j = 1; j <= n; j++) {
            const t = j / n;
            const u = 1 - t;
            const nx = u * u * cx + 2 * u * t * qx + t * t * x;
            const ny = u * u * cy + 2 * u * t * qy + t * t * y;
            edge(acc, stride, width, height, px, py, nx, ny);
            [px, py] = [nx, ny];
          }
        }
        [cx, cy] = [x, y];
      } else if (op === CLOSE) {
        edge(acc, stride, width, height, cx, cy, sx, sy);
        [cx, cy] = [sx, sy];
      }
    }
  }
  const data = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    let sum = 0;
    for (let x = 0, i = y * stride, o = y * width; x < width; x++) {
      sum += acc[i + x]!;
      data[o + x] = Math.min(1, Math.abs(sum));
    }
  }
  return { width, height, data };
}

/**
 * A halo: coverage that reaches `radius` px beyond the glyphs, with a soft one-pixel edge. Distances are
 * exact Euclidean ones (so the halo is round, not boxy) from the pixels the glyphs mostly cover, computed in
 * two passes bounded by the radius: the vertical distance to the nearest such pixel in each column, then the
 * minimum of dx² + dy² along each row.
 *
 * @example
 * const halo = dilate(textMask, 6);
 */
export function dilate(mask: Mask, radius: number): Mask {
  const { width, height } = mask;
  const reach = Math.ceil(radius + 1);
  const none = 0xffff;
  const vertical = new Uint16Array(width * height).fill(none);
  for (let x = 0; x < width; x++) {
    let last = -none;
    for (let y = 0; y < height; y++) {
      const i = y * width + x;
      if (mask.data[i]! >= 0.4) last = y;
      if (y - last <= reach) vertical[i] = y - last;
    }
    last = none + height;
    for (let y = height - 1; y >= 0; y--) {
      const i = y * width + x;
      if (mask.data[i]! >= 0.4) last = y;
      if (last - y < vertical[i]!) vertical[i] = last - y;
    }
  }
  const data = new Float32Array(width * height);
  const far = (reach + 1) * (reach + 1);
  for (let y = 0; y < height; y++) {
    const row = y * width;
    for (let x = 0; x < width; x++) {
      let best = far;
      // Outward from dx = 0; once dx² alone reaches the best distance nothing further can beat it.
      for (let dx = 0; dx <= reach && dx * dx < best; dx++) {
        const left = x - dx >= 0 ? vertical[row + x - dx]! : none;
        const right = x + dx < width ? vertical[row + x + dx]! : none;
        const dy = left < right ? left : right;
        if (dy !== none && dx * dx + dy * dy < best) best = dx * dx + dy * dy;
      }
      const halo = best >= far ? 0 : Math.min(1, Math.max(0, radius + 0.5 - Math.sqrt(best)));
      data[row + x] = Math.max(mask.data[row + x]!, halo);
    }
  }
  return { width, height, data };
}

/**
 * Coverage of a rounded rectangle filling a width x height mask, anti-aliased at the corners.
 *
 * @example
 * roundedRect(300, 80, 12).data[0]; // 0: the very corner is outside the rounding
 */
export function roundedRect(width: number, height: number, radius: number): Mask {
  const r = Math.max(0, Math.min(radius, width / 2, height / 2));
  const data = new Float32Array(width * height).fill(1);
  const corner = Math.ceil(r);
  for (let y = 0; y < Math.min(corner, height); y++) {
    for (let x = 0; x < Math.min(corner, width); x++) {
      // Distance from this pixel's centre to the corner circle's centre, turned into coverage.
      const dx = r - (x + 0.5);
      const dy = r - (y + 0.5);
      const a = dx > 0 && dy > 0 ? Math.min(1, Math.max(0, r + 0.5 - Math.hypot(dx, dy))) : 1;
      for (const [cx, cy] of [
        [x, y],
        [width - 1 - x, y],
        [x, height - 1 - y],
        [width - 1 - x, height - 1 - y],
      ] as const)
        data[cy * width + cx] = a;
    }
  }
  return { width, height, data };
}
