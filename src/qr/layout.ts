/**
 * The geometry of a QR symbol (ISO/IEC 18004): which modules are function patterns, and which codeword and
 * error-correction block each data module belongs to. The renderer uses it to predict, before decoding
 * anything, how many codewords per block a centre logo destroys, so it can pick a version whose error
 * correction absorbs the damage instead of guessing from the logo's area.
 *
 * @example
 * const layout = symbolLayout(7, "H");
 * layout.blockOfModule[row * layout.size + col]; // -1 for function modules, else the RS block index
 */

export type EcLevel = "L" | "M" | "Q" | "H";

/** Error-correction codewords per block, index = version (1..40); from the standard's table 9. */
const EC_PER_BLOCK: Record<EcLevel, readonly number[]> = {
  L: [
    0, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
    30, 30,
  ],
  M: [
    0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    28, 28,
  ],
  Q: [
    0, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
    30, 30,
  ],
  H: [
    0, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
    30, 30,
  ],
};

/** Number of Reed-Solomon blocks, index = version (1..40). */
const BLOCKS: Record<EcLevel, readonly number[]> = {
  L: [0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],
  M: [0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49],
  Q: [0, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68],
  H: [0, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81],
};

export interface BlockInfo {
  /** Data codewords in this block. */
  data: number;
  /** Error-correction codewords in this block. */
  ec: number;
}

export interface SymbolLayout {
  version: number;
  ecLevel: EcLevel;
  /** Modules per side: 4 * version + 17. */
  size: number;
  /** Non-zero where a module belongs to a function pattern: CRITICAL (finder, separator, timing, format,
   * version) or ALIGNMENT. */
  isFunction: Uint8Array;
  /** Per module: the codeword index in transmission order, or -1 (function module or remainder bit). */
  codewordOfModule: Int32Array;
  /** Per module: the RS block its codeword belongs to, or -1. */
  blockOfModule: Int16Array;
  blocks: BlockInfo[];
  totalCodewords: number;
  /** Data codewords over all blocks (the capacity before mode headers). */
  dataCodewords: number;
}

/**
 * Centre coordinates of alignment patterns for a version (shared by rows and columns).
 *
 * @example
 * alignmentPositions(7); // [6, 22, 38]
 */
export function alignmentPositions(version: number): number[] {
  if (version === 1) return [];
  const count = Math.floor(version / 7) + 2;
  const size = version * 4 + 17;
  // Spacing is even and equal except the first gap; version 32 is the one irregular entry in the table.
  const step = version === 32 ? 26 : Math.ceil((version * 4 + 4) / (count * 2 - 2)) * 2;
  const positions = [6];
  for (let pos = size - 7; positions.length < count; pos -= step) positions.splice(1, 0, pos);
  return positions;
}

/**
 * Error-correction blocks for a version and level, short blocks first as they are interleaved.
 *
 * @example
 * blockStructure(5, "H", 134); // 2 blocks of 11 data + 2 of 12, 22 EC codewords each
 */
export function blockStructure(version: number, ecLevel: EcLevel, totalCodewords: number): BlockInfo[] {
  const ec = EC_PER_BLOCK[ecLevel][version]!;
  const count = BLOCKS[ecLevel][version]!;
  const shortLength = Math.floor(totalCodewords / count);
  const longBlocks = totalCodewords % count;
  const blocks: BlockInfo[] = [];
  for (let b = 0; b < count; b++) blocks.push({ data: shortLength - ec + (b >= count - longBlocks ? 1 : 0), ec });
  return blocks;
}

const layoutCache = new Map<string, SymbolLayout>();

/** The layout of one version and level (cached: 160 possible layouts, each computed once). */
export function symbolLayout(version: number, ecLevel: EcLevel): SymbolLayout {
  if (!Number.isInteger(version) || version < 1 || version > 40) throw new RangeError(`QR version must be 1..40, got ${version}`);
  const key = `${version}${ecLevel}`;
  const cached = layoutCache.get(key);
  if (cached) return cached;

  const size = version * 4 + 17;
  const isFunction = functionPatternMask(version);
  let dataModules = 0;
  for (const f of isFunction) if (!f) dataModules++;
  const totalCodewords = Math.floor(dataModules / 8);
  const blocks = blockStructure(version, ecLevel, totalCodewords);

  // Transmission order -> block: data codewords are interleaved column-wise over the blocks (short blocks
  // run out first), then the EC codewords the same way.
  const blockOfCodeword = new Int16Array(totalCodewords);
  let k = 0;
  const maxData = Math.max(...blocks.map((b) => b.data));
  for (let i = 0; i < maxData; i++) {
    blocks.forEach((b, index) => {
      if (i < b.data) blockOfCodeword[k++] = index;
    });
  }
  for (let i = 0; i < blocks[0]!.ec; i++) {
    for (let index = 0; index < blocks.length; index++) blockOfCodeword[k++] = index;
  }

  const codewordOfModule = new Int32Array(size * size).fill(-1);
  const blockOfModule = new Int16Array(size * size).fill(-1);
  // The zigzag: two-module-wide columns from the right, alternating up and down, skipping the timing column.
  let bit = 0;
  const totalBits = totalCodewords * 8;
  for (let right = size - 1; right >= 1; right -= 2) {
    if (right === 6) right = 5;
    const upward = ((right + 1) & 2) === 0;
    for (let vert = 0; vert < size; vert++) {
      const row = upward ? size - 1 - vert : vert;
      for (let j = 0; j < 2; j++) {
        const index = row * size + right - j;
        if (isFunction[index] || bit >= totalBits) continue;
        const codeword = bit >> 3;
        codewordOfModule[index] = codeword;
        blockOfModule[index] = blockOfCodeword[codeword]!;
        bit++;
      }
    }
  }

  const layout: SymbolLayout = {
    version,
    ecLevel,
    size,
    isFunction,
    codewordOfModule,
    blockOfModule,
    blocks,
    totalCodewords,
    dataCodewords: blocks.reduce((sum, b) => sum + b.data, 0),
  };
  layoutCache.set(key, layout);
  return layout;
}

/** Function-module kinds in `isFunction`: anything that is not data. */
export const CRITICAL = 1;
export const ALIGNMENT = 2;

function functionPatternMask(version: number): Uint8Array {
  const size = version * 4 + 17;
  const mask = new Uint8Array(size * size);
  const fill = (row0: number, col0: number, rows: number, cols: number, kind: number) => {
    for (let r = Math.max(0, row0); r < Math.min(size, row0 + rows); r++) {
      for (let c = Math.max(0, col0); c < Math.min(size, col0 + cols); c++) mask[r * size + c] = kind;
    }
  };
  const positions = alignmentPositions(version);
  const last = positions.length - 1;
  positions.forEach((r, i) => {
    positions.forEach((c, j) => {
      // The three corners that collide with finder patterns carry no alignment pattern.
      if ((i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0)) return;
      fill(r - 2, c - 2, 5, 5, ALIGNMENT);
    });
  });
  // Finders with separators and the format-information strips next to them (9x9, 9x8, 8x9), timing
  // patterns and version information: a decoder cannot do without any of these, so a logo must not touch them.
  fill(0, 0, 9, 9, CRITICAL);
  fill(0, size - 8, 9, 8, CRITICAL);
  fill(size - 8, 0, 8, 9, CRITICAL);
  fill(6, 0, 1, size, CRITICAL);
  fill(0, 6, size, 1, CRITICAL);
  if (version >= 7) {
    fill(0, size - 11, 6, 3, CRITICAL);
    fill(size - 11, 0, 3, 6, CRITICAL);
  }
  return mask;
}

/**
 * Codewords damaged per block when the modules in `cleared` are forced light, and how that compares with
 * what Reed-Solomon can correct (floor(ec / 2) errors per block, since a decoder does not know where).
 * Without `modules` every codeword touched counts (an upper bound that needs no matrix); with the final
 * matrix only codewords that lose a dark module count, which is exactly what a clean decoder sees.
 *
 * @example
 * const damage = blockDamage(symbolLayout(9, "H"), cleared);
 * damage.worstShare; // 0.62: the worst block uses 62% of its correction capacity
 */
export function blockDamage(
  layout: SymbolLayout,
  cleared: Uint8Array,
  modules?: Uint8Array,
): { perBlock: number[]; worstShare: number; touchesCritical: boolean } {
  const seen = new Uint8Array(layout.totalCodewords);
  const perBlock = new Array<number>(layout.blocks.length).fill(0);
  let touchesCritical = false;
  for (let i = 0; i < cleared.length; i++) {
    if (!cleared[i]) continue;
    const codeword = layout.codewordOfModule[i]!;
    if (codeword < 0) {
      if (layout.isFunction[i] === CRITICAL) touchesCritical = true;
      continue;
    }
    if (seen[codeword] || (modules && !modules[i])) continue;
    seen[codeword] = 1;
    perBlock[layout.blockOfModule[i]!]!++;
  }
  let worstShare = 0;
  perBlock.forEach((n, b) => {
    worstShare = Math.max(worstShare, n / Math.floor(layout.blocks[b]!.ec / 2));
  });
  return { perBlock, worstShare, touchesCritical };
}
