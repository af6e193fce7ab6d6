/**
 * The per-scanline work of the streaming PNG decoder (png-decode.ts): undo a filter, convert a scanline of
 * any colour type and bit depth to 8-bit RGBA, and shrink rows with an alpha-weighted box filter. Plain loops
 * over typed arrays; per row nothing is allocated but typed-array views.
 */

/** The image facts a scanline needs to become RGBA. */
export interface PngColour {
  width: number;
  height: number;
  /** Bits per sample: 1, 2, 4, 8 or 16. */
  depth: number;
  /** 0 grey, 2 RGB, 3 palette, 4 grey + alpha, 6 RGBA. */
  colourType: number;
  /** Palette as RGBA (tRNS applied), 256 entries; null for colour types other than 3. */
  palette: Uint8Array | null;
  paletteSize: number;
  /** tRNS for colour types 0 and 2: the transparent sample value(s) at the image's bit depth. */
  key: number[] | null;
}

/**
 * The Error every corrupt-PNG path throws.
 *
 * @example
 * throw corruptPng("its first chunk is not IHDR"); // "The PNG is corrupt: its first chunk is not IHDR."
 */
export function corruptPng(what: string): Error {
  return new Error(`The PNG is corrupt: ${what}.`);
}

/** Undoes a scanline filter in place (`row` and `prev` start with bpp zero bytes: no first-pixel case). */
export function unfilter(type: number, row: Uint8Array, prev: Uint8Array, bpp: number): void {
  const end = row.length;
  switch (type) {
    case 1:
      for (let i = bpp; i < end; i++) row[i] = row[i]! + row[i - bpp]!;
      return;
    case 2:
      for (let i = bpp; i < end; i++) row[i] = row[i]! + prev[i]!;
      return;
    case 3:
      for (let i = bpp; i < end; i++) row[i] = row[i]! + ((row[i - bpp]! + prev[i]!) >> 1);
      return;
    case 4:
      for (let i = bpp; i < end; i++) {
        const a = row[i - bpp]!;
        const b = prev[i]!;
        const c = prev[i - bpp]!;
        const pa = Math.abs(b - c);
        const pb = Math.abs(a - c);
        const pc = Math.abs(a + b - c - c);
        row[i] = row[i]! + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
      }
  }
}

/** Whether two arrays of the same length hold the same bytes; 4 at a time when both are 4-aligned. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  const n = a.length;
  let i = 0;
  if (n >= 64 && ((a.byteOffset | b.byteOffset) & 3) === 0) {
    if (a[0] !== b[0] || a[n - 1] !== b[n - 1]) return false; // most rows differ at once: skip the views
    const words = n >> 2;
    const wa = new Int32Array(a.buffer, a.byteOffset, words);
    const wb = new Int32Array(b.buffer, b.byteOffset, words);
    for (; i < words; i++) if (wa[i] !== wb[i]) return false;
    i = words << 2;
  }
  for (; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** 16-bit sample to 8 bits, rounded: equals Math.round(v / 257) for every v. */
const to8 = (v: number) => (v * 255 + 32895) >>> 16;

/** Writes one unfiltered scanline (its first byte at `offset` in `row`) to `width` RGBA pixels in `dst`. */
export type RowConverter = (row: Uint8Array, offset: number, dst: Uint8Array) => void;

/**
 * The converter for one image's colour type, bit depth, palette and tRNS: one small loop per format, so each
 * stays simple enough for the JIT. Palette images throw on an index past the palette's end.
 *
 * @example
 * const convert = rowConverter(colour);
 * convert(scanline, bpp, rgbaRow);
 */
export function rowConverter(colour: PngColour): RowConverter {
  const { width, depth, colourType, palette, paletteSize } = colour;
  const [k0 = -1, k1 = -1, k2 = -1] = colour.key ?? [];
  if (colourType === 3) {
    const colours = new Uint32Array(palette!.buffer, palette!.byteOffset, 256);
    const mask = (1 << depth) - 1;
    return (row, offset, dst) => {
      const px = new Uint32Array(dst.buffer, dst.byteOffset, width);
      for (let x = 0; x < width; x++) {
        const bit = x * depth;
        const v = (row[offset + (bit >> 3)]! >> (8 - depth - (bit & 7))) & mask;
        if (v >= paletteSize) throw corruptPng(`it uses palette index ${v} but its palette has ${paletteSize} colours`);
        px[x] = colours[v]!;
      }
    };
  }
  if (colourType === 0 && depth < 8) {
    const mask = (1 << depth) - 1;
    const scale = 255 / mask;
    return (row, offset, dst) => {
      for (let x = 0, o = 0; x < width; x++, o += 4) {
        const bit = x * depth;
        const v = (row[offset + (bit >> 3)]! >> (8 - depth - (bit & 7))) & mask;
        dst[o] = dst[o + 1] = dst[o + 2] = v * scale;
        dst[o + 3] = v === k0 ? 0 : 255;
      }
    };
  }
  if (depth === 8) {
    switch (colourType) {
      case 0:
        return (row, offset, dst) => {
          for (let x = 0, o = 0, i = offset; x < width; x++, o += 4, i++) {
            const g = row[i]!;
            dst[o] = dst[o + 1] = dst[o + 2] = g;
            dst[o + 3] = g === k0 ? 0 : 255;
          }
        };
      case 2:
        return (row, offset, dst) => {
          for (let x = 0, o = 0, i = offset; x < width; x++, o += 4, i += 3) {
            const r = row[i]!;
            const g = row[i + 1]!;
            const b = row[i + 2]!;
            dst[o] = r;
            dst[o + 1] = g;
            dst[o + 2] = b;
            dst[o + 3] = r === k0 && g === k1 && b === k2 ? 0 : 255;
          }
        };
      case 4:
        return (row, offset, dst) => {
          for (let x = 0, o = 0, i = offset; x < width; x++, o += 4, i += 2) {
            dst[o] = dst[o + 1] = dst[o + 2] = row[i]!;
            dst[o + 3] = row[i + 1]!;
          }
        };
      default:
        return (row, offset, dst) => dst.set(row.subarray(offset, offset + width * 4));
    }
  }
  // 16 bits per sample, big-endian; tRNS compares the 16-bit values.
  switch (colourType) {
    case 0:
      return (row, offset, dst) => {
        for (let x = 0, o = 0, i = offset; x < width; x++, o += 4, i += 2) {
          const v = (row[i]! << 8) | row[i + 1]!;
          dst[o] = dst[o + 1] = dst[o + 2] = to8(v);
          dst[o + 3] = v === k0 ? 0 : 255;
        }
      };
    case 2:
      return (row, offset, dst) => {
        for (let x = 0, o = 0, i = offset; x < width; x++, o += 4, i += 6) {
          const r = (row[i]! << 8) | row[i + 1]!;
          const g = (row[i + 2]! << 8) | row[i + 3]!;
          const b = (row[i + 4]! << 8) | row[i + 5]!;
          dst[o] = to8(r);
          dst[o + 1] = to8(g);
          dst[o + 2] = to8(b);
          dst[o + 3] = r === k0 && g === k1 && b === k2 ? 0 : 255;
        }
      };
    case 4:
      return (row, offset, dst) => {
        for (let x = 0, o = 0, i = offset; x < width; x++, o += 4, i += 4) {
          dst[o] = dst[o + 1] = dst[o + 2] = to8((row[i]! << 8) | row[i + 1]!);
          dst[o + 3] = to8((row[i + 2]! << 8) | row[i + 3]!);
        }
      };
    default:
      return (row, offset, dst) => {
        for (let o = 0, i = offset; o < width * 4; o++, i += 2) dst[o] = to8((row[i]! << 8) | row[i + 1]!);
      };
  }
}

/** Shrinks RGBA rows by blocks as they arrive; see createBoxShrink. */
export interface BoxShrink {
  /** Where the caller converts a source row before `addRow(y, false)`. */
  readonly rgba: Uint8Array;
  /** Adds source row `y` (from `rgba`, or when `same` a repeat of row y - 1); writes output rows as blocks fill. */
  addRow(y: number, same: boolean): void;
}

/**
 * Where each block starts along one side, and the end: `factor` pixels each (the last block smaller), or,
 * for `count` blocks, the side split as evenly as whole pixels allow (blocks of floor and ceil of
 * side / count pixels).
 *
 * @example
 * blockStarts(10, { factor: 3 }); // [0, 3, 6, 9, 10]
 * blockStarts(10, { count: 4 }); // [0, 3, 5, 8, 10]
 */
export function blockStarts(side: number, blocks: { factor: number } | { count: number }): Int32Array {
  const count = "factor" in blocks ? Math.ceil(side / blocks.factor) : blocks.count;
  const starts = new Int32Array(count + 1);
  for (let i = 0; i <= count; i++) starts[i] = "factor" in blocks ? Math.min(side, i * blocks.factor) : Math.round((i * side) / count);
  return starts;
}

/**
 * An alpha-weighted box filter into `out` (cols.length - 1 by rows.length - 1 RGBA; `cols` and `rows` from
 * `blockStarts`): each output pixel's alpha is its block's mean alpha, its colour the alpha-weighted mean
 * colour (0,0,0,0 when the block is fully transparent). Rows that repeat the row above (flat areas, zlib
 * bombs) cost one multiply-add per output value per run, and a block of one repeated row that follows
 * another such block of the same height is a copy of the output row above.
 *
 * @example
 * const box = createBoxShrink(blockStarts(6300, { factor: 4 }), blockStarts(6300, { factor: 4 }), out); // 1575 x 1575
 * convert(scanline, bpp, box.rgba); box.addRow(0, false);
 */
export function createBoxShrink(cols: Int32Array, rows: Int32Array, out: Uint8Array): BoxShrink {
  const width = cols[cols.length - 1]!;
  const outRow = (cols.length - 1) * 4;
  const rgba = new Uint8Array(width * 4);
  const rowSums = new Float64Array(outRow);
  const blockSums = new Float64Array(outRow);
  let block = 0; // the output row the source rows go to
  let run = 0; // rows equal to the one in rowSums, not yet added to blockSums
  let fresh = 0; // rows of this block that differ from the row above
  let freshFirst = false;
  let previousUniform = false; // the previous block was one row repeated
  let previousRows = 0;

  function addRun(): void {
    for (let i = 0; i < outRow; i++) blockSums[i] = blockSums[i]! + rowSums[i]! * run;
    run = 0;
  }

  return {
    rgba,
    addRow(y, same) {
      if (!same) {
        if (run > 0) addRun();
        sumBlocks(rgba, cols, rowSums);
        fresh++;
        if (y === rows[block]) freshFirst = true;
      }
      run++;
      if (y !== rows[block + 1]! - 1) return;
      const count = rows[block + 1]! - rows[block]!;
      const at = block * outRow;
      if (fresh === 0 && previousUniform && count === previousRows) {
        out.copyWithin(at, at - outRow, at);
        run = 0;
      } else {
        addRun();
        emitBlocks(blockSums, out, at, cols, count);
        blockSums.fill(0);
      }
      previousUniform = fresh === 0 || (fresh === 1 && freshFirst);
      previousRows = count;
      fresh = 0;
      freshFirst = false;
      block++;
    },
  };
}

/** Per output column: sum of r*a, g*a, b*a and a over the pixels of its block in one RGBA row. */
function sumBlocks(rgba: Uint8Array, cols: Int32Array, sums: Float64Array): void {
  for (let o = 0, k = 0; k < cols.length - 1; k++, o += 4) {
    let r = 0;
    let g = 0;
    let b = 0;
    let a = 0;
    for (let i = cols[k]! * 4, end = cols[k + 1]! * 4; i < end; i += 4) {
      const alpha = rgba[i + 3]!;
      r += rgba[i]! * alpha;
      g += rgba[i + 1]! * alpha;
      b += rgba[i + 2]! * alpha;
      a += alpha;
    }
    sums[o] = r;
    sums[o + 1] = g;
    sums[o + 2] = b;
    sums[o + 3] = a;
  }
}

/**
 * Writes one output row from block sums: alpha = mean alpha, colour = alpha-weighted mean colour, each
 * rounded half up. (s + d / 2) / d is stored into a Uint8Array, whose conversion truncates: that is
 * Math.round(s / d) for these non-negative integers, without the call.
 */
function emitBlocks(sums: Float64Array, out: Uint8Array, at: number, cols: Int32Array, rows: number): void {
  for (let o = 0, k = 0; o < sums.length; o += 4, k++) {
    const a = sums[o + 3]!;
    if (a === 0) continue; // fully transparent: stays 0,0,0,0
    const n = (cols[k + 1]! - cols[k]!) * rows;
    const half = a / 2;
    out[at + o] = (sums[o]! + half) / a;
    out[at + o + 1] = (sums[o + 1]! + half) / a;
    out[at + o + 2] = (sums[o + 2]! + half) / a;
    out[at + o + 3] = (a + n / 2) / n;
  }
}
