/**
 * Procedural surface materials: a small tileable fractal noise (built once per scene from its seed and
 * sampled bilinearly, so a 2048 px floor costs a few lookups per pixel) and one pattern function per
 * material: marble veins, wood grain, linen weave, sand ripples, snow sparkle, slate, stone, moss, pool
 * tiles and satin folds.
 *
 * @example
 * const tile = new NoiseTile("life-kitchen");
 * const t = surfacePattern("marble", tile, u, v); // 0 = base colour, 1 = pattern colour, < 0 = highlight
 */
import { seeded } from "./raster";
import type { Surface } from "./style";

const SIZE = 256;
const MASK = SIZE - 1;

/** Tileable value-noise fBm, 256 x 256, values in about 0..1. */
export class NoiseTile {
  readonly data = new Float32Array(SIZE * SIZE);

  constructor(seed: string) {
    const rnd = seeded(seed);
    let amplitude = 0.5;
    for (const period of [4, 8, 16, 32, 64]) {
      const lattice = new Float32Array(period * period);
      for (let i = 0; i < lattice.length; i++) lattice[i] = rnd();
      const cell = SIZE / period;
      for (let y = 0; y < SIZE; y++) {
        const gy = y / cell;
        const y0 = Math.floor(gy);
        const ty = fade(gy - y0);
        const r0 = (y0 % period) * period;
        const r1 = ((y0 + 1) % period) * period;
        for (let x = 0; x < SIZE; x++) {
          const gx = x / cell;
          const x0 = Math.floor(gx);
          const tx = fade(gx - x0);
          const c0 = x0 % period;
          const c1 = (x0 + 1) % period;
          const a = lattice[r0 + c0]! + (lattice[r0 + c1]! - lattice[r0 + c0]!) * tx;
          const b = lattice[r1 + c0]! + (lattice[r1 + c1]! - lattice[r1 + c0]!) * tx;
          this.data[y * SIZE + x] = this.data[y * SIZE + x]! + (a + (b - a) * ty) * amplitude;
        }
      }
      amplitude *= 0.5;
    }
    // Normalise to 0..1 whatever the seed drew.
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of this.data) (lo = Math.min(lo, v)), (hi = Math.max(hi, v));
    for (let i = 0; i < this.data.length; i++) this.data[i] = (this.data[i]! - lo) / (hi - lo || 1);
  }

  /** Noise at (u, v) in tile pixels, wrapping. */
  at(u: number, v: number): number {
    const fu = u - Math.floor(u / SIZE) * SIZE;
    const fv = v - Math.floor(v / SIZE) * SIZE;
    const x0 = fu | 0;
    const y0 = fv | 0;
    const tx = fu - x0;
    const ty = fv - y0;
    const x1 = (x0 + 1) & MASK;
    const y1 = (y0 + 1) & MASK;
    const d = this.data;
    const a = d[y0 * SIZE + x0]! + (d[y0 * SIZE + x1]! - d[y0 * SIZE + x0]!) * tx;
    const b = d[y1 * SIZE + x0]! + (d[y1 * SIZE + x1]! - d[y1 * SIZE + x0]!) * tx;
    return a + (b - a) * ty;
  }
}

/** x to the 64th by squaring (Math.pow is several times slower in a per-pixel loop). */
function pow64(x: number): number {
  const x2 = x * x;
  const x4 = x2 * x2;
  const x16 = x4 * x4 * x4 * x4;
  const x32 = x16 * x16;
  return x32 * x32;
}

function fade(t: number): number {
  return t * t * (3 - 2 * t);
}

/** Integer hash to 0..1, for grain and sparkle that must not repeat with the tile. */
export function grain(x: number, y: number): number {
  let h = Math.imul(x | 0, 0x9e3779b1) ^ Math.imul(y | 0, 0x85ebca77);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae3d);
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}

/**
 * How much of the pattern colour a surface shows at surface coordinates (u, v) (about 1 unit = 1 px at
 * the front of the floor); negative values ask for a highlight instead. `px`, `py` are the output pixel,
 * for grain that must stay pixel-sized.
 */
export function surfacePattern(surface: Surface, tile: NoiseTile, u: number, v: number, px: number, py: number): number {
  switch (surface) {
    case "marble": {
      // A few long, thin, branching veins over a faintly clouded stone.
      const turb = tile.at(u * 0.08, v * 0.08) * 2.6 + tile.at(u * 0.5 + 91, v * 0.5 + 17) * 0.35;
      const t = u * 0.0035 + v * 0.0022 + turb;
      const vein = pow64(1 - Math.abs(Math.sin(t * Math.PI)));
      const t2 = u * 0.002 - v * 0.004 + tile.at(u * 0.12 + 40, v * 0.12 + 60) * 3;
      const f64 = pow64(1 - Math.abs(Math.sin(t2 * Math.PI)));
      const fine = f64 * f64 * 0.45;
      const cloud = (tile.at(u * 0.03 + 40, v * 0.03) - 0.5) * 0.22;
      return vein * 0.6 + fine + cloud;
    }
    case "wood": {
      // Boards run across the table; the grain follows them, warped, with a tint per board.
      const board = Math.floor(v * 0.006);
      const t = v * 0.03 + tile.at(u * 0.004 + board * 37, v * 0.03) * 3.5;
      const rings = 0.5 + 0.5 * Math.sin(t * Math.PI * 2);
      const fibres = tile.at(u * 0.05 + 13, v * 1.5 + board * 11) - 0.5;
      const seam = (((v * 0.006) % 1) + 1) % 1 < 0.012 ? 0.7 : 0;
      const tint = (grain(board, 7) - 0.5) * 0.35;
      return 0.12 + rings * rings * rings * 0.28 + fibres * 0.3 + seam + tint;
    }
    case "linen": {
      // Threads about 2.5 units apart each way; each thread's tone drifts along its length (slubs), and
      // over and under crossings alternate, so it reads as woven cloth rather than a plaid of lines.
      const row = Math.floor(v / 2.5);
      const col = Math.floor(u / 2.5);
      const weft = tile.at(u * 0.45 + row * 13.1, row * 7.7) - 0.5;
      const warp = tile.at(col * 7.7, v * 0.45 + col * 13.1) - 0.5;
      const weave = (row + col) & 1 ? 0.06 : -0.06;
      return 0.3 + (weft + warp) * 0.55 + weave + (grain(px, py) - 0.5) * 0.2;
    }
    case "sand": {
      const ripples = Math.sin(v * 0.045 + tile.at(u * 0.02, v * 0.02) * 9) * 0.2;
      return 0.3 + ripples + (tile.at(u * 0.3, v * 0.3) - 0.5) * 0.5 + (grain(px, py) - 0.5) * 0.7;
    }
    case "snow": {
      const bumps = (tile.at(u * 0.12, v * 0.12) - 0.5) * 0.9;
      const sparkle = grain(px, py) > 0.9985 ? -2.5 : 0;
      return 0.2 + bumps + sparkle;
    }
    case "slate":
      return 0.3 + (tile.at(u * 0.15, v * 0.15) - 0.5) * 0.9 + (tile.at(u * 2, v * 2) - 0.5) * 0.25 + (grain(px, py) - 0.5) * 0.2;
    case "stone": {
      const blobs = tile.at(u * 0.06, v * 0.06);
      const mottle = tile.at(u * 0.5 + 30, v * 0.5) - 0.5;
      return 0.25 + (blobs - 0.5) * 1.1 + mottle * 0.35 + (grain(px, py) - 0.5) * 0.25;
    }
    case "moss": {
      const clumps = tile.at(u * 0.1, v * 0.1);
      return 0.15 + (clumps - 0.5) * 1.4 + (tile.at(u * 1.2, v * 1.2) - 0.5) * 0.6 + (grain(px, py) - 0.5) * 0.35;
    }
    case "tile": {
      const su = (((u / 180) % 1) + 1) % 1;
      const sv = (((v / 180) % 1) + 1) % 1;
      const grout = su < 0.025 || sv < 0.025 ? 1 : 0;
      return grout * 0.9 + (tile.at(u * 0.05, v * 0.05) - 0.5) * 0.15;
    }
    case "satin": {
      const folds = Math.sin(u * 0.012 + tile.at(u * 0.03, v * 0.03) * 7 + v * 0.004);
      return 0.3 - folds * 0.55;
    }
    default:
      return 0;
  }
}
