/**
 * A VP8 key-frame decoder (RFC 6386): the lossy half of WebP, to Y, U and V planes.
 *
 * Why it exists: photon decodes WebP into WebAssembly memory that grows by the image's size and never
 * shrinks, so a Worker that had read one WebP would carry that memory into every later request (see
 * docs/architecture.md, "Decisions"). Here every buffer is an ordinary typed array the garbage
 * collector gives back. The alternatives were libwebp builds for WebAssembly, whose published ones predate
 * the fix for CVE-2023-4863, and a per-decode instance of any WebAssembly decoder, which photon's bindings
 * do not allow.
 *
 * A WebP holds one key frame. It is decoded in two passes, as the format defines it: every macroblock is
 * predicted from the unfiltered pixels above and left of it and gets its residual added, then the loop
 * filter runs over the whole frame in macroblock order. Held: the three planes padded to whole macroblocks
 * (1.5 bytes per pixel), one macroblock's coefficients and a 32 x 26 byte workspace, and a byte per
 * macroblock for the filter. The decode is bit-exact with libwebp's (the tests compare them).
 *
 * Throws an Error for data that is not a VP8 key frame or ends before its last macroblock.
 */
import { AC_QUANT, COEFF_UPDATE_PROBS, DC_QUANT, DEFAULT_COEFF_PROBS, SUB_MODE_PROBS } from "./vp8-tables";

/** A decoded frame: planes padded to whole macroblocks (`yStride` = 16 x macroblocks across). */
export interface Vp8Frame {
  width: number;
  height: number;
  y: Uint8Array;
  u: Uint8Array;
  v: Uint8Array;
  yStride: number;
  uvStride: number;
}

/** The 4x4 prediction modes, in the order of SUB_MODE_PROBS. 16x16 and chroma use DC, TM, VE and HE. */
const enum Mode {
  DC = 0,
  TM = 1,
  VE = 2,
  HE = 3,
  RD = 4,
  VR = 5,
  LD = 6,
  VL = 7,
  HD = 8,
  HU = 9,
}

/** Which plane of coefficient probabilities a block uses. */
const enum Plane {
  YAfterY2 = 0,
  Y2 = 1,
  Chroma = 2,
  YWithDc = 3,
}

/** Workspace: 32 bytes a row; luma at row 1, column 8; U and V at row 18, columns 8 and 24. */
const BPS = 32;
const Y_AT = BPS + 8;
const U_AT = 18 * BPS + 8;
const V_AT = 18 * BPS + 24;

/** Where each of a macroblock's 16 luma and 8 chroma 4x4 blocks sits in the workspace. */
const BLOCK_AT = new Int32Array(24);
for (let n = 0; n < 16; n++) BLOCK_AT[n] = Y_AT + (n >> 2) * 4 * BPS + (n & 3) * 4;
for (let n = 0; n < 4; n++) {
  BLOCK_AT[16 + n] = U_AT + (n >> 1) * 4 * BPS + (n & 1) * 4;
  BLOCK_AT[20 + n] = V_AT + (n >> 1) * 4 * BPS + (n & 1) * 4;
}

const ZIGZAG = [0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15];
/** The probability band of each coefficient position; the 17th entry serves the position after the last. */
const BANDS = [0, 1, 2, 3, 6, 4, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 0];
/** Extra-bit probabilities of the large-value categories 3 to 6. */
const CATEGORY_PROBS = [
  [173, 148, 140],
  [176, 155, 140, 135],
  [180, 157, 141, 134, 130],
  [254, 254, 243, 230, 196, 177, 153, 140, 133, 130, 129],
];

/**
 * The boolean entropy decoder (section 7). `range` is kept minus one and `value` holds `bits` bits beyond
 * the 8 being compared, as libwebp keeps them. Past the end it reads zeros once, then sets `eof`.
 */
class BoolReader {
  private value = 0;
  private bits = -8;
  private range = 254;
  eof = false;

  constructor(
    private readonly buf: Uint8Array,
    private pos: number,
    private readonly end: number,
  ) {}

  bit(prob: number): number {
    if (this.bits < 0) this.load();
    const split = (this.range * prob) >>> 8;
    let range: number;
    let bit: number;
    if (this.value >>> this.bits > split) {
      range = this.range - split;
      this.value -= (split + 1) << this.bits;
      bit = 1;
    } else {
      range = split + 1;
      bit = 0;
    }
    const shift = Math.clz32(range) - 24;
    this.range = (range << shift) - 1;
    this.bits -= shift;
    return bit;
  }

  /** An n-bit unsigned literal, most significant bit first. */
  literal(n: number): number {
    let v = 0;
    while (n-- > 0) v = (v << 1) | this.bit(128);
    return v;
  }

  /** A flag, then (when set) an n-bit magnitude and a sign; 0 when the flag is clear. */
  optionalSigned(n: number): number {
    if (!this.bit(128)) return 0;
    const v = this.literal(n);
    return this.bit(128) ? -v : v;
  }

  private load(): void {
    if (this.pos + 1 < this.end) {
      this.value = (this.value << 16) | (this.buf[this.pos]! << 8) | this.buf[this.pos + 1]!;
      this.pos += 2;
      this.bits += 16;
    } else if (this.pos < this.end) {
      this.value = (this.value << 8) | this.buf[this.pos++]!;
      this.bits += 8;
    } else if (!this.eof) {
      this.value <<= 8;
      this.bits += 8;
      this.eof = true;
    } else {
      this.bits = 0;
    }
  }
}

interface Segments {
  enabled: boolean;
  updateMap: boolean;
  /** The segment id tree's probabilities. */
  probs: number[];
  /** Whether `quant` and `filter` replace the frame's values (else they are added to them). */
  absolute: boolean;
  quant: number[];
  filter: number[];
}

interface Dequant {
  y1: [number, number];
  y2: [number, number];
  uv: [number, number];
}

/** Filter parameters of one (segment, 4x4-or-not) pair; `limit` 0 means no filtering. */
interface FilterStrength {
  limit: number;
  inner: number;
  hev: number;
}

/**
 * Decodes the payload of a WebP "VP8 " chunk.
 *
 * @example
 * const frame = decodeVp8(chunk); // frame.y: luma, frame.yStride apart
 */
export function decodeVp8(data: Uint8Array): Vp8Frame {
  if (data.length < 10) throw new Error("VP8 frame is truncated");
  const tag = data[0]! | (data[1]! << 8) | (data[2]! << 16);
  if (tag & 1) throw new Error("VP8 frame is not a key frame");
  if (((tag >> 1) & 7) > 3) throw new Error("VP8 frame has an unknown version");
  const firstSize = tag >>> 5;
  if (data[3] !== 0x9d || data[4] !== 0x01 || data[5] !== 0x2a) throw new Error("VP8 start code is missing");
  const width = (data[6]! | (data[7]! << 8)) & 0x3fff;
  const height = (data[8]! | (data[9]! << 8)) & 0x3fff;
  if (width === 0 || height === 0) throw new Error("VP8 frame has no pixels");
  if (10 + firstSize > data.length) throw new Error("VP8 first partition is truncated");

  const br = new BoolReader(data, 10, 10 + firstSize);
  br.literal(2); // colour space, clamping type: both have one meaning in WebP
  const segments = readSegments(br);
  const simpleFilter = br.bit(128) === 1;
  const filterLevel = br.literal(6);
  const sharpness = br.literal(3);
  const refDelta = [0, 0, 0, 0];
  const modeDelta = [0, 0, 0, 0];
  const useDeltas = br.bit(128) === 1;
  if (useDeltas && br.bit(128)) {
    for (let i = 0; i < 4; i++) refDelta[i] = br.optionalSigned(6);
    for (let i = 0; i < 4; i++) modeDelta[i] = br.optionalSigned(6);
  }
  const partitions = tokenPartitions(data, 10 + firstSize, br.literal(2));
  const dequant = readDequant(br, segments);
  br.bit(128); // refresh entropy probabilities: no later frame to keep them for
  const probs = DEFAULT_COEFF_PROBS.slice();
  for (let i = 0; i < probs.length; i++) if (br.bit(COEFF_UPDATE_PROBS[i]!)) probs[i] = br.literal(8);
  const skipProb = br.bit(128) ? br.literal(8) : -1;

  const mbw = (width + 15) >> 4;
  const mbh = (height + 15) >> 4;
  const yStride = mbw * 16;
  const uvStride = mbw * 8;
  const frame: Vp8Frame = {
    width,
    height,
    y: new Uint8Array(yStride * mbh * 16),
    u: new Uint8Array(uvStride * mbh * 8),
    v: new Uint8Array(uvStride * mbh * 8),
    yStride,
    uvStride,
  };
  const strengths = filterLevel === 0 ? null : filterStrengths(segments, filterLevel, sharpness, useDeltas ? refDelta[0]! : 0, useDeltas ? modeDelta[0]! : 0);
  /** Per macroblock: segment (bits 0-1), 4x4 prediction (bit 2), inner edges filtered (bit 3). */
  const mbFilter = strengths ? new Uint8Array(mbw * mbh) : null;

  const ws = new Uint8Array(BPS * 26);
  const coeffs = new Int16Array(25 * 16);
  const blockKind = new Uint8Array(24);
  const subModes = new Uint8Array(16);
  const upModes = new Uint8Array(mbw * 4);
  const leftModes = new Uint8Array(4);
  const upNz = new Uint8Array(mbw * 9);
  const leftNz = new Uint8Array(9);

  for (let mby = 0; mby < mbh; mby++) {
    const tr = partitions[mby % partitions.length]!;
    leftModes.fill(0);
    leftNz.fill(0);
    for (let mbx = 0; mbx < mbw; mbx++) {
      const segment = segments.updateMap ? readSegmentId(br, segments.probs) : 0;
      const skip = skipProb >= 0 ? br.bit(skipProb) : 0;
      const i4x4 = br.bit(145) === 0;
      let yMode = Mode.DC;
      if (i4x4) {
        readSubModes(br, upModes, mbx * 4, leftModes, subModes);
      } else {
        yMode = br.bit(156) ? (br.bit(128) ? Mode.TM : Mode.HE) : br.bit(163) ? Mode.VE : Mode.DC;
        upModes.fill(yMode, mbx * 4, mbx * 4 + 4);
        leftModes.fill(yMode);
      }
      const uvMode = !br.bit(142) ? Mode.DC : !br.bit(114) ? Mode.VE : !br.bit(183) ? Mode.HE : Mode.TM;

      let nonZero = false;
      if (skip) {
        blockKind.fill(0);
        upNz.fill(0, mbx * 9, mbx * 9 + 8);
        leftNz.fill(0, 0, 8);
        if (!i4x4) upNz[mbx * 9 + 8] = leftNz[8] = 0;
      } else {
        const q = dequant[segment]!;
        nonZero = readResiduals(tr, probs, q, i4x4, upNz, mbx * 9, leftNz, coeffs, blockKind);
      }
      if (tr.eof) throw new Error("VP8 token partition ends early");

      prepareWorkspace(ws, frame, mbx, mby, mbw);
      if (i4x4) {
        for (let n = 0; n < 16; n++) {
          const at = BLOCK_AT[n]!;
          predict4(ws, at, subModes[n]!);
          addResidual(ws, at, coeffs, n, blockKind[n]!);
        }
      } else {
        predictSquare(ws, Y_AT, 16, checkDc(yMode, mbx, mby));
        for (let n = 0; n < 16; n++) addResidual(ws, BLOCK_AT[n]!, coeffs, n, blockKind[n]!);
      }
      const chromaMode = checkDc(uvMode, mbx, mby);
      predictSquare(ws, U_AT, 8, chromaMode);
      predictSquare(ws, V_AT, 8, chromaMode);
      for (let n = 16; n < 24; n++) addResidual(ws, BLOCK_AT[n]!, coeffs, n, blockKind[n]!);
      storeWorkspace(ws, frame, mbx, mby);
      if (mbFilter) mbFilter[mby * mbw + mbx] = segment | (i4x4 ? 4 : 0) | (i4x4 || nonZero ? 8 : 0);
    }
    if (br.eof) throw new Error("VP8 first partition ends early");
  }
  if (strengths && mbFilter) loopFilter(frame, mbw, mbh, mbFilter, strengths, simpleFilter);
  return frame;
}

function readSegments(br: BoolReader): Segments {
  const segments: Segments = {
    enabled: br.bit(128) === 1,
    updateMap: false,
    probs: [255, 255, 255],
    absolute: true,
    quant: [0, 0, 0, 0],
    filter: [0, 0, 0, 0],
  };
  if (!segments.enabled) return segments;
  segments.updateMap = br.bit(128) === 1;
  if (br.bit(128)) {
    segments.absolute = br.bit(128) === 1;
    for (let i = 0; i < 4; i++) segments.quant[i] = br.optionalSigned(7);
    for (let i = 0; i < 4; i++) segments.filter[i] = br.optionalSigned(6);
  }
  if (segments.updateMap) for (let i = 0; i < 3; i++) segments.probs[i] = br.bit(128) ? br.literal(8) : 255;
  return segments;
}

/** A segment's quantiser index or filter level, from its own value and the frame's. */
function segmentValue(segments: Segments, values: number[], segment: number, frameValue: number): number {
  if (!segments.enabled) return frameValue;
  return segments.absolute ? values[segment]! : frameValue + values[segment]!;
}

function readDequant(br: BoolReader, segments: Segments): Dequant[] {
  const base = br.literal(7);
  const y1Dc = br.optionalSigned(4);
  const y2Dc = br.optionalSigned(4);
  const y2Ac = br.optionalSigned(4);
  const uvDc = br.optionalSigned(4);
  const uvAc = br.optionalSigned(4);
  const out: Dequant[] = [];
  for (let s = 0; s < 4; s++) {
    const q = segmentValue(segments, segments.quant, s, base);
    const at = (delta: number, max = 127) => Math.max(0, Math.min(max, q + delta));
    out.push({
      y1: [DC_QUANT[at(y1Dc)]!, AC_QUANT[at(0)]!],
      y2: [DC_QUANT[at(y2Dc)]! * 2, Math.max(8, ((AC_QUANT[at(y2Ac)]! * 155) / 100) | 0)],
      uv: [DC_QUANT[at(uvDc, 117)]!, AC_QUANT[at(uvAc)]!],
    });
  }
  return out;
}

function filterStrengths(segments: Segments, frameLevel: number, sharpness: number, refDelta: number, modeDelta: number): FilterStrength[] {
  const out: FilterStrength[] = [];
  for (let s = 0; s < 4; s++) {
    const base = segmentValue(segments, segments.filter, s, frameLevel);
    for (let i4x4 = 0; i4x4 < 2; i4x4++) {
      const level = Math.max(0, Math.min(63, base + refDelta + (i4x4 ? modeDelta : 0)));
      let inner = level;
      if (sharpness > 0) {
        inner >>= sharpness > 4 ? 2 : 1;
        inner = Math.min(inner, 9 - sharpness);
      }
      inner = Math.max(1, inner);
      out.push({ limit: level > 0 ? 2 * level + inner : 0, inner, hev: level >= 40 ? 2 : level >= 15 ? 1 : 0 });
    }
  }
  return out;
}

function tokenPartitions(data: Uint8Array, start: number, log2Count: number): BoolReader[] {
  const count = 1 << log2Count;
  let at = start + 3 * (count - 1);
  if (at > data.length) throw new Error("VP8 partition sizes are truncated");
  const readers: BoolReader[] = [];
  for (let i = 0; i < count; i++) {
    const size = i < count - 1 ? data[start + 3 * i]! | (data[start + 3 * i + 1]! << 8) | (data[start + 3 * i + 2]! << 16) : data.length - at;
    const end = Math.min(data.length, at + size);
    readers.push(new BoolReader(data, at, end));
    at = end;
  }
  return readers;
}

function readSegmentId(br: BoolReader, probs: number[]): number {
  return br.bit(probs[0]!) ? 2 + br.bit(probs[2]!) : br.bit(probs[1]!);
}

function readSubModes(br: BoolReader, upModes: Uint8Array, up: number, leftModes: Uint8Array, out: Uint8Array): void {
  for (let y = 0; y < 4; y++) {
    let left = leftModes[y]!;
    for (let x = 0; x < 4; x++) {
      const p = (upModes[up + x]! * 10 + left) * 9;
      let mode: Mode;
      if (!br.bit(SUB_MODE_PROBS[p]!)) mode = Mode.DC;
      else if (!br.bit(SUB_MODE_PROBS[p + 1]!)) mode = Mode.TM;
      else if (!br.bit(SUB_MODE_PROBS[p + 2]!)) mode = Mode.VE;
      else if (!br.bit(SUB_MODE_PROBS[p + 3]!)) mode = !br.bit(SUB_MODE_PROBS[p + 4]!) ? Mode.HE : !br.bit(SUB_MODE_PROBS[p + 5]!) ? Mode.RD : Mode.VR;
      else if (!br.bit(SUB_MODE_PROBS[p + 6]!)) mode = Mode.LD;
      else if (!br.bit(SUB_MODE_PROBS[p + 7]!)) mode = Mode.VL;
      else mode = !br.bit(SUB_MODE_PROBS[p + 8]!) ? Mode.HD : Mode.HU;
      out[y * 4 + x] = mode;
      upModes[up + x] = mode;
      left = mode;
    }
    leftModes[y] = left;
  }
}

// --- residuals ----------------------------------------------------------------------------------------------

/**
 * Reads a macroblock's coefficients (section 13) into `coeffs` (16 per block: 16 luma, 4 U, 4 V), dequantised,
 * and marks each block 0 (nothing to add), 1 (DC only) or 2 (inverse DCT). Updates the non-zero contexts:
 * per macroblock 4 luma columns/rows, 2 + 2 chroma, and the Y2 block. Returns whether any block is non-zero.
 */
function readResiduals(
  tr: BoolReader,
  probs: Uint8Array,
  q: Dequant,
  i4x4: boolean,
  upNz: Uint8Array,
  up: number,
  leftNz: Uint8Array,
  coeffs: Int16Array,
  blockKind: Uint8Array,
): boolean {
  coeffs.fill(0);
  let first = 0;
  let yPlane: Plane = Plane.YWithDc;
  if (!i4x4) {
    const y2 = 24 * 16;
    const nz = readCoefficients(tr, probs, Plane.Y2, upNz[up + 8]! + leftNz[8]!, q.y2[0], q.y2[1], 0, coeffs, y2);
    upNz[up + 8] = leftNz[8] = nz > 0 ? 1 : 0;
    if (nz > 1) inverseWht(coeffs, y2);
    else {
      const dc = (coeffs[y2]! + 3) >> 3;
      for (let n = 0; n < 16; n++) coeffs[n * 16] = dc;
    }
    first = 1;
    yPlane = Plane.YAfterY2;
  }
  let any = false;
  for (let y = 0; y < 4; y++) {
    let left = leftNz[y]!;
    for (let x = 0; x < 4; x++) {
      const n = y * 4 + x;
      const nz = readCoefficients(tr, probs, yPlane, left + upNz[up + x]!, q.y1[0], q.y1[1], first, coeffs, n * 16);
      left = upNz[up + x] = nz > first ? 1 : 0;
      const kind = nz > 1 ? 2 : coeffs[n * 16] !== 0 ? 1 : 0;
      blockKind[n] = kind;
      if (kind) any = true;
    }
    leftNz[y] = left;
  }
  for (let c = 4; c < 8; c += 2) {
    for (let y = 0; y < 2; y++) {
      let left = leftNz[c + y]!;
      for (let x = 0; x < 2; x++) {
        const n = 16 + (c - 4) * 2 + y * 2 + x;
        const nz = readCoefficients(tr, probs, Plane.Chroma, left + upNz[up + c + x]!, q.uv[0], q.uv[1], 0, coeffs, n * 16);
        left = upNz[up + c + x] = nz > 0 ? 1 : 0;
        const kind = nz > 1 ? 2 : coeffs[n * 16] !== 0 ? 1 : 0;
        blockKind[n] = kind;
        if (kind) any = true;
      }
      leftNz[c + y] = left;
    }
  }
  return any;
}

/**
 * Reads one block's tokens from position `n`, writing dequantised values in natural order at `at`. Returns
 * the position after the last token read (0 or `n` when the block is empty).
 */
function readCoefficients(
  tr: BoolReader,
  probs: Uint8Array,
  plane: Plane,
  ctx: number,
  dcq: number,
  acq: number,
  n: number,
  out: Int16Array,
  at: number,
): number {
  const base = plane * 264;
  let p = base + (BANDS[n]! * 3 + ctx) * 11;
  for (; n < 16; n++) {
    if (!tr.bit(probs[p]!)) return n;
    while (!tr.bit(probs[p + 1]!)) {
      if (++n === 16) return 16;
      p = base + BANDS[n]! * 33;
    }
    let v: number;
    let next: number;
    if (!tr.bit(probs[p + 2]!)) {
      v = 1;
      next = 1;
    } else {
      v = largeValue(tr, probs, p);
      next = 2;
    }
    if (tr.bit(128)) v = -v;
    out[at + ZIGZAG[n]!] = v * (n > 0 ? acq : dcq);
    p = base + (BANDS[n + 1]! * 3 + next) * 11;
  }
  return 16;
}

function largeValue(tr: BoolReader, probs: Uint8Array, p: number): number {
  if (!tr.bit(probs[p + 3]!)) return !tr.bit(probs[p + 4]!) ? 2 : 3 + tr.bit(probs[p + 5]!);
  if (!tr.bit(probs[p + 6]!)) {
    if (!tr.bit(probs[p + 7]!)) return 5 + tr.bit(159);
    return 7 + 2 * tr.bit(165) + tr.bit(145);
  }
  const high = tr.bit(probs[p + 8]!);
  const category = 2 * high + tr.bit(probs[p + 9 + high]!);
  let v = 0;
  for (const prob of CATEGORY_PROBS[category]!) v = 2 * v + tr.bit(prob);
  return v + 3 + (8 << category);
}

/** The inverse Walsh-Hadamard transform of the Y2 block into the DC of the 16 luma blocks. */
function inverseWht(c: Int16Array, at: number): void {
  const t = new Int32Array(16);
  for (let i = 0; i < 4; i++) {
    const a0 = c[at + i]! + c[at + 12 + i]!;
    const a1 = c[at + 4 + i]! + c[at + 8 + i]!;
    const a2 = c[at + 4 + i]! - c[at + 8 + i]!;
    const a3 = c[at + i]! - c[at + 12 + i]!;
    t[i] = a0 + a1;
    t[8 + i] = a0 - a1;
    t[4 + i] = a3 + a2;
    t[12 + i] = a3 - a2;
  }
  for (let i = 0; i < 4; i++) {
    const dc = t[i * 4]! + 3;
    const a0 = dc + t[i * 4 + 3]!;
    const a1 = t[i * 4 + 1]! + t[i * 4 + 2]!;
    const a2 = t[i * 4 + 1]! - t[i * 4 + 2]!;
    const a3 = dc - t[i * 4 + 3]!;
    c[i * 4 * 16] = (a0 + a1) >> 3;
    c[(i * 4 + 1) * 16] = (a3 + a2) >> 3;
    c[(i * 4 + 2) * 16] = (a0 - a1) >> 3;
    c[(i * 4 + 3) * 16] = (a3 - a2) >> 3;
  }
}

// --- reconstruction -----------------------------------------------------------------------------------------

const clip255 = (v: number) => (v < 0 ? 0 : v > 255 ? 255 : v);
const mul1 = (a: number) => ((a * 20091) >> 16) + a;
const mul2 = (a: number) => (a * 35468) >> 16;
const idctTemp = new Int32Array(16);

/** Adds block n's residual to the prediction at `at`: kind 1 is DC only, 2 the full inverse DCT. */
function addResidual(ws: Uint8Array, at: number, c: Int16Array, n: number, kind: number): void {
  if (kind === 0) return;
  const k = n * 16;
  if (kind === 1) {
    const dc = (c[k]! + 4) >> 3;
    for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) ws[at + y * BPS + x] = clip255(ws[at + y * BPS + x]! + dc);
    return;
  }
  const t = idctTemp;
  for (let i = 0; i < 4; i++) {
    const a = c[k + i]! + c[k + 8 + i]!;
    const b = c[k + i]! - c[k + 8 + i]!;
    const cc = mul2(c[k + 4 + i]!) - mul1(c[k + 12 + i]!);
    const d = mul1(c[k + 4 + i]!) + mul2(c[k + 12 + i]!);
    t[i * 4] = a + d;
    t[i * 4 + 1] = b + cc;
    t[i * 4 + 2] = b - cc;
    t[i * 4 + 3] = a - d;
  }
  for (let i = 0; i < 4; i++) {
    const dc = t[i]! + 4;
    const a = dc + t[8 + i]!;
    const b = dc - t[8 + i]!;
    const cc = mul2(t[4 + i]!) - mul1(t[12 + i]!);
    const d = mul1(t[4 + i]!) + mul2(t[12 + i]!);
    const row = at + i * BPS;
    ws[row] = clip255(ws[row]! + ((a + d) >> 3));
    ws[row + 1] = clip255(ws[row + 1]! + ((b + cc) >> 3));
    ws[row + 2] = clip255(ws[row + 2]! + ((b - cc) >> 3));
    ws[row + 3] = clip255(ws[row + 3]! + ((a - d) >> 3));
  }
}

/**
 * Fills the workspace's borders for macroblock (mbx, mby): the unfiltered row above (127 above the frame),
 * with four more pixels to its right for 4x4 prediction, and the column to the left (129 left of the frame).
 */
function prepareWorkspace(ws: Uint8Array, f: Vp8Frame, mbx: number, mby: number, mbw: number): void {
  if (mbx === 0) {
    for (let y = 0; y < 17; y++) ws[y * BPS + 7] = 129;
    for (let y = 17; y < 26; y++) ws[y * BPS + 7] = ws[y * BPS + 23] = 129;
  } else {
    for (let y = 0; y < 17; y++) ws[y * BPS + 7] = ws[y * BPS + 23]!;
    for (let y = 17; y < 26; y++) {
      ws[y * BPS + 7] = ws[y * BPS + 15]!;
      ws[y * BPS + 23] = ws[y * BPS + 31]!;
    }
  }
  if (mby === 0) {
    ws.fill(127, 7, 28);
    ws.fill(127, 17 * BPS + 7, 17 * BPS + 16);
    ws.fill(127, 17 * BPS + 23, 17 * BPS + 32);
  } else {
    const yRow = (mby * 16 - 1) * f.yStride + mbx * 16;
    const last = mbx === mbw - 1;
    for (let x = 0; x < 20; x++) ws[8 + x] = f.y[yRow + (last && x > 15 ? 15 : x)]!;
    const cRow = (mby * 8 - 1) * f.uvStride + mbx * 8;
    for (let x = 0; x < 8; x++) {
      ws[17 * BPS + 8 + x] = f.u[cRow + x]!;
      ws[17 * BPS + 24 + x] = f.v[cRow + x]!;
    }
  }
  for (let y = 4; y < 16; y += 4) for (let x = 24; x < 28; x++) ws[y * BPS + x] = ws[x]!;
}

function storeWorkspace(ws: Uint8Array, f: Vp8Frame, mbx: number, mby: number): void {
  const { y: yPlane, u, v, yStride, uvStride } = f;
  for (let y = 0; y < 16; y++) {
    const to = (mby * 16 + y) * yStride + mbx * 16;
    const from = Y_AT + y * BPS;
    for (let x = 0; x < 16; x++) yPlane[to + x] = ws[from + x]!;
  }
  for (let y = 0; y < 8; y++) {
    const to = (mby * 8 + y) * uvStride + mbx * 8;
    for (let x = 0; x < 8; x++) {
      u[to + x] = ws[U_AT + y * BPS + x]!;
      v[to + x] = ws[V_AT + y * BPS + x]!;
    }
  }
}

/** DC prediction without the row above (the frame's top) or the column left (its left edge). */
const enum Dc {
  Both = 0,
  NoTop = 10,
  NoLeft = 11,
  Neither = 12,
}

function checkDc(mode: Mode, mbx: number, mby: number): number {
  if (mode !== Mode.DC) return mode;
  if (mbx === 0) return mby === 0 ? Dc.Neither : Dc.NoLeft;
  return mby === 0 ? Dc.NoTop : Dc.Both;
}

/** 16x16 luma or 8x8 chroma prediction (section 12.2): DC (with edge variants), TM, VE, HE. */
function predictSquare(ws: Uint8Array, at: number, size: number, mode: number): void {
  const top = at - BPS;
  if (mode === Mode.VE) {
    for (let y = 0; y < size; y++) ws.copyWithin(at + y * BPS, top, top + size);
  } else if (mode === Mode.HE) {
    for (let y = 0; y < size; y++) ws.fill(ws[at + y * BPS - 1]!, at + y * BPS, at + y * BPS + size);
  } else if (mode === Mode.TM) {
    const corner = ws[top - 1]!;
    for (let y = 0; y < size; y++) {
      const d = ws[at + y * BPS - 1]! - corner;
      for (let x = 0; x < size; x++) ws[at + y * BPS + x] = clip255(ws[top + x]! + d);
    }
  } else {
    const shift = size === 16 ? 4 : 3;
    let dc = 128;
    let sumTop = 0;
    let sumLeft = 0;
    for (let i = 0; i < size; i++) {
      sumTop += ws[top + i]!;
      sumLeft += ws[at + i * BPS - 1]!;
    }
    if (mode === Dc.Both) dc = (sumTop + sumLeft + size) >> (shift + 1);
    else if (mode === Dc.NoTop) dc = (sumLeft + (size >> 1)) >> shift;
    else if (mode === Dc.NoLeft) dc = (sumTop + (size >> 1)) >> shift;
    for (let y = 0; y < size; y++) ws.fill(dc, at + y * BPS, at + y * BPS + size);
  }
}

const avg2 = (a: number, b: number) => (a + b + 1) >> 1;
const avg3 = (a: number, b: number, c: number) => (a + 2 * b + c + 2) >> 2;

/**
 * 4x4 luma prediction (section 12.3), from the 8 pixels above (4 of them above-right), 4 left and the corner.
 * The directional modes write each pixel at `at + y * 32 + x` (BPS is 32) with the value the spec gives it.
 */
function predict4(ws: Uint8Array, at: number, mode: number): void {
  const t = at - BPS;
  const X = ws[t - 1]!;
  const A = ws[t]!,
    B = ws[t + 1]!,
    C = ws[t + 2]!,
    D = ws[t + 3]!;
  const E = ws[t + 4]!,
    F = ws[t + 5]!,
    G = ws[t + 6]!,
    H = ws[t + 7]!;
  const I = ws[at - 1]!,
    J = ws[at + BPS - 1]!,
    K = ws[at + 2 * BPS - 1]!,
    L = ws[at + 3 * BPS - 1]!;
  switch (mode) {
    case Mode.DC: {
      const dc = (A + B + C + D + I + J + K + L + 4) >> 3;
      for (let y = 0; y < 4; y++) ws.fill(dc, at + y * BPS, at + y * BPS + 4);
      return;
    }
    case Mode.TM: {
      const top = [A, B, C, D];
      const left = [I, J, K, L];
      for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) ws[at + y * BPS + x] = clip255(top[x]! + left[y]! - X);
      return;
    }
    case Mode.VE: {
      const row = [avg3(X, A, B), avg3(A, B, C), avg3(B, C, D), avg3(C, D, E)];
      for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) ws[at + y * BPS + x] = row[x]!;
      return;
    }
    case Mode.HE: {
      const col = [avg3(X, I, J), avg3(I, J, K), avg3(J, K, L), avg3(K, L, L)];
      for (let y = 0; y < 4; y++) ws.fill(col[y]!, at + y * BPS, at + y * BPS + 4);
      return;
    }
    case Mode.RD: {
      // Each down-right diagonal (x - y constant) shares one value.
      const diag = [avg3(J, K, L), avg3(I, J, K), avg3(X, I, J), avg3(A, X, I), avg3(B, A, X), avg3(C, B, A), avg3(D, C, B)];
      for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) ws[at + y * BPS + x] = diag[3 + x - y]!;
      return;
    }
    case Mode.LD: {
      // Each down-left diagonal (x + y constant) shares one value.
      const diag = [avg3(A, B, C), avg3(B, C, D), avg3(C, D, E), avg3(D, E, F), avg3(E, F, G), avg3(F, G, H), avg3(G, H, H)];
      for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) ws[at + y * BPS + x] = diag[x + y]!;
      return;
    }
    case Mode.VR:
      ws[at] = ws[at + 65] = avg2(X, A);
      ws[at + 1] = ws[at + 66] = avg2(A, B);
      ws[at + 2] = ws[at + 67] = avg2(B, C);
      ws[at + 3] = avg2(C, D);
      ws[at + 96] = avg3(K, J, I);
      ws[at + 64] = avg3(J, I, X);
      ws[at + 32] = ws[at + 97] = avg3(I, X, A);
      ws[at + 33] = ws[at + 98] = avg3(X, A, B);
      ws[at + 34] = ws[at + 99] = avg3(A, B, C);
      ws[at + 35] = avg3(B, C, D);
      return;
    case Mode.VL:
      ws[at] = avg2(A, B);
      ws[at + 1] = ws[at + 64] = avg2(B, C);
      ws[at + 2] = ws[at + 65] = avg2(C, D);
      ws[at + 3] = ws[at + 66] = avg2(D, E);
      ws[at + 32] = avg3(A, B, C);
      ws[at + 33] = ws[at + 96] = avg3(B, C, D);
      ws[at + 34] = ws[at + 97] = avg3(C, D, E);
      ws[at + 35] = ws[at + 98] = avg3(D, E, F);
      ws[at + 67] = avg3(E, F, G);
      ws[at + 99] = avg3(F, G, H);
      return;
    case Mode.HD:
      ws[at] = ws[at + 34] = avg2(I, X);
      ws[at + 32] = ws[at + 66] = avg2(J, I);
      ws[at + 64] = ws[at + 98] = avg2(K, J);
      ws[at + 96] = avg2(L, K);
      ws[at + 3] = avg3(A, B, C);
      ws[at + 2] = avg3(X, A, B);
      ws[at + 1] = ws[at + 35] = avg3(I, X, A);
      ws[at + 33] = ws[at + 67] = avg3(J, I, X);
      ws[at + 65] = ws[at + 99] = avg3(K, J, I);
      ws[at + 97] = avg3(L, K, J);
      return;
    default: // HU
      ws[at] = avg2(I, J);
      ws[at + 2] = ws[at + 32] = avg2(J, K);
      ws[at + 34] = ws[at + 64] = avg2(K, L);
      ws[at + 1] = avg3(I, J, K);
      ws[at + 3] = ws[at + 33] = avg3(J, K, L);
      ws[at + 35] = ws[at + 65] = avg3(K, L, L);
      ws[at + 67] = ws[at + 66] = ws[at + 96] = ws[at + 97] = ws[at + 98] = ws[at + 99] = L;
  }
}

// --- loop filter (section 15) -------------------------------------------------------------------------------

const sclip1 = (v: number) => (v < -128 ? -128 : v > 127 ? 127 : v);
const sclip2 = (v: number) => (v < -16 ? -16 : v > 15 ? 15 : v);

/** Runs the loop filter over the frame, macroblock by macroblock: left edge, inner columns, top edge, inner rows. */
function loopFilter(f: Vp8Frame, mbw: number, mbh: number, mbFilter: Uint8Array, strengths: FilterStrength[], simple: boolean): void {
  const ys = f.yStride;
  const cs = f.uvStride;
  for (let mby = 0; mby < mbh; mby++) {
    for (let mbx = 0; mbx < mbw; mbx++) {
      const info = mbFilter[mby * mbw + mbx]!;
      const s = strengths[(info & 3) * 2 + ((info >> 2) & 1)]!;
      if (s.limit === 0) continue;
      const inner = (info & 8) !== 0;
      const y0 = mby * 16 * ys + mbx * 16;
      const c0 = mby * 8 * cs + mbx * 8;
      if (simple) {
        if (mbx > 0) simpleEdge(f.y, y0, 1, ys, s.limit + 4);
        if (inner) for (let i = 4; i < 16; i += 4) simpleEdge(f.y, y0 + i, 1, ys, s.limit);
        if (mby > 0) simpleEdge(f.y, y0, ys, 1, s.limit + 4);
        if (inner) for (let i = 4; i < 16; i += 4) simpleEdge(f.y, y0 + i * ys, ys, 1, s.limit);
        continue;
      }
      if (mbx > 0) {
        normalEdge(f.y, y0, 1, ys, 16, s.limit + 4, s.inner, s.hev, true);
        normalEdge(f.u, c0, 1, cs, 8, s.limit + 4, s.inner, s.hev, true);
        normalEdge(f.v, c0, 1, cs, 8, s.limit + 4, s.inner, s.hev, true);
      }
      if (inner) {
        for (let i = 4; i < 16; i += 4) normalEdge(f.y, y0 + i, 1, ys, 16, s.limit, s.inner, s.hev, false);
        normalEdge(f.u, c0 + 4, 1, cs, 8, s.limit, s.inner, s.hev, false);
        normalEdge(f.v, c0 + 4, 1, cs, 8, s.limit, s.inner, s.hev, false);
      }
      if (mby > 0) {
        normalEdge(f.y, y0, ys, 1, 16, s.limit + 4, s.inner, s.hev, true);
        normalEdge(f.u, c0, cs, 1, 8, s.limit + 4, s.inner, s.hev, true);
        normalEdge(f.v, c0, cs, 1, 8, s.limit + 4, s.inner, s.hev, true);
      }
      if (inner) {
        for (let i = 4; i < 16; i += 4) normalEdge(f.y, y0 + i * ys, ys, 1, 16, s.limit, s.inner, s.hev, false);
        normalEdge(f.u, c0 + 4 * cs, cs, 1, 8, s.limit, s.inner, s.hev, false);
        normalEdge(f.v, c0 + 4 * cs, cs, 1, 8, s.limit, s.inner, s.hev, false);
      }
    }
  }
}

/**
 * The simple filter across one 16-pixel edge: `step` crosses the edge (1 for a vertical edge), `along` moves
 * along it; pixel `at` is the first past the edge.
 */
function simpleEdge(p: Uint8Array, at: number, step: number, along: number, limit: number): void {
  const threshold = 2 * limit + 1;
  for (let i = 0; i < 16; i++, at += along) {
    const p1 = p[at - 2 * step]!,
      p0 = p[at - step]!,
      q0 = p[at]!,
      q1 = p[at + step]!;
    if (4 * Math.abs(p0 - q0) + Math.abs(p1 - q1) > threshold) continue;
    commonAdjust(p, at, step, p1, p0, q0, q1, true);
  }
}

/** The normal filter across one edge of `length` pixels; `macroblock` picks the wider macroblock-edge filter. */
function normalEdge(
  p: Uint8Array,
  at: number,
  step: number,
  along: number,
  length: number,
  limit: number,
  inner: number,
  hev: number,
  macroblock: boolean,
): void {
  const threshold = 2 * limit + 1;
  for (let i = 0; i < length; i++, at += along) {
    const p3 = p[at - 4 * step]!,
      p2 = p[at - 3 * step]!,
      p1 = p[at - 2 * step]!,
      p0 = p[at - step]!;
    const q0 = p[at]!,
      q1 = p[at + step]!,
      q2 = p[at + 2 * step]!,
      q3 = p[at + 3 * step]!;
    if (4 * Math.abs(p0 - q0) + Math.abs(p1 - q1) > threshold) continue;
    if (Math.abs(p3 - p2) > inner || Math.abs(p2 - p1) > inner || Math.abs(p1 - p0) > inner) continue;
    if (Math.abs(q3 - q2) > inner || Math.abs(q2 - q1) > inner || Math.abs(q1 - q0) > inner) continue;
    if (Math.abs(p1 - p0) > hev || Math.abs(q1 - q0) > hev) {
      commonAdjust(p, at, step, p1, p0, q0, q1, true);
    } else if (macroblock) {
      const w = sclip1(3 * (q0 - p0) + sclip1(p1 - q1));
      const a1 = (27 * w + 63) >> 7;
      const a2 = (18 * w + 63) >> 7;
      const a3 = (9 * w + 63) >> 7;
      p[at - 3 * step] = clip255(p2 + a3);
      p[at - 2 * step] = clip255(p1 + a2);
      p[at - step] = clip255(p0 + a1);
      p[at] = clip255(q0 - a1);
      p[at + step] = clip255(q1 - a2);
      p[at + 2 * step] = clip255(q2 - a3);
    } else {
      const a = 3 * (q0 - p0);
      const a1 = sclip2((a + 4) >> 3);
      const a2 = sclip2((a + 3) >> 3);
      const a3 = (a1 + 1) >> 1;
      p[at - 2 * step] = clip255(p1 + a3);
      p[at - step] = clip255(p0 + a2);
      p[at] = clip255(q0 - a1);
      p[at + step] = clip255(q1 - a3);
    }
  }
}

/** Moves p0 and q0 toward each other, using p1 - q1 when `outer` (the simple filter and high edge variance). */
function commonAdjust(p: Uint8Array, at: number, step: number, p1: number, p0: number, q0: number, q1: number, outer: boolean): void {
  const a = 3 * (q0 - p0) + (outer ? sclip1(p1 - q1) : 0);
  const a1 = sclip2((a + 4) >> 3);
  const a2 = sclip2((a + 3) >> 3);
  p[at - step] = clip255(p0 + a2);
  p[at] = clip255(q0 - a1);
}
