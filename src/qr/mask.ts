/**
 * Mask selection (ISO/IEC 18004 7.8): given a symbol drawn with mask 0, produce the same symbol under each
 * of the 8 masks, score it with the standard's penalty rules N1..N4, and keep the best.
 *
 * Why here and not in the encoder: the encoder (npm `qrcode`, matrix.ts) is asked for mask 0 only, so the
 * mask follows the standard's scores as this module computes them on typed arrays, checked against an
 * independent encoder's drawing of every mask (test/qr/layout.test.ts). The encoder used before,
 * qrcode-generator, spent ~75% of its time on its own mask search, whose first rule counts neighbours
 * rather than runs.
 *
 * @example
 * const best = chooseMask(mask0Modules, symbolLayout(4, "M")); // { modules, mask: 5 }
 */
import type { EcLevel, SymbolLayout } from "./layout";

const EC_FORMAT_BITS: Record<EcLevel, number> = { L: 1, M: 0, Q: 3, H: 2 };

/**
 * Whether mask `k` flips the module at (row, col).
 *
 * @example
 * maskBit(0, 2, 4); // true: (row + col) % 2 === 0
 */
export function maskBit(k: number, row: number, col: number): boolean {
  switch (k) {
    case 0:
      return (row + col) % 2 === 0;
    case 1:
      return row % 2 === 0;
    case 2:
      return col % 3 === 0;
    case 3:
      return (row + col) % 3 === 0;
    case 4:
      return (Math.floor(row / 2) + Math.floor(col / 3)) % 2 === 0;
    case 5:
      return ((row * col) % 2) + ((row * col) % 3) === 0;
    case 6:
      return (((row * col) % 2) + ((row * col) % 3)) % 2 === 0;
    default:
      return (((row + col) % 2) + ((row * col) % 3)) % 2 === 0;
  }
}

/**
 * The 15 format bits for a level and mask: BCH(15,5) with generator 0x537, XORed with 0x5412.
 *
 * @example
 * formatBits("M", 0); // 0b101010000010010
 */
export function formatBits(ecLevel: EcLevel, mask: number): number {
  const data = (EC_FORMAT_BITS[ecLevel] << 3) | mask;
  let rem = data;
  for (let i = 0; i < 10; i++) rem = (rem << 1) ^ ((rem >>> 9) * 0x537);
  return ((data << 10) | (rem & 0x3ff)) ^ 0x5412;
}

/**
 * Writes both copies of the format information (and the dark module) into `modules`.
 *
 * @example
 * writeFormat(modules, 21, formatBits("H", 3));
 */
export function writeFormat(modules: Uint8Array, n: number, bits: number): void {
  const set = (row: number, col: number, bit: number) => {
    modules[row * n + col] = (bits >>> bit) & 1;
  };
  for (let i = 0; i <= 5; i++) set(i, 8, i);
  set(7, 8, 6);
  set(8, 8, 7);
  set(8, 7, 8);
  for (let i = 9; i < 15; i++) set(8, 14 - i, i);
  for (let i = 0; i < 8; i++) set(8, n - 1 - i, i);
  for (let i = 8; i < 15; i++) set(n - 15 + i, 8, i);
  modules[(n - 8) * n + 8] = 1;
}

/**
 * Same symbol under mask `to`, from one drawn with mask `from`.
 *
 * @example
 * const masked = remask(mask0, symbolLayout(4, "M"), 0, 5);
 */
export function remask(modules: Uint8Array, layout: SymbolLayout, from: number, to: number): Uint8Array {
  const n = layout.size;
  const out = modules.slice();
  if (from !== to) {
    for (let row = 0; row < n; row++) {
      for (let col = 0; col < n; col++) {
        const i = row * n + col;
        if (layout.isFunction[i]) continue;
        if (maskBit(from, row, col) !== maskBit(to, row, col)) out[i] = out[i]! ^ 1;
      }
    }
  }
  writeFormat(out, n, formatBits(layout.ecLevel, to));
  return out;
}

/**
 * ISO/IEC 18004 penalty score N1 + N2 + N3 + N4 (lower is better).
 *
 * @example
 * penalty(modules, 33); // e.g. 412
 */
export function penalty(modules: Uint8Array, n: number): number {
  let score = 0;
  let dark = 0;
  // N1 (runs of 5+) and N3 (1:1:3:1:1 finder look-alikes next to 4 light modules), rows then columns.
  for (let pass = 0; pass < 2; pass++) {
    for (let a = 0; a < n; a++) {
      let run = 0;
      let last = -1;
      let window = 0; // the last 11 modules as bits, light = 0, outside the symbol = light
      for (let b = 0; b < n + 4; b++) {
        const v = b < n ? modules[pass === 0 ? a * n + b : b * n + a]! : 0;
        if (b < n) {
          if (pass === 0) dark += v;
          if (v === last) run++;
          else {
            if (run >= 5) score += run - 2;
            run = 1;
            last = v;
          }
        }
        window = ((window << 1) | v) & 0x7ff;
        if (b >= 6 && (window === 0b10111010000 || window === 0b00001011101)) score += 40;
      }
      if (run >= 5) score += run - 2;
    }
  }
  // N2: 2x2 blocks of one colour.
  for (let r = 0; r < n - 1; r++) {
    for (let c = 0; c < n - 1; c++) {
      const v = modules[r * n + c]!;
      if (v === modules[r * n + c + 1] && v === modules[(r + 1) * n + c] && v === modules[(r + 1) * n + c + 1]) score += 3;
    }
  }
  // N4: 10 points per 5% the dark share strays from 50%.
  score += Math.floor(Math.abs((dark * 20) / (n * n) - 10)) * 10;
  return score;
}

/** The best of the 8 masks for a symbol drawn with mask 0. */
export function chooseMask(mask0: Uint8Array, layout: SymbolLayout): { modules: Uint8Array; mask: number } {
  let best: { modules: Uint8Array; mask: number; score: number } | null = null;
  for (let k = 0; k < 8; k++) {
    const modules = remask(mask0, layout, 0, k);
    const score = penalty(modules, layout.size);
    if (!best || score < best.score) best = { modules, mask: k, score };
  }
  return { modules: best!.modules, mask: best!.mask };
}
