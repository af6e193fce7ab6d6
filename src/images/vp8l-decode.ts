/**
 * A VP8L decoder (WebP lossless, RFC 9649): the lossless half of WebP, and the compressed form of a lossy
 * WebP's alpha plane.
 *
 * Why it exists: see vp8-decode.ts. The image is ARGB pixels coded with canonical prefix (Huffman) codes,
 * backward references and a colour cache, then inverse-transformed (predictor, cross-colour, subtract-green,
 * colour indexing) in the reverse of the order the file lists them.
 *
 * Bounds on untrusted input, beside the pixel limit the caller checks from the header: every prefix code must
 * be complete (or have one symbol), a backward reference must stay inside the pixels decoded so far, the
 * codes' lookup tables together may hold at most MAX_TABLE_ENTRIES (a file with thousands of entropy groups
 * of long codes would otherwise allocate far more memory than its size suggests), only the entropy groups the
 * image uses get lookup tables (the others' codes are read and checked), code lengths cost what the file
 * spells out rather than the alphabet's size, and reading past the end of the data is an error.
 *
 * Throws an Error for corrupt data.
 */
import type { RgbaImage } from "./types";

/** The most lookup-table entries all of an image's prefix codes may use together (4 bytes each). */
const MAX_TABLE_ENTRIES = 4 * 1024 * 1024;
/** Bits a lookup table resolves at once; longer codes go through a second-level table. */
const ROOT_BITS = 8;
/** The order in which a code's code-length code lengths are stored. */
const CODE_LENGTH_ORDER = [17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
/**
 * The 120 nearest two-dimensional distances of a backward reference, each as (dy << 4) | (8 - dx): the
 * spec's distance map, listed in the order the distance codes 1..120 refer to them.
 */
const DISTANCE_MAP = [
  0x18, 0x07, 0x17, 0x19, 0x28, 0x06, 0x27, 0x29, 0x16, 0x1a, 0x26, 0x2a, 0x38, 0x05, 0x37, 0x39, 0x15, 0x1b, 0x36, 0x3a, 0x25, 0x2b, 0x48, 0x04, 0x47, 0x49,
  0x14, 0x1c, 0x35, 0x3b, 0x46, 0x4a, 0x24, 0x2c, 0x58, 0x45, 0x4b, 0x34, 0x3c, 0x03, 0x57, 0x59, 0x13, 0x1d, 0x56, 0x5a, 0x23, 0x2d, 0x44, 0x4c, 0x55, 0x5b,
  0x33, 0x3d, 0x68, 0x02, 0x67, 0x69, 0x12, 0x1e, 0x66, 0x6a, 0x22, 0x2e, 0x54, 0x5c, 0x43, 0x4d, 0x65, 0x6b, 0x32, 0x3e, 0x78, 0x01, 0x77, 0x79, 0x53, 0x5d,
  0x11, 0x1f, 0x64, 0x6c, 0x42, 0x4e, 0x76, 0x7a, 0x21, 0x2f, 0x75, 0x7b, 0x31, 0x3f, 0x63, 0x6d, 0x52, 0x5e, 0x00, 0x74, 0x7c, 0x41, 0x4f, 0x10, 0x20, 0x62,
  0x6e, 0x30, 0x73, 0x7d, 0x51, 0x5f, 0x40, 0x72, 0x7e, 0x61, 0x6f, 0x50, 0x71, 0x7f, 0x60, 0x70,
];

const enum Transform {
  Predictor = 0,
  CrossColour = 1,
  SubtractGreen = 2,
  ColourIndexing = 3,
}

interface TransformStep {
  type: Transform;
  /** Block size (predictor, cross-colour) or pixels packed per byte (colour indexing), as a power of two. */
  bits: number;
  /** The image width this step's inverse produces. */
  width: number;
  /** The transform's sub-image (one element per block) or palette. */
  data: Uint32Array;
}

/** A prefix code's lookup table: entries (symbol << 8) | length, or (offset << 8) | 0x80 | bits of a second level. */
interface Code {
  root: number;
  table: Int32Array;
}

/** The five codes of an entropy group: green (with lengths and cache indices), red, blue, alpha, distance. */
type Group = [Code, Code, Code, Code, Code];

/** What one image's decode shares: the lookup-table entries left to spend, and scratch code lengths (all zero between codes). */
interface DecodeState {
  entries: number;
  lengths: Uint8Array;
}

/** Reads bits least significant first, with up to 32 buffered. Past the end it reads zeros and remembers. */
class BitReader {
  private bits = 0;
  private count = 0;
  private pos = 0;

  constructor(private readonly data: Uint8Array) {}

  read(n: number): number {
    if (this.count < n) this.fill();
    const v = this.bits & ((1 << n) - 1);
    this.bits >>>= n;
    this.count -= n;
    return v;
  }

  /** Whether more bits have been consumed than the data holds. */
  get overrun(): boolean {
    return this.pos - (this.count >> 3) > this.data.length;
  }

  /** The next prefix-coded symbol. */
  symbol(code: Code): number {
    if (this.count < 15) this.fill();
    let e = code.table[this.bits & ((1 << code.root) - 1)]!;
    if (e & 0x80) e = code.table[(e >>> 8) + ((this.bits >>> code.root) & ((1 << (e & 0x7f)) - 1))]!;
    const length = e & 0xff;
    this.bits >>>= length;
    this.count -= length;
    return e >>> 8;
  }

  private fill(): void {
    while (this.count <= 24) {
      const byte = this.pos < this.data.length ? this.data[this.pos]! : 0;
      this.pos++;
      this.bits = (this.bits | (byte << this.count)) >>> 0;
      this.count += 8;
    }
  }
}

/**
 * Decodes the payload of a WebP "VP8L" chunk to RGBA.
 *
 * @example
 * const { width, height, data } = decodeVp8l(chunk);
 */
export function decodeVp8l(data: Uint8Array): RgbaImage {
  const br = new BitReader(data);
  if (br.read(8) !== 0x2f) throw new Error("VP8L signature is missing");
  const width = br.read(14) + 1;
  const height = br.read(14) + 1;
  br.read(1); // whether alpha is used: a hint only
  if (br.read(3) !== 0) throw new Error("VP8L version is unknown");
  const argb = decodeImage(br, width, height);
  const out = new Uint8Array(width * height * 4);
  for (let i = 0, o = 0; i < argb.length; i++, o += 4) {
    const p = argb[i]!;
    out[o] = (p >>> 16) & 255;
    out[o + 1] = (p >>> 8) & 255;
    out[o + 2] = p & 255;
    out[o + 3] = p >>> 24;
  }
  return { width, height, data: out };
}

/**
 * Decodes a lossless-compressed alpha plane (an ALPH chunk's data after its header byte): a VP8L image
 * stream without the VP8L header, its green channel the alpha.
 */
export function decodeVp8lAlpha(data: Uint8Array, width: number, height: number): Uint8Array {
  const argb = decodeImage(new BitReader(data), width, height);
  const out = new Uint8Array(width * height);
  for (let i = 0; i < out.length; i++) out[i] = (argb[i]! >>> 8) & 255;
  return out;
}

/** The main image: its transforms, then its pixels, then the transforms undone. */
function decodeImage(br: BitReader, width: number, height: number): Uint32Array {
  const state: DecodeState = { entries: MAX_TABLE_ENTRIES, lengths: new Uint8Array(256 + 24 + (1 << 11)) };
  const steps: TransformStep[] = [];
  let xsize = width;
  while (br.read(1)) {
    const type = br.read(2) as Transform;
    if (steps.some((s) => s.type === type)) throw new Error("VP8L transform repeats");
    if (type === Transform.Predictor || type === Transform.CrossColour) {
      const bits = br.read(3) + 2;
      const sub = decodeStream(br, ceilShift(xsize, bits), ceilShift(height, bits), false, state);
      steps.push({ type, bits, width: xsize, data: sub });
    } else if (type === Transform.SubtractGreen) {
      steps.push({ type, bits: 0, width: xsize, data: new Uint32Array(0) });
    } else {
      const colours = br.read(8) + 1;
      const palette = decodeStream(br, colours, 1, false, state);
      for (let i = 1; i < colours; i++) palette[i] = addPixels(palette[i]!, palette[i - 1]!);
      const bits = colours > 16 ? 0 : colours > 4 ? 1 : colours > 2 ? 2 : 3;
      steps.push({ type, bits, width: xsize, data: palette });
      xsize = ceilShift(xsize, bits);
    }
  }
  let pixels = decodeStream(br, xsize, height, true, state);
  if (br.overrun) throw new Error("VP8L data ends early");
  for (let s = steps.length - 1; s >= 0; s--) pixels = undo(steps[s]!, pixels, height);
  return pixels;
}

/** An entropy-coded image: the main image (`main`, may use entropy groups) or a transform's or group map's. */
function decodeStream(br: BitReader, xsize: number, ysize: number, main: boolean, state: DecodeState): Uint32Array {
  let cacheBits = 0;
  if (br.read(1)) {
    cacheBits = br.read(4);
    if (cacheBits < 1 || cacheBits > 11) throw new Error("VP8L colour cache size is invalid");
  }
  let groupBits = 0;
  let groupMap: Uint32Array | null = null;
  let groupWidth = 0;
  let groupCount = 1;
  if (main && br.read(1)) {
    groupBits = br.read(3) + 2;
    groupWidth = ceilShift(xsize, groupBits);
    groupMap = decodeStream(br, groupWidth, ceilShift(ysize, groupBits), false, state);
    for (let i = 0; i < groupMap.length; i++) {
      const g = (groupMap[i]! >>> 8) & 0xffff;
      groupMap[i] = g;
      if (g >= groupCount) groupCount = g + 1;
    }
  }
  // Every group's codes are read in order, but only those the map uses get lookup tables: a file may
  // declare tens of thousands of groups it never uses, and building their tables would cost far more
  // time than reading them. `index` maps a group's number to its place in `groups` (-1: unused).
  const index = new Int32Array(groupCount).fill(groupMap ? -1 : 0);
  if (groupMap) for (let i = 0; i < groupMap.length; i++) index[groupMap[i]!] = 0;
  const groups: Group[] = [];
  for (let g = 0; g < groupCount; g++) {
    const group = readGroup(br, cacheBits, state, index[g] === 0);
    if (br.overrun) throw new Error("VP8L data ends early");
    if (!group) continue;
    index[g] = groups.length;
    groups.push(group);
  }
  if (groupMap) for (let i = 0; i < groupMap.length; i++) groupMap[i] = index[groupMap[i]!]!;

  const total = xsize * ysize;
  const out = new Uint32Array(total);
  const cache = cacheBits ? new Uint32Array(1 << cacheBits) : null;
  const cacheShift = 32 - cacheBits;
  const groupMask = groupMap ? (1 << groupBits) - 1 : -1;
  let group = groups[0]!;
  let x = 0;
  let y = 0;
  let i = 0;
  let cached = 0;
  while (i < total) {
    if (groupMap && (x & groupMask) === 0) group = groups[groupMap[(y >> groupBits) * groupWidth + (x >> groupBits)]!]!;
    const green = br.symbol(group[0]);
    if (green < 256) {
      const red = br.symbol(group[1]);
      const blue = br.symbol(group[2]);
      const alpha = br.symbol(group[3]);
      out[i++] = ((alpha << 24) | (red << 16) | (green << 8) | blue) >>> 0;
      if (++x === xsize) {
        x = 0;
        y++;
        if (br.overrun) throw new Error("VP8L data ends early");
      }
    } else if (green < 280) {
      const length = prefixValue(br, green - 256);
      const distance = planeDistance(xsize, prefixValue(br, br.symbol(group[4])));
      if (distance > i || length > total - i) throw new Error("VP8L backward reference is out of bounds");
      for (let k = 0; k < length; k++, i++) out[i] = out[i - distance]!;
      x += length;
      while (x >= xsize) {
        x -= xsize;
        y++;
      }
      if (groupMap && x & groupMask && i < total) group = groups[groupMap[(y >> groupBits) * groupWidth + (x >> groupBits)]!]!;
      if (br.overrun) throw new Error("VP8L data ends early");
    } else {
      const key = green - 280;
      if (!cache || key >= cache.length) throw new Error("VP8L colour cache index is invalid");
      for (; cached < i; cached++) cache[Math.imul(out[cached]!, 0x1e35a7bd) >>> cacheShift] = out[cached]!;
      out[i++] = cache[key]!;
      if (++x === xsize) {
        x = 0;
        y++;
      }
    }
    if (cache) for (; cached < i; cached++) cache[Math.imul(out[cached]!, 0x1e35a7bd) >>> cacheShift] = out[cached]!;
  }
  return out;
}

/** Reads an entropy group's five codes; their lookup tables only when `build` (else null). */
function readGroup(br: BitReader, cacheBits: number, state: DecodeState, build: boolean): Group | null {
  const sizes = [256 + 24 + (cacheBits ? 1 << cacheBits : 0), 256, 256, 256, 40];
  const codes = sizes.map((size) => readCode(br, size, state, build));
  return build ? (codes as Group) : null;
}

/**
 * Reads one prefix code (simple: one or two symbols listed; normal: code lengths, themselves prefix-coded)
 * and checks it; its lookup table only when `build` (else null).
 */
function readCode(br: BitReader, alphabet: number, state: DecodeState, build = true): Code | null {
  if (br.read(1)) {
    const two = br.read(1);
    const first = br.read(br.read(1) ? 8 : 1);
    const second = two ? br.read(8) : first;
    if (first >= alphabet || second >= alphabet) throw new Error("VP8L prefix code symbol is out of range");
    // One symbol (or the same one twice): a code of no bits. Two: one bit each, the smaller symbol first.
    if (!build) return null;
    if (first === second) return spend(state, { root: 0, table: Int32Array.of(first << 8) });
    return spend(state, { root: 1, table: Int32Array.of((Math.min(first, second) << 8) | 1, (Math.max(first, second) << 8) | 1) });
  }
  const lengthLengths = new Uint8Array(19);
  const count = 4 + br.read(4);
  for (let i = 0; i < count; i++) lengthLengths[CODE_LENGTH_ORDER[i]!] = br.read(3);
  const lengthCode = buildCode(lengthLengths, 19, state)!;
  let maxSymbol = alphabet;
  if (br.read(1)) {
    maxSymbol = 2 + br.read(2 + 2 * br.read(3));
    if (maxSymbol > alphabet) throw new Error("VP8L code length count is out of range");
  }
  // The scratch lengths are zero beyond `symbol`, so the work is in proportion to what the file spells out.
  const lengths = state.lengths;
  let previous = 8;
  let symbol = 0;
  try {
    while (symbol < alphabet && maxSymbol-- > 0) {
      const c = br.symbol(lengthCode);
      if (c < 16) {
        lengths[symbol++] = c;
        if (c) previous = c;
        continue;
      }
      const repeat = c === 16 ? 3 + br.read(2) : c === 17 ? 3 + br.read(3) : 11 + br.read(7);
      if (symbol + repeat > alphabet) throw new Error("VP8L code lengths overflow the alphabet");
      if (c === 16) lengths.fill(previous, symbol, symbol + repeat);
      symbol += repeat;
    }
    if (br.overrun) throw new Error("VP8L data ends early");
    return buildCode(lengths, symbol, state, build);
  } finally {
    lengths.fill(0, 0, symbol);
  }
}

/** Charges a built code's table to the decode's budget. */
function spend(state: DecodeState, code: Code): Code {
  state.entries -= code.table.length;
  if (state.entries < 0) throw new Error("VP8L prefix codes are too many or too long");
  return code;
}

/**
 * A canonical prefix code's lookup table from its code lengths (at most 15). One used symbol gives a code of
 * no bits; otherwise the code must be complete.
 */
function buildCode(lengths: Uint8Array, end: number, state: DecodeState, build = true): Code | null {
  const counts = new Int32Array(16);
  let used = 0;
  let only = 0;
  let maxLength = 0;
  for (let s = 0; s < end; s++) {
    const l = lengths[s]!;
    if (!l) continue;
    counts[l] = counts[l]! + 1;
    used++;
    only = s;
    if (l > maxLength) maxLength = l;
  }
  if (used === 0) throw new Error("VP8L prefix code has no symbols");
  if (used === 1) return build ? spend(state, { root: 0, table: Int32Array.of(only << 8) }) : null;
  let left = 1;
  for (let l = 1; l < 16; l++) {
    left = (left << 1) - counts[l]!;
    if (left < 0) throw new Error("VP8L prefix code is over-subscribed");
  }
  if (left !== 0) throw new Error("VP8L prefix code is incomplete");
  if (!build) return null;

  const root = Math.min(ROOT_BITS, maxLength);
  const next = new Int32Array(16);
  for (let l = 1, code = 0; l < 16; l++) {
    code = (code + counts[l - 1]!) << 1;
    next[l] = code;
  }
  // Codes longer than the root share a second-level table per root prefix, sized for the longest of them.
  const codes = new Int32Array(end);
  const subBits = new Uint8Array(1 << root);
  for (let s = 0; s < end; s++) {
    const l = lengths[s]!;
    if (!l) continue;
    codes[s] = reverse(next[l]!, l);
    next[l] = next[l]! + 1;
    if (l > root) {
      const prefix = codes[s]! & ((1 << root) - 1);
      subBits[prefix] = Math.max(subBits[prefix]!, l - root);
    }
  }
  let size = 1 << root;
  const subAt = new Int32Array(1 << root);
  for (let p = 0; p < subAt.length; p++) {
    if (!subBits[p]) continue;
    subAt[p] = size;
    size += 1 << subBits[p]!;
  }
  const table = new Int32Array(size);
  for (let s = 0; s < end; s++) {
    const l = lengths[s]!;
    if (!l) continue;
    const code = codes[s]!;
    if (l <= root) {
      for (let k = code; k < 1 << root; k += 1 << l) table[k] = (s << 8) | l;
      continue;
    }
    const prefix = code & ((1 << root) - 1);
    const bits = subBits[prefix]!;
    table[prefix] = (subAt[prefix]! << 8) | 0x80 | bits;
    for (let k = code >>> root; k < 1 << bits; k += 1 << (l - root)) table[subAt[prefix]! + k] = (s << 8) | l;
  }
  return spend(state, { root, table });
}

function reverse(code: number, length: number): number {
  let r = 0;
  for (let i = 0; i < length; i++) {
    r = (r << 1) | (code & 1);
    code >>= 1;
  }
  return r;
}

/** A length or distance from its prefix symbol and extra bits. */
function prefixValue(br: BitReader, symbol: number): number {
  if (symbol < 4) return symbol + 1;
  const extra = (symbol - 2) >> 1;
  return ((2 + (symbol & 1)) << extra) + br.read(extra) + 1;
}

/** A distance code to a distance in pixels: codes 1..120 are nearby (dx, dy) offsets, larger ones linear. */
function planeDistance(xsize: number, code: number): number {
  if (code > 120) return code - 120;
  const d = DISTANCE_MAP[code - 1]!;
  return Math.max(1, (d >> 4) * xsize + 8 - (d & 0xf));
}

// --- transforms ---------------------------------------------------------------------------------------------

function undo(step: TransformStep, pixels: Uint32Array, height: number): Uint32Array {
  switch (step.type) {
    case Transform.Predictor:
      undoPredictor(pixels, step.width, height, step.bits, step.data);
      return pixels;
    case Transform.CrossColour:
      undoCrossColour(pixels, step.width, height, step.bits, step.data);
      return pixels;
    case Transform.SubtractGreen:
      for (let i = 0; i < pixels.length; i++) {
        const p = pixels[i]!;
        const g = (p >>> 8) & 255;
        pixels[i] = ((p & 0xff00ff00) | ((((p >>> 16) + g) & 255) << 16) | ((p + g) & 255)) >>> 0;
      }
      return pixels;
    default:
      return undoColourIndexing(pixels, step.width, height, step.bits, step.data);
  }
}

function undoPredictor(p: Uint32Array, width: number, height: number, bits: number, modes: Uint32Array): void {
  const blocksAcross = ceilShift(width, bits);
  p[0] = addPixels(p[0]!, 0xff000000);
  for (let x = 1; x < width; x++) p[x] = addPixels(p[x]!, p[x - 1]!);
  for (let y = 1; y < height; y++) {
    const row = y * width;
    p[row] = addPixels(p[row]!, p[row - width]!);
    for (let x = 1; x < width; x++) {
      const i = row + x;
      const mode = (modes[(y >> bits) * blocksAcross + (x >> bits)]! >>> 8) & 15;
      const L = p[i - 1]!;
      const T = p[i - width]!;
      let pred: number;
      switch (mode) {
        case 1:
          pred = L;
          break;
        case 2:
          pred = T;
          break;
        case 3:
          pred = p[i - width + 1]!;
          break;
        case 4:
          pred = p[i - width - 1]!;
          break;
        case 5:
          pred = average2(average2(L, p[i - width + 1]!), T);
          break;
        case 6:
          pred = average2(L, p[i - width - 1]!);
          break;
        case 7:
          pred = average2(L, T);
          break;
        case 8:
          pred = average2(p[i - width - 1]!, T);
          break;
        case 9:
          pred = average2(T, p[i - width + 1]!);
          break;
        case 10:
          pred = average2(average2(L, p[i - width - 1]!), average2(T, p[i - width + 1]!));
          break;
        case 11:
          pred = select(T, L, p[i - width - 1]!);
          break;
        case 12:
          pred = clampAddSubtractFull(L, T, p[i - width - 1]!);
          break;
        case 13:
          pred = clampAddSubtractHalf(average2(L, T), p[i - width - 1]!);
          break;
        default:
          pred = 0xff000000; // 0, and 14 and 15 as decoders treat them
      }
      p[i] = addPixels(p[i]!, pred);
    }
  }
}

function undoCrossColour(p: Uint32Array, width: number, height: number, bits: number, elements: Uint32Array): void {
  const blocksAcross = ceilShift(width, bits);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const m = elements[(y >> bits) * blocksAcross + (x >> bits)]!;
      const greenToRed = (m << 24) >> 24;
      const greenToBlue = (m << 16) >> 24;
      const redToBlue = (m << 8) >> 24;
      const i = y * width + x;
      const argb = p[i]!;
      const green = (argb << 16) >> 24;
      const red = (((argb >>> 16) & 255) + ((greenToRed * green) >> 5)) & 255;
      const blue = ((argb & 255) + ((greenToBlue * green) >> 5) + ((redToBlue * ((red << 24) >> 24)) >> 5)) & 255;
      p[i] = ((argb & 0xff00ff00) | (red << 16) | blue) >>> 0;
    }
  }
}

function undoColourIndexing(packed: Uint32Array, width: number, height: number, bits: number, palette: Uint32Array): Uint32Array {
  const colours = new Uint32Array(256);
  colours.set(palette.subarray(0, 256));
  const packedWidth = ceilShift(width, bits);
  const perPixel = 8 >> bits;
  const mask = (1 << perPixel) - 1;
  const out = new Uint32Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const index = ((packed[y * packedWidth + (x >> bits)]! >>> 8) >>> ((x & ((1 << bits) - 1)) * perPixel)) & mask;
      out[y * width + x] = colours[index]!;
    }
  }
  return out;
}

const ceilShift = (n: number, bits: number) => (n + (1 << bits) - 1) >> bits;

/** Adds two ARGB pixels channel by channel, modulo 256. */
function addPixels(a: number, b: number): number {
  return ((((a & 0xff00ff00) + (b & 0xff00ff00)) & 0xff00ff00) | (((a & 0x00ff00ff) + (b & 0x00ff00ff)) & 0x00ff00ff)) >>> 0;
}

/** The per-channel mean of two ARGB pixels, rounded down. */
function average2(a: number, b: number): number {
  return ((((a ^ b) & 0xfefefefe) >>> 1) + ((a & b) >>> 0)) >>> 0;
}

/** T or L, whichever is nearer (summed over channels) to the gradient estimate L + T - TL. */
function select(t: number, l: number, tl: number): number {
  let tMinusL = 0;
  for (let s = 0; s < 32; s += 8) {
    const c = (tl >>> s) & 255;
    tMinusL += Math.abs(((l >>> s) & 255) - c) - Math.abs(((t >>> s) & 255) - c);
  }
  return tMinusL <= 0 ? t : l;
}

function clampAddSubtractFull(a: number, b: number, c: number): number {
  let out = 0;
  for (let s = 0; s < 32; s += 8) out |= clamp(((a >>> s) & 255) + ((b >>> s) & 255) - ((c >>> s) & 255)) << s;
  return out >>> 0;
}

function clampAddSubtractHalf(a: number, b: number): number {
  let out = 0;
  for (let s = 0; s < 32; s += 8) {
    const x = (a >>> s) & 255;
    out |= clamp(x + (((x - ((b >>> s) & 255)) / 2) | 0)) << s;
  }
  return out >>> 0;
}

const clamp = (v: number) => (v < 0 ? 0 : v > 255 ? 255 : v);
