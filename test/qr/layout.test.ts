import { describe, expect, it } from "vitest";
import { alignmentPositions, blockDamage, symbolLayout, type EcLevel } from "../../src/qr/layout";
import { encodeMatrix, minimalVersion } from "../../src/qr/matrix";

const MASKS: Array<(i: number, j: number) => boolean> = [
  (i, j) => (i + j) % 2 === 0,
  (i) => i % 2 === 0,
  (_i, j) => j % 3 === 0,
  (i, j) => (i + j) % 3 === 0,
  (i, j) => (Math.floor(i / 2) + Math.floor(j / 3)) % 2 === 0,
  (i, j) => ((i * j) % 2) + ((i * j) % 3) === 0,
  (i, j) => (((i * j) % 2) + ((i * j) % 3)) % 2 === 0,
  (i, j) => (((i + j) % 2) + ((i * j) % 3)) % 2 === 0,
];

/** Reads the byte-mode payload back out of a matrix using only our layout: checks tables and placement. */
function readBack(modules: Uint8Array, version: number, ecLevel: EcLevel): Uint8Array {
  const layout = symbolLayout(version, ecLevel);
  const n = layout.size;
  const at = (r: number, c: number) => modules[r * n + c]!;
  let format = 0;
  const positions: Array<[number, number]> = [];
  for (let i = 0; i <= 5; i++) positions.push([i, 8]);
  positions.push([7, 8], [8, 8], [8, 7]);
  for (let i = 9; i <= 14; i++) positions.push([8, 14 - i]);
  positions.forEach(([r, c], i) => {
    format |= at(r, c) << i;
  });
  const data = (format ^ 0x5412) >> 10;
  expect(data >> 3).toBe({ L: 1, M: 0, Q: 3, H: 2 }[ecLevel]);
  const mask = MASKS[data & 7]!;

  const codewords = new Uint8Array(layout.totalCodewords);
  // Walk the modules in placement order: codewordOfModule gives the codeword; bit order follows the walk.
  const bitsSeen = new Uint8Array(layout.totalCodewords);
  const order: number[] = [];
  for (let right = n - 1; right >= 1; right -= 2) {
    if (right === 6) right = 5;
    const upward = ((right + 1) & 2) === 0;
    for (let vert = 0; vert < n; vert++) {
      const row = upward ? n - 1 - vert : vert;
      for (let j = 0; j < 2; j++) order.push(row * n + right - j);
    }
  }
  for (const index of order) {
    const cw = layout.codewordOfModule[index]!;
    if (cw < 0) continue;
    const r = Math.floor(index / n);
    const c = index % n;
    const bit = at(r, c) ^ (mask(r, c) ? 1 : 0);
    codewords[cw]! |= bit << (7 - bitsSeen[cw]!);
    bitsSeen[cw]!++;
  }
  expect([...bitsSeen].every((b) => b === 8)).toBe(true);

  // De-interleave the data codewords.
  const blocks = layout.blocks.map((b) => new Uint8Array(b.data));
  let k = 0;
  const maxData = Math.max(...layout.blocks.map((b) => b.data));
  for (let i = 0; i < maxData; i++)
    layout.blocks.forEach((b, bi) => {
      if (i < b.data) blocks[bi]![i] = codewords[k++]!;
    });
  const stream = blocks.flatMap((b) => [...b]);
  let pos = 0;
  const read = (bits: number) => {
    let v = 0;
    for (let i = 0; i < bits; i++, pos++) v = (v << 1) | ((stream[pos >> 3]! >> (7 - (pos & 7))) & 1);
    return v;
  };
  expect(read(4)).toBe(0b0100);
  const count = read(version <= 9 ? 8 : 16);
  return Uint8Array.from({ length: count }, () => read(8));
}

describe("symbol layout", () => {
  it("places alignment patterns where the standard's table has them", () => {
    expect(alignmentPositions(1)).toEqual([]);
    expect(alignmentPositions(2)).toEqual([6, 18]);
    expect(alignmentPositions(7)).toEqual([6, 22, 38]);
    expect(alignmentPositions(32)).toEqual([6, 34, 60, 86, 112, 138]);
    expect(alignmentPositions(40)).toEqual([6, 30, 58, 86, 114, 142, 170]);
  });

  it("has the standard's codeword totals", () => {
    // Total codewords per version from ISO/IEC 18004 table 1 (spot checks).
    expect(symbolLayout(1, "M").totalCodewords).toBe(26);
    expect(symbolLayout(5, "H").totalCodewords).toBe(134);
    expect(symbolLayout(10, "H").totalCodewords).toBe(346);
    expect(symbolLayout(40, "L").totalCodewords).toBe(3706);
    expect(symbolLayout(40, "L").dataCodewords).toBe(2956);
    expect(symbolLayout(40, "H").dataCodewords).toBe(1276);
  });

  it("reads every version and level back through our codeword map", () => {
    for (const ecLevel of ["L", "M", "Q", "H"] as const) {
      for (let version = 1; version <= 40; version++) {
        const text = `v${version}${ecLevel} ü-${"x".repeat(version)}`;
        const m = encodeMatrix(text, { ecLevel, version: Math.max(version, minimalVersion(text, ecLevel)!) });
        if (m.version !== version) continue;
        expect(new TextDecoder().decode(readBack(m.modules, version, ecLevel)), `${version}${ecLevel}`).toBe(text);
      }
    }
  });

  it("counts damaged codewords per block", () => {
    const layout = symbolLayout(5, "H");
    const cleared = new Uint8Array(layout.size * layout.size);
    expect(blockDamage(layout, cleared).worstShare).toBe(0);
    cleared[18 * layout.size + 18] = 1;
    const one = blockDamage(layout, cleared);
    expect(one.perBlock.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1);
    cleared[0] = 1;
    expect(blockDamage(layout, cleared).touchesCritical).toBe(true);
  });
});

describe("mask selection", () => {
  it("re-masks exactly like qrcode-generator draws each mask (format bits included)", async () => {
    const { default: qrcode } = await import("qrcode-generator");
    const { remask, formatBits } = await import("../../src/qr/mask");
    const masksSeen = new Set<number>();
    for (const ecLevel of ["L", "M", "Q", "H"] as const) {
      for (const version of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 21, 33, 40]) {
        const text = `m${version}${ecLevel}`;
        const full = qrcode(version as Parameters<typeof qrcode>[0], ecLevel);
        full.addData(text);
        full.make(); // its own mask choice, drawn by the library
        const n = full.getModuleCount();
        const theirs = Uint8Array.from({ length: n * n }, (_, i) => (full.isDark(Math.floor(i / n), i % n) ? 1 : 0));
        let format = 0;
        for (let i = 0; i <= 5; i++) format |= theirs[i * n + 8]! << i;
        format |= (theirs[7 * n + 8]! << 6) | (theirs[8 * n + 8]! << 7) | (theirs[8 * n + 7]! << 8);
        for (let i = 9; i < 15; i++) format |= theirs[8 * n + 14 - i]! << i;
        const mask = ((format ^ 0x5412) >> 10) & 7;
        masksSeen.add(mask);
        expect(formatBits(ecLevel, mask)).toBe(format);
        // Ours starts from mask 0 and must arrive at the library's own drawing of that mask.
        const zero = qrcode(version as Parameters<typeof qrcode>[0], ecLevel);
        zero.addData(text);
        const count = zero.getModuleCount;
        zero.getModuleCount = () => 0;
        zero.make();
        zero.getModuleCount = count;
        const mask0 = Uint8Array.from({ length: n * n }, (_, i) => (zero.isDark(Math.floor(i / n), i % n) ? 1 : 0));
        expect(Buffer.from(remask(mask0, symbolLayout(version, ecLevel), 0, mask)).equals(Buffer.from(theirs)), `${version}${ecLevel} mask ${mask}`).toBe(true);
      }
    }
    expect([...masksSeen].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it("scores with the standard's rules: a checkerboard beats stripes and blocks", async () => {
    const { penalty } = await import("../../src/qr/mask");
    const n = 21;
    const checker = Uint8Array.from({ length: n * n }, (_, i) => (Math.floor(i / n) + (i % n)) % 2);
    const stripes = Uint8Array.from({ length: n * n }, (_, i) => Math.floor(i / n) % 2);
    const dark = new Uint8Array(n * n).fill(1);
    expect(penalty(checker, n)).toBeLessThan(penalty(stripes, n));
    expect(penalty(stripes, n)).toBeLessThan(penalty(dark, n));
    // All dark: N1 = 2 * 21 runs of 21 (19 each), N2 = 400 * 3, N4 = 100.
    expect(penalty(dark, n)).toBe(42 * 19 + 400 * 3 + 100);
  });
});
