/**
 * A JPEG decoder in plain TypeScript with DCT-domain scaling (ITU T.81 baseline, extended sequential and
 * progressive Huffman; 8-bit; grey, YCbCr, RGB, CMYK and YCCK).
 *
 * Why it exists: photon decodes every pixel of a 12 MP photo into WASM memory that never shrinks, only for us
 * to throw three quarters of them away in the resize. Evaluating the inverse DCT on a 4x4, 2x2 or 1x1 grid
 * (the "shrink-on-load" of libjpeg and libvips) yields the image at 1/2, 1/4 or 1/8 size directly, so the
 * IDCT, colour conversion and resize all work on a quarter (or less) of the pixels, and nothing lands in WASM.
 * Any N/8 scale is supported (libjpeg-turbo's scale_num), so the decoded size lands just above the target.
 *
 * Four-component JPEGs are read as Adobe writes them (Photoshop's convention, which libjpeg-based readers and
 * photon follow with or without the APP14 marker): the stored values are inverted inks, and Adobe transform 2
 * means YCCK (YCbCr for the inverted C, M, Y; K as it is). They become RGB without an ICC profile,
 * R = C * K / 255 on the stored values, as photon converts them.
 *
 * Anything outside that set (unusual sampling factors, 12-bit, a table that is missing) returns null and the
 * caller falls back to photon; corrupt entropy data throws a plain Error, which the caller also treats as
 * "let photon decide", so the 422/500 behaviour stays photon's.
 */
import { GIVE_UP, MARKS, NOT_YET, SplitMemory } from "./entropy-split";
import type { Plane, YCbCrImage } from "./planes";
import type { GrayImage, RgbaImage } from "./types";

/** The decoded image plus the scale that was used: `eighths` / 8 (1..8; 8 is full size). */
export interface ScaledDecode extends RgbaImage {
  eighths: number;
}

/** Natural (row-major) index of each zigzag position (the encoder's order too). */
export const ZIGZAG = new Int32Array([
  0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22,
  15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
]);

/** Coefficients held before the IDCT of a progressive image; above this we let photon try instead. */
const MAX_COEFFICIENT_BYTES = 96 * 1024 * 1024;

const LOOKUP_BITS = 11;
const LOOKUP_MASK = (1 << LOOKUP_BITS) - 1;
/** The run a fast AC entry gives the end-of-block code: it always carries the index past 63. */
const EOB_RUN = 63;

export interface Huffman {
  /** (code length << 8) | symbol for every LOOKUP_BITS-bit prefix of a short code; 0 when the code is longer. */
  lookup: Uint16Array;
  /**
   * For AC tables: when a prefix holds a whole code and its value bits, (value << 10) | (run << 4) | bits used,
   * so the common small coefficients cost one table read (libjpeg-turbo does the same); the end-of-block code
   * as run EOB_RUN with no value; 0 otherwise.
   */
  fast: Int32Array;
  /** Largest code of each length (-1 when none), for the codes longer than LOOKUP_BITS. */
  maxCode: Int32Array;
  /** Added to a code of a given length to index `values`. */
  valueOffset: Int32Array;
  values: Uint8Array;
}

interface Component {
  id: number;
  h: number;
  v: number;
  tq: number;
  /** Blocks per line / column of the MCU-padded grid (storage). */
  blocksPerLine: number;
  blocksPerColumn: number;
  /** Blocks that hold image data, as iterated by a non-interleaved scan. */
  usedBlocksPerLine: number;
  usedBlocksPerColumn: number;
  /** Scaled pixels per block side (8 / denominator) and the output plane (blocksPerLine * size wide). */
  plane: Uint8ClampedArray;
  /**
   * Decoded only as far as reading the file needs, never stored (the chroma of a luma-only decode): no plane,
   * no coefficients, no IDCT; a progressive scan of only such components is not entropy-decoded at all.
   */
  skip: boolean;
  /**
   * Progressive only: the coefficients the IDCT will read (the top-left size x size of every block, row by
   * row), quantised. The rest of each block is never read, so only whether it is nonzero is kept, in
   * `nonzero` (64 bits per block, by zigzag index): the refinement scans need that, not the value.
   */
  coefficients: Int16Array | null;
  nonzero: Uint8Array | null;
  dcTable: Huffman | null;
  acTable: Huffman | null;
  pred: number;
  /** A sequential frame's component already decoded by a scan (another scan of it is refused). */
  scanned: boolean;
}

interface Frame {
  progressive: boolean;
  width: number;
  height: number;
  hMax: number;
  vMax: number;
  mcusPerLine: number;
  mcusPerColumn: number;
  components: Component[];
  size: number;
}

class Unsupported extends Error {}

/**
 * The smallest scale N/8 (N = 1..8) that keeps a `width` x `height` image at least `minWidth` x `minHeight`.
 * Like libjpeg-turbo's scale_num/8, any N works, not only 1/2, 1/4, 1/8: a 4000x3000 photo bound for
 * 1440x1080 decodes at 3/8 (1500x1125), which leaves the resize almost nothing to do.
 *
 * @example
 * chooseEighths(4000, 3000, 1440, 1080); // 3
 */
export function chooseEighths(width: number, height: number, minWidth: number, minHeight: number): number {
  for (let n = 1; n < 8; n++) {
    if (Math.ceil((width * n) / 8) >= minWidth && Math.ceil((height * n) / 8) >= minHeight) return n;
  }
  return 8;
}

/** The subsampling ratios the planes' shift-based upsampling handles (each sample covers 1, 2 or 4 pixels). */
const POWERS = new Set([1, 2, 4]);

/**
 * Whether this decoder takes a frame with these sampling factors (each `h << 4 | v`, as written in SOF):
 * one component whatever it declares, else every component subsampled by 1, 2 or 4 on each axis relative
 * to the largest (4:4:4, 4:2:2, 4:4:0, 4:2:0, 4:1:1, 1x4, 4x2). Anything else (a ratio of 3) is left to
 * photon.
 *
 * @example
 * samplingSupported([0x22, 0x11, 0x11]); // true (4:2:0)
 * samplingSupported([0x41, 0x11, 0x11]); // true (4:1:1)
 * samplingSupported([0x31, 0x11, 0x11]); // false (3:1 horizontally)
 */
export function samplingSupported(sampling: number[]): boolean {
  if (sampling.length === 1) return true;
  const hs = sampling.map((s) => s >> 4);
  const vs = sampling.map((s) => s & 15);
  const hMax = Math.max(...hs);
  const vMax = Math.max(...vs);
  return hs.every((h, i) => {
    const v = vs[i]!;
    return h >= 1 && v >= 1 && POWERS.has(hMax / h) && POWERS.has(vMax / v);
  });
}

/**
 * Decodes a JPEG to RGBA at the smallest scale N/8 that is still at least `minWidth` x `minHeight` (stored
 * orientation, EXIF not applied). Returns null for the JPEG variants it does
 * not handle; throws an Error for corrupt data. Callers have run the header and size checks.
 *
 * @example
 * const img = decodeJpegScaled(bytes, 1440, 1080); // 4000x3000 input -> 1500x1125, eighths 3
 */
export function decodeJpegScaled(bytes: Uint8Array, minWidth = Infinity, minHeight = Infinity): ScaledDecode | null {
  try {
    const { frame, adobeTransform } = decode(bytes, minWidth, minHeight);
    return { ...toRgba(frame, adobeTransform), eighths: frame.size };
  } catch (e) {
    if (e instanceof Unsupported) return null;
    throw e;
  }
}

/**
 * Like `decodeJpegScaled`, but hands back the YCbCr planes as decoded (chroma still subsampled) instead of
 * RGBA, for the JPEG -> JPEG path. Returns null for everything `decodeJpegScaled` would, and also for
 * RGB-stored and CMYK JPEGs, refused at their frame header (those take the RGBA path); greyscale comes back
 * with neutral 1x1 chroma planes.
 *
 * @example
 * const img = decodeJpegPlanes(bytes, 1440, 1080); // 4000x3000 4:2:0 -> Y 1500x1125, Cb/Cr 750x563
 */
export function decodeJpegPlanes(bytes: Uint8Array, minWidth = Infinity, minHeight = Infinity, sink?: PlaneSink): (YCbCrImage & { eighths: number }) | null {
  try {
    const { frame, adobeTransform } = decode(bytes, minWidth, minHeight, "planes", sink);
    const [c0, c1, c2] = frame.components;
    const size = frame.size;
    const { width, height } = scaledSize(frame);
    if (c0 && !c1) {
      // Greyscale: neutral chroma (one sample each, stretched over the image).
      const neutral = (): Plane => ({ width: 1, height: 1, stride: 1, data: new Uint8Array([128]) });
      return { width, height, y: { width, height, stride: c0.blocksPerLine * size, data: c0.plane }, cb: neutral(), cr: neutral(), eighths: size };
    }
    if (frame.components.length !== 3 || !c0 || !c1 || !c2 || rgbStored(frame, adobeTransform)) return null;
    const plane = (c: Component): Plane => ({
      width: Math.ceil((width * c.h) / frame.hMax),
      height: Math.ceil((height * c.v) / frame.vMax),
      stride: c.blocksPerLine * size,
      data: c.plane,
    });
    return { width, height, y: plane(c0), cb: plane(c1), cr: plane(c2), eighths: size };
  } catch (e) {
    if (e instanceof Unsupported) return null;
    throw e;
  }
}

/** One plane of a YCbCr frame as `PlaneSink.planes` is told it, before any of it is decoded. */
export interface SinkPlane {
  /** Samples that hold the image (the rest of each row, and the rows below, are the MCU grid's padding). */
  width: number;
  height: number;
  /** Samples from one row to the next, and rows in all: the plane's memory is `stride * rows` samples. */
  stride: number;
  rows: number;
  /** Rows of this plane each MCU row of the frame completes. */
  rowsPerMcuRow: number;
}

/**
 * Where a planes decode puts its planes and says how far it has got: for a reader in another thread that
 * works on the rows while the rest are still being decoded (normalisation's pipeline, plane-pipe.ts).
 */
export interface PlaneSink {
  /**
   * Called once, with the Y, Cb and Cr planes of a sequential (baseline) YCbCr frame at the chosen scale,
   * at its first scan before any entropy decoding (with the scan's split, if any); returns the memory for
   * each (`stride * rows` samples, zeroed), or null to have none of it (the decode then goes on as without a
   * sink). Not called for greyscale, progressive or refused frames.
   */
  planes(planes: SinkPlane[], size: { width: number; height: number }, split?: EntropySplit): Uint8ClampedArray[] | null;
  /**
   * Whether the reader in the other thread can also take the second part of the entropy decoding: then a
   * scan that allows it comes with an `EntropySplit` for `decodeSplitTail` there (entropy-split.ts).
   */
  splits?: boolean;
  /** Called instead of `planes` for a frame whose planes are not offered (greyscale, progressive). */
  decline(): void;
  /**
   * The MCU rows of every plane decoded so far. Called after each MCU row of a scan that holds all three
   * components; a file that sends them in separate scans calls nothing, and every row is final only once
   * the decode returns.
   */
  rows(mcuRows: number): void;
}

/**
 * The luma of a JPEG at the smallest N/8 scale that is still at least `minWidth` x `minHeight` (stored
 * orientation), for a reader that only needs brightness (the QR reader): the Y plane of a YCbCr JPEG, the
 * plane of a grey one. The chroma is read past, never stored: a progressive file's chroma scans are skipped
 * whole, and neither their coefficients, planes, IDCT nor an RGBA image are made, so a 12 MP photo costs its
 * luma plane instead of that plus a four-times-larger RGBA copy. A CMYK or YCCK JPEG keeps its four planes
 * and gets the luma of its colours written over the first, still without an RGBA image. Null where
 * `decodeJpegScaled` would be, and for RGB-stored JPEGs and those whose first plane is subsampled.
 *
 * @example
 * const gray = decodeJpegGray(bytes, 1600, 1200); // 4000x3000 4:2:0 -> 2000x1500 grey, eighths 4
 */
export function decodeJpegGray(bytes: Uint8Array, minWidth = Infinity, minHeight = Infinity): (GrayImage & { eighths: number }) | null {
  try {
    const { frame, adobeTransform } = decode(bytes, minWidth, minHeight, "luma");
    const first = frame.components[0]!;
    const size = frame.size;
    const { width, height } = scaledSize(frame);
    const stride = first.blocksPerLine * size;
    const plane = first.plane;
    if (frame.components.length === 4) {
      cmykConvert(frame, adobeTransform === 2, width, height, plane, true);
    } else {
      // Rows packed to the image's width in place (each row moves left, never over one not yet moved).
      for (let y = 1; y < height; y++) plane.copyWithin(y * width, y * stride, y * stride + width);
    }
    return { width, height, data: new Uint8Array(plane.buffer, plane.byteOffset, width * height), eighths: size };
  } catch (e) {
    if (e instanceof Unsupported) return null;
    throw e;
  }
}

/** Whether a three-component frame holds RGB as it is: Adobe transform 0, or component ids 'R', 'G', 'B'. */
function rgbStored(frame: Frame, adobeTransform: number): boolean {
  return frame.components.length === 3 && (adobeTransform === 0 || rgbIds(frame.components));
}

/** Whether three components are named 'R', 'G', 'B'. */
function rgbIds(components: { id: number }[]): boolean {
  const [c0, c1, c2] = components;
  return components.length === 3 && c0!.id === 0x52 && c1!.id === 0x47 && c2!.id === 0x42;
}

/**
 * What a decode is for, so a file that cannot give it is refused at its frame header, before any entropy
 * decoding: RGBA from any colour model; YCbCr planes (not CMYK, not RGB-stored); luma alone (the same, and
 * the chroma never stored).
 */
type Want = "rgba" | "planes" | "luma";

function decode(b: Uint8Array, minWidth: number, minHeight: number, want: Want = "rgba", sink?: PlaneSink): { frame: Frame; adobeTransform: number } {
  const quant: (Int32Array | undefined)[] = [];
  const dcTables: (Huffman | undefined)[] = [];
  const acTables: (Huffman | undefined)[] = [];
  let frame: Frame | null = null;
  /** Whether the sink's planes are still to be offered, at the first scan. */
  let offer = false;
  let restartInterval = 0;
  let adobeTransform = -1;
  let pos = 2;
  const window = new Uint8Array(WINDOW + MARGIN);
  if (b[0] !== 0xff || b[1] !== 0xd8) throw new Error("not a JPEG");
  for (;;) {
    if (pos + 2 > b.length) throw new Error("JPEG ends inside its headers");
    if (b[pos] !== 0xff) throw new Error("marker expected");
    const marker = b[pos + 1]!;
    if (marker === 0xff) {
      pos++;
      continue;
    }
    pos += 2;
    if (marker === 0xd9) break;
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) continue;
    if (pos + 2 > b.length) throw new Error("JPEG ends inside its headers");
    const length = (b[pos]! << 8) | b[pos + 1]!;
    const end = pos + length;
    if (length < 2 || end > b.length) throw new Error("segment runs past the end");
    const seg = b.subarray(pos + 2, end);
    switch (marker) {
      case 0xdb:
        readQuant(seg, quant);
        break;
      case 0xc4:
        readHuffman(seg, dcTables, acTables);
        break;
      case 0xdd:
        restartInterval = (seg[0]! << 8) | seg[1]!;
        break;
      case 0xee:
        if (seg.length >= 12 && seg[0] === 0x41 && seg[1] === 0x64 && seg[2] === 0x6f && seg[3] === 0x62 && seg[4] === 0x65) adobeTransform = seg[11]!;
        break;
      case 0xc0:
      case 0xc1:
      case 0xc2: {
        if (frame) throw new Unsupported("more than one frame");
        frame = readFrame(seg, marker === 0xc2, minWidth, minHeight, want, !!sink);
        // Planes that can be offered are offered at the first scan, whose tables a split needs.
        if (sink && offerable(frame)) offer = true;
        else if (sink) declinePlanes(frame, sink);
        break;
      }
      case 0xda: {
        if (!frame) throw new Error("scan before frame");
        pos = decodeScan(b, end, seg, frame, quant, dcTables, acTables, restartInterval, window, sink, offer);
        offer = false;
        continue;
      }
      default:
        if (marker >= 0xc3 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) throw new Unsupported("JPEG process");
    }
    pos = end;
  }
  if (!frame) throw new Error("no frame");
  if (offer && sink) offerPlanes(frame, sink, null); // a frame without a scan
  // An Adobe marker after the frame (unusual, but legal) can still say the three components are RGB.
  if (want !== "rgba" && rgbStored(frame, adobeTransform)) throw new Unsupported("RGB-stored JPEG");
  if (frame.progressive) {
    for (const c of frame.components) {
      if (c.skip) continue;
      const q = quant[c.tq];
      if (!q) throw new Unsupported("missing quantisation table");
      idctAll(c, q, frame.size);
    }
  }
  return { frame, adobeTransform };
}

/** Whether a frame's planes go to a sink: sequential, three components. */
const offerable = (frame: Frame) => !frame.progressive && frame.components.length === 3;

/** Samples of a component's plane (none for one not kept). */
const planeSamples = (frame: Frame, c: Component) => (c.skip ? 0 : c.blocksPerLine * c.blocksPerColumn * frame.size * frame.size);

/** Planes of the decode's own for a frame whose planes are not offered (`readFrame` left them empty). */
function declinePlanes(frame: Frame, sink: PlaneSink): void {
  sink.decline();
  ownPlanes(frame);
}

function ownPlanes(frame: Frame): void {
  for (const c of frame.components) c.plane = new Uint8ClampedArray(planeSamples(frame, c));
}

/**
 * Hands a sequential three-component frame's plane geometry (and `split`, if any) to `sink` and decodes into
 * the memory it gives instead of planes of its own; whether it gave any.
 */
function offerPlanes(frame: Frame, sink: PlaneSink, split: EntropySplit | null): boolean {
  const size = frame.size;
  const { width, height } = scaledSize(frame);
  const planes = frame.components.map(
    (c): SinkPlane => ({
      width: Math.ceil((width * c.h) / frame.hMax),
      height: Math.ceil((height * c.v) / frame.vMax),
      stride: c.blocksPerLine * size,
      rows: c.blocksPerColumn * size,
      rowsPerMcuRow: c.v * size,
    }),
  );
  const memory = sink.planes(planes, { width, height }, split ?? undefined);
  if (!memory) {
    ownPlanes(frame);
    return false;
  }
  frame.components.forEach((c, i) => {
    const plane = memory[i]!;
    const samples = planeSamples(frame, c);
    if (plane.length !== samples) throw new RangeError(`plane ${i} needs ${samples} samples, was given ${plane.length}`);
    c.plane = plane;
  });
  return true;
}

function readQuant(seg: Uint8Array, quant: (Int32Array | undefined)[]): void {
  let p = 0;
  while (p < seg.length) {
    const pq = seg[p]! >> 4;
    const tq = seg[p]! & 15;
    p++;
    if (tq > 3) throw new Error("bad quantisation table id");
    const q = new Int32Array(64);
    for (let k = 0; k < 64; k++) {
      q[ZIGZAG[k]!] = pq ? (seg[p + 2 * k]! << 8) | seg[p + 2 * k + 1]! : seg[p + k]!;
    }
    p += pq ? 128 : 64;
    if (p > seg.length) throw new Error("quantisation table runs past its segment");
    quant[tq] = q;
  }
}

function readHuffman(seg: Uint8Array, dc: (Huffman | undefined)[], ac: (Huffman | undefined)[]): void {
  let p = 0;
  while (p + 17 <= seg.length) {
    const tc = seg[p]! >> 4;
    const th = seg[p]! & 15;
    if (tc > 1 || th > 3) throw new Error("bad Huffman table id");
    const counts = seg.subarray(p + 1, p + 17);
    let total = 0;
    for (let i = 0; i < 16; i++) total += counts[i]!;
    p += 17;
    if (p + total > seg.length) throw new Error("Huffman table runs past its segment");
    const table = buildHuffman(counts, seg.slice(p, p + total));
    p += total;
    (tc === 0 ? dc : ac)[th] = table;
  }
}

function buildHuffman(counts: Uint8Array, values: Uint8Array): Huffman {
  const lookup = new Uint16Array(1 << LOOKUP_BITS);
  const maxCode = new Int32Array(18).fill(-1);
  const valueOffset = new Int32Array(18);
  let code = 0;
  let k = 0;
  for (let len = 1; len <= 16; len++) {
    const n = counts[len - 1]!;
    valueOffset[len] = k - code;
    for (let i = 0; i < n; i++, code++, k++) {
      if (len <= LOOKUP_BITS) {
        const shift = LOOKUP_BITS - len;
        const first = code << shift;
        lookup.fill((len << 8) | values[k]!, first, first + (1 << shift));
      }
    }
    if (n) maxCode[len] = code - 1;
    if (code > 1 << len) throw new Error("Huffman table is over-subscribed");
    code <<= 1;
  }
  maxCode[17] = 0x7fffffff; // sentinel: no code is longer than 16 bits
  const fast = new Int32Array(1 << LOOKUP_BITS);
  for (let peek = 0; peek < 1 << LOOKUP_BITS; peek++) {
    const e = lookup[peek]!;
    if (e === 0) continue;
    const len = e >> 8;
    const size = e & 15;
    const run = (e >> 4) & 15;
    if ((e & 255) === 0) {
      fast[peek] = (EOB_RUN << 4) | len; // end of block: a run past 63 that the scan reads as "stop"
      continue;
    }
    if (size === 0 || len + size > LOOKUP_BITS) continue;
    let v = (peek >> (LOOKUP_BITS - len - size)) & ((1 << size) - 1);
    if (v < 1 << (size - 1)) v -= (1 << size) - 1;
    fast[peek] = (v << 10) | (run << 4) | (len + size);
  }
  return { lookup, fast, maxCode, valueOffset, values };
}

/** The frame header; with `planesLater`, the planes are left empty for `offerPlanes` to provide. */
function readFrame(seg: Uint8Array, progressive: boolean, minWidth: number, minHeight: number, want: Want, planesLater = false): Frame {
  if (seg[0] !== 8) throw new Unsupported("precision");
  const height = (seg[1]! << 8) | seg[2]!;
  const width = (seg[3]! << 8) | seg[4]!;
  const n = seg[5]!;
  if (width === 0 || height === 0) throw new Unsupported("height defined by DNL");
  if (n !== 1 && n !== 3 && n !== 4) throw new Unsupported("component count");
  if (want === "planes" && n === 4) throw new Unsupported("CMYK JPEG");
  if (seg.length < 6 + 3 * n) throw new Error("frame header too short");
  const raw: { id: number; h: number; v: number; tq: number }[] = [];
  for (let i = 0; i < n; i++) {
    const p = 6 + 3 * i;
    raw.push({ id: seg[p]!, h: seg[p + 1]! >> 4, v: seg[p + 1]! & 15, tq: seg[p + 2]! });
  }
  if (n === 1) {
    raw[0]!.h = 1;
    raw[0]!.v = 1;
  } // one component: the MCU is one block whatever it declares
  const hMax = Math.max(...raw.map((c) => c.h));
  const vMax = Math.max(...raw.map((c) => c.v));
  if (raw.some((c) => c.tq > 3) || !samplingSupported(raw.map((c) => (c.h << 4) | c.v))) throw new Unsupported("sampling factors");
  if (want === "luma" && (raw[0]!.h !== hMax || raw[0]!.v !== vMax)) throw new Unsupported("subsampled luma");
  if (want !== "rgba" && rgbIds(raw)) throw new Unsupported("RGB-stored JPEG");
  const size = chooseEighths(width, height, minWidth, minHeight);
  const mcusPerLine = Math.ceil(width / (8 * hMax));
  const mcusPerColumn = Math.ceil(height / (8 * vMax));
  const components = raw.map((c, i): Component => {
    const blocksPerLine = mcusPerLine * c.h;
    const blocksPerColumn = mcusPerColumn * c.v;
    const skip = want === "luma" && n === 3 && i > 0;
    const blocks = skip ? 0 : blocksPerLine * blocksPerColumn;
    // Every field written out in one literal, no spread: a literal's shape is kept by its site (V8's boilerplate),
    // so every decode's components share one hidden class and the block loop's property reads stay inline. A
    // spread's shape lived only as long as its objects: after a collection each decode met a new one, and the
    // loop's reads turned megamorphic within a few uploads.
    return {
      id: c.id,
      h: c.h,
      v: c.v,
      tq: c.tq,
      blocksPerLine,
      blocksPerColumn,
      usedBlocksPerLine: Math.ceil(Math.ceil((width * c.h) / hMax) / 8),
      usedBlocksPerColumn: Math.ceil(Math.ceil((height * c.v) / vMax) / 8),
      plane: new Uint8ClampedArray(planesLater ? 0 : blocks * size * size),
      skip,
      coefficients: null,
      nonzero: null,
      dcTable: null,
      acTable: null,
      pred: 0,
      scanned: false,
    };
  });
  if (progressive) {
    // size x size values per block, plus the nonzero bits of the others when the window is not the whole block.
    const perBlock = 2 * size * size + (size < 8 ? 8 : 0);
    const kept = components.filter((c) => !c.skip);
    const bytes = kept.reduce((s, c) => s + c.blocksPerLine * c.blocksPerColumn * perBlock, 0);
    if (bytes > MAX_COEFFICIENT_BYTES) throw new Unsupported("progressive image too large to hold its coefficients");
    for (const c of kept) {
      const blocks = c.blocksPerLine * c.blocksPerColumn;
      c.coefficients = new Int16Array(blocks * size * size);
      c.nonzero = size < 8 ? new Uint8Array(blocks * 8) : null;
    }
  }
  return { progressive, width, height, hMax, vMax, mcusPerLine, mcusPerColumn, components, size };
}

/**
 * The unstuffed entropy data of a scan is read through a window of this many bytes, refilled from the file
 * as the decode moves on: the bit reader needs no marker checks, and a decode holds 64 KiB for it instead
 * of a copy of the whole file (10 MB for the largest JPEG a Worker takes, twice over when an image is
 * decoded at two sizes).
 */
const WINDOW = 64 * 1024;
/**
 * What is left in the window when it is refilled, checked before each MCU: more than one MCU can read (at
 * most 10 blocks of about 210 bytes each, every coefficient with the longest code and value).
 */
const MARGIN = 4096;

/** Where the unstuffing of a scan stands. */
const enum Source {
  /** More data follows what the window holds. */
  More,
  /** Stopped at an RSTn marker (consumed), until the reader's restart interval ends. */
  AtRestart,
  /** The scan's data ended, at a marker other than RSTn (`next`) or at the end of the file. */
  Ended,
}

/**
 * The bit reader of a scan: the window of unstuffed data (`data`, valid up to `length`, zero after as far as
 * it was ever written), the next byte `p`, and the `cnt` bits not yet used in the low bits of `buf`; the
 * progressive end-of-band run, which restarts also reset; and the file it unstuffs from: the next byte
 * `sp`, how far it got, the marker that ends the scan (`next`), and how far the window was ever written
 * (`dirty`).
 */
interface BitReader {
  data: Uint8Array;
  length: number;
  /** Unstuffed bytes of the scan before the window's first: the reader is `(base + p) * 8 - cnt` bits in. */
  base: number;
  /** A byte of the file (`mark`, -1 for none) whose place in the unstuffed data the refill notes (`marked`). */
  mark: number;
  marked: number;
  p: number;
  buf: number;
  cnt: number;
  eobrun: number;
  src: Uint8Array;
  sp: number;
  state: Source;
  next: number;
  dirty: number;
}

/**
 * A reader for the scan whose entropy data starts at `start` in `b`, its window filled; `mark`: a byte of the
 * data, not next to an 0xFF, whose place in the unstuffed data the reader is to note as it passes.
 */
function scanReader(b: Uint8Array, start: number, window: Uint8Array, mark = -1): BitReader {
  const r: BitReader = {
    data: window,
    length: 0,
    base: 0,
    mark,
    marked: -1,
    p: 0,
    buf: 0,
    cnt: 0,
    eobrun: 0,
    src: b,
    sp: start,
    state: Source.More,
    next: b.length,
    dirty: window.length,
  };
  refill(r);
  return r;
}

/**
 * Moves what the reader has not read to the front of the window and unstuffs more of the scan after it
 * (0xFF00 becomes 0xFF, fill bytes are dropped), up to a full window, an RSTn marker or the scan's end. Past
 * the data the window reads zero, as the end of a fresh buffer would: zero padding lets the fast bit reader
 * run off the end without a bounds check per byte.
 */
function refill(r: BitReader): void {
  const { data, src: b } = r;
  const keep = Math.max(0, r.length - r.p);
  data.copyWithin(0, r.p, r.p + keep);
  let o = keep;
  let p = r.sp;
  r.base += r.p;
  r.p = 0;
  while (r.state === Source.More) {
    if (o >= WINDOW) break;
    if (p >= b.length) {
      r.state = Source.Ended;
      break;
    }
    // Whole runs up to the next 0xFF at native speed (in entropy data that is one byte in ~256).
    let ff = b.indexOf(0xff, p);
    if (ff < 0) ff = b.length;
    const run = Math.min(ff - p, WINDOW - o);
    if (run > 0) {
      if (r.mark >= p && r.mark < p + run) r.marked = r.base + o + (r.mark - p);
      data.set(b.subarray(p, p + run), o);
      o += run;
      p += run;
      continue;
    }
    const q = pastFill(b, p);
    if (q >= b.length) {
      p = q;
      r.state = Source.Ended;
      break;
    }
    const m = b[q]!;
    if (m === 0x00) {
      data[o++] = 0xff;
      p = q + 1;
      continue;
    }
    p = q + 1;
    if (m >= 0xd0 && m <= 0xd7) {
      r.state = Source.AtRestart;
      break;
    }
    r.state = Source.Ended;
    r.next = q - 1; // the scan ends at any other marker: its position goes back to the header loop
  }
  r.sp = p;
  r.length = o;
  if (r.dirty > o) data.fill(0, o, r.dirty);
  r.dirty = r.state === Source.More ? WINDOW : o;
}

/**
 * The reader at the start of the next restart interval: past the next RSTn marker, its bits and end-of-band
 * run dropped. Throws when the scan has no more RSTn marker.
 */
function restart(r: BitReader): void {
  if (r.state === Source.More) {
    // The interval's data runs on past what was read: skip to its marker without unstuffing it.
    const at = nextMarker(r.src, r.sp, true);
    r.sp = at.resume;
    r.state = at.restart ? Source.AtRestart : Source.Ended;
    r.next = at.next;
  }
  if (r.state !== Source.AtRestart) throw new Error("restart marker missing");
  r.state = Source.More;
  r.length = 0;
  r.p = 0;
  r.buf = 0;
  r.cnt = 0;
  r.eobrun = 0;
  refill(r);
}

/**
 * The next marker at or after `p` that is not stuffing (0xFF00), nor, unless `stopAtRestart`, RSTn: whether it
 * is RSTn, where the data after it resumes, and the position of the marker that ends the scan (the end of
 * the file when there is none).
 */
function nextMarker(b: Uint8Array, p: number, stopAtRestart: boolean): { restart: boolean; resume: number; next: number } {
  for (;;) {
    const ff = b.indexOf(0xff, p);
    if (ff < 0) return { restart: false, resume: b.length, next: b.length };
    const q = pastFill(b, ff);
    if (q >= b.length) return { restart: false, resume: q, next: q };
    const m = b[q]!;
    if (m === 0x00) {
      p = q + 1;
      continue;
    }
    if (m >= 0xd0 && m <= 0xd7) {
      if (stopAtRestart) return { restart: true, resume: q + 1, next: b.length };
      p = q + 1;
      continue;
    }
    return { restart: false, resume: q + 1, next: q - 1 };
  }
}

/** The position of the marker code after the 0xFF at `ff` and any 0xFF fill bytes after it (b.length if none). */
function pastFill(b: Uint8Array, ff: number): number {
  let q = ff + 1;
  while (q < b.length && b[q] === 0xff) q++;
  return q;
}

/** The position of the marker that ends the reader's scan, past whatever of it was not read. */
function scanEnd(r: BitReader): number {
  return r.state === Source.Ended ? r.next : nextMarker(r.src, r.sp, false).next;
}

/** A code longer than LOOKUP_BITS, from the next 16 bits: (length << 8) | symbol. */
function slowHuffman(t: Huffman, peek16: number): number {
  let len = LOOKUP_BITS + 1;
  let code = peek16 >>> (16 - len);
  while (code > t.maxCode[len]!) {
    len++;
    code = peek16 >>> (16 - len);
  }
  if (len > 16) throw new Error("invalid Huffman code");
  return (len << 8) | t.values[code + t.valueOffset[len]!]!;
}

/** One scan's header: its components (with their tables set) and the spectral selection / approximation. */
interface ScanHeader {
  comps: Component[];
  ss: number;
  se: number;
  ah: number;
  al: number;
}

function readScanHeader(seg: Uint8Array, frame: Frame, dcTables: (Huffman | undefined)[], acTables: (Huffman | undefined)[]): ScanHeader {
  const ns = seg[0]!;
  if (ns < 1 || ns > 4 || seg.length < 1 + 2 * ns + 3) throw new Error("scan header too short");
  const comps: Component[] = [];
  for (let i = 0; i < ns; i++) {
    const id = seg[1 + 2 * i]!;
    const c = frame.components.find((x) => x.id === id);
    if (!c) throw new Error("scan names an unknown component");
    if (comps.includes(c)) throw new Error("scan names a component twice");
    // A sequential component is decoded whole by its one scan; another scan of it would overwrite rows a
    // reader of the planes may already have used (PlaneSink).
    if (!frame.progressive && c.scanned) throw new Error("component in two sequential scans");
    if (!frame.progressive) c.scanned = true;
    const t = seg[2 + 2 * i]!;
    c.dcTable = dcTables[t >> 4] ?? null;
    c.acTable = acTables[t & 15] ?? null;
    comps.push(c);
  }
  const a = seg[3 + 2 * ns]!;
  return { comps, ss: seg[1 + 2 * ns]!, se: seg[2 + 2 * ns]!, ah: a >> 4, al: a & 15 };
}

/**
 * Decodes one scan (SOS segment `seg`, entropy data from `dataStart`) into the frame: a sequential scan straight
 * into the scaled planes, a progressive one into the coefficients. Returns the position of the next marker.
 * `window` is the decode's one window for every scan (a progressive file has ten or more).
 */
function decodeScan(
  b: Uint8Array,
  dataStart: number,
  seg: Uint8Array,
  frame: Frame,
  quant: (Int32Array | undefined)[],
  dcTables: (Huffman | undefined)[],
  acTables: (Huffman | undefined)[],
  restartInterval: number,
  window: Uint8Array,
  sink?: PlaneSink,
  offer = false,
): number {
  const header = readScanHeader(seg, frame, dcTables, acTables);
  // Rows are final as each MCU row ends only when this one scan holds every component.
  const whole = !frame.progressive && header.comps.length === frame.components.length && frame.components.length > 1;
  let split: ReturnType<typeof planSplit> = null;
  if (offer && sink) {
    split = sink.splits && whole && restartInterval === 0 ? planSplit(b, dataStart, header, frame) : null;
    if (!offerPlanes(frame, sink, split?.plan ?? null)) split = null;
  }
  let head: SplitHead | null = null;
  try {
    // A progressive scan of components not kept (a luma-only decode's chroma) changes nothing kept.
    if (frame.progressive && header.comps.every((c) => c.skip)) return nextMarker(b, dataStart, false).next;
    const reader = scanReader(b, dataStart, window, split?.plan.from);
    if (frame.progressive) {
      forEachBlock(header.comps, frame, restartInterval, reader, new ProgressiveBlocks(reader, header, frame.size));
    } else {
      const blocks = new BaselineBlocks(reader, header.comps, frame, quant);
      head = split && new SplitHead(split.memory, reader, split.plan, blocks.parts, frame);
      forEachBlock(header.comps, frame, restartInterval, reader, blocks, whole ? sink : undefined, head ?? undefined);
    }
    for (const c of frame.components) c.pred = 0;
    return scanEnd(reader);
  } finally {
    // However the scan ended (a table missing, corrupt data): a tail whose blocks were not taken stops.
    if (head) head.close();
    else split?.memory.cancel();
  }
}

/**
 * The block step of a scan: decodes the block at (`row`, `col`) of component `c` (the scan's `ci`th). A class
 * per kind of scan rather than a closure per scan, so the optimised block loop keeps its inlined call from
 * one image to the next.
 */
interface BlockStep {
  block(c: Component, ci: number, row: number, col: number): void;
}

/**
 * Calls `step.block` for each block of the scan in its order (MCU by MCU for an interleaved scan, the component's
 * used blocks row by row for a single one), realigning the reader and resetting the predictions at each
 * restart interval.
 */
function forEachBlock(
  comps: Component[],
  frame: Frame,
  restartInterval: number,
  reader: BitReader,
  step: BlockStep,
  sink?: PlaneSink,
  split?: SplitHead,
): void {
  const single = comps.length === 1;
  const first = comps[0]!;
  const perLine = single ? first.usedBlocksPerLine : frame.mcusPerLine;
  const total = single ? first.usedBlocksPerLine * first.usedBlocksPerColumn : frame.mcusPerLine * frame.mcusPerColumn;
  for (let m = 0; m < total; m++) {
    if (restartInterval > 0 && m > 0 && m % restartInterval === 0) {
      restart(reader);
      for (const c of comps) c.pred = 0;
    } else if (reader.state === Source.More && reader.length - reader.p < MARGIN) {
      refill(reader);
    }
    const mr = (m / perLine) | 0;
    const mc = m - mr * perLine;
    if (single) {
      step.block(first, 0, mr, mc);
      continue;
    }
    if (split) {
      // Each block through the split, which reads it or takes the tail's (numbered in scan order).
      let place = 0;
      for (let ci = 0; ci < comps.length; ci++) {
        const c = comps[ci]!;
        for (let v = 0; v < c.v; v++) {
          for (let h = 0; h < c.h; h++, place++) split.block(step, c, ci, mr * c.v + v, mc * c.h + h, m * split.perMcu + place, place);
        }
      }
      if (sink && mc === perLine - 1) sink.rows(mr + 1);
      continue;
    }
    for (let ci = 0; ci < comps.length; ci++) {
      const c = comps[ci]!;
      for (let v = 0; v < c.v; v++) {
        for (let h = 0; h < c.h; h++) step.block(c, ci, mr * c.v + v, mc * c.h + h);
      }
    }
    if (sink && mc === perLine - 1) sink.rows(mr + 1);
  }
}

/** What a sequential scan needs per component to decode a block and put its IDCT in the plane. */
interface BaselineComponent {
  dc: Huffman;
  ac: Huffman;
  /** Where each zigzag position goes in the block: its natural index inside the IDCT's window, else 64 (unused). */
  dst: Int32Array;
  /**
   * The natural indices inside the IDCT's window and their quantisers. The entropy decode stores each
   * coefficient as read, and only these are dequantised: at 3/8 scale 55 of a block's 64 positions are
   * dropped, and most of a photo's coefficients with them, so they cost no quantiser read or multiply.
   */
  kept: Int32Array;
  keptQ: Int32Array;
  stride: number;
}

/**
 * The block step of a sequential scan: entropy-decode one block (decodeBaselineBlock) and run its scaled IDCT
 * into the component's plane.
 */
class BaselineBlocks implements BlockStep {
  private readonly size: number;
  /** 64 coefficients and the slot the ones outside the IDCT's window are dropped into. */
  private readonly blk = new Int32Array(65);
  readonly parts: BaselineComponent[];

  constructor(
    private readonly reader: BitReader,
    comps: Component[],
    frame: Frame,
    quant: (Int32Array | undefined)[],
  ) {
    const size = (this.size = frame.size);
    this.parts = comps.map((c) => baselineComponent(c, quant[c.tq], c.skip ? 0 : size));
  }

  block(c: Component, ci: number, row: number, col: number): void {
    const part = this.parts[ci]!;
    const size = this.size;
    const blk = this.blk;
    c.pred = decodeBaselineBlock(this.reader, part, c.pred, blk);
    // A component not kept has every AC coefficient dropped into the spare slot; only its DC needs clearing.
    if (c.skip) {
      blk[0] = 0;
      return;
    }
    const { kept, keptQ } = part;
    for (let i = 0; i < kept.length; i++) {
      const z = kept[i]!;
      blk[z] = blk[z]! * keptQ[i]!;
    }
    idct(blk, size, c.plane, row * size * part.stride + col * size, part.stride);
  }
}

/** A component's tables for a sequential scan at IDCT size `size` (0: nothing of the block is kept). */
function baselineComponent(c: Component, q: Int32Array | undefined, size: number): BaselineComponent {
  if (!c.dcTable || !c.acTable || !q) throw new Error("scan uses a table that was not defined");
  return windowTables(c.dcTable, c.acTable, q, size, c.blocksPerLine * size);
}

/** Huffman tables, quantisers (none: the split's tail, which dequantises nothing) and the IDCT's window. */
function windowTables(dc: Huffman, ac: Huffman, q: Int32Array | null, size: number, stride: number): BaselineComponent {
  const dst = new Int32Array(64);
  for (let k = 0; k < 64; k++) {
    const z = ZIGZAG[k]!;
    dst[k] = z >> 3 < size && (z & 7) < size ? z : 64;
  }
  const kept = Int32Array.from({ length: size * size }, (_, i) => Math.floor(i / size) * 8 + (i % size));
  const keptQ = q ? kept.map((z) => q[z]!) : new Int32Array(kept.length);
  return { dc, ac, dst, kept, keptQ, stride };
}

/**
 * Huffman-decodes one sequential block into `blk` (as read, not yet dequantised; natural order, only the
 * IDCT's window kept) and returns the new DC prediction. The bit reader is held in locals for the block: this
 * runs once per coefficient of a 12 MP photo (tens of millions of times).
 */
function decodeBaselineBlock(r: BitReader, t: BaselineComponent, pred: number, blk: Int32Array): number {
  const data = r.data;
  let p = r.p;
  let buf = r.buf;
  let cnt = r.cnt;
  const dst = t.dst;
  // DC difference.
  if (cnt < 16) {
    buf = (buf << 16) | (data[p]! << 8) | data[p + 1]!;
    p += 2;
    cnt += 16;
  }
  let e = t.dc.lookup[(buf >>> (cnt - LOOKUP_BITS)) & LOOKUP_MASK]!;
  if (e === 0) e = slowHuffman(t.dc, (buf >>> (cnt - 16)) & 0xffff);
  cnt -= e >> 8;
  let s = e & 15;
  if (s !== 0) {
    if (cnt < s) {
      buf = (buf << 16) | (data[p]! << 8) | data[p + 1]!;
      p += 2;
      cnt += 16;
    }
    cnt -= s;
    let d = (buf >>> cnt) & ((1 << s) - 1);
    if (d < 1 << (s - 1)) d -= (1 << s) - 1;
    pred += d;
  }
  blk[0] = pred;
  // AC coefficients: most cost one read of the fast table (code, run and value together).
  const acFast = t.ac.fast;
  const acLookup = t.ac.lookup;
  let k = 1;
  while (k < 64) {
    const more = ((cnt - 16) >> 31) & 16;
    buf = (buf << more) | (((data[p]! << 8) | data[p + 1]!) & -(more >> 4));
    p += more >> 3;
    cnt += more;
    const peek = (buf >>> (cnt - LOOKUP_BITS)) & LOOKUP_MASK;
    const f = acFast[peek]!;
    if (f !== 0) {
      cnt -= f & 15;
      k += (f >> 4) & 63;
      if (k > 63) {
        if (((f >> 4) & 63) === EOB_RUN) break;
        throw new Error("coefficient index past 63");
      }
      blk[dst[k]!] = f >> 10;
      k++;
      continue;
    }
    e = acLookup[peek]!;
    if (e === 0) e = slowHuffman(t.ac, (buf >>> (cnt - 16)) & 0xffff);
    cnt -= e >> 8;
    s = e & 15;
    if (s === 0) {
      if ((e & 0xf0) !== 0xf0) break; // end of block
      k += 16;
      continue;
    }
    k += (e >> 4) & 15;
    if (k > 63) throw new Error("coefficient index past 63");
    if (cnt < s) {
      buf = (buf << 16) | (data[p]! << 8) | data[p + 1]!;
      p += 2;
      cnt += 16;
    }
    cnt -= s;
    let a = (buf >>> cnt) & ((1 << s) - 1);
    if (a < 1 << (s - 1)) a -= (1 << s) - 1;
    blk[dst[k]!] = a;
    k++;
  }
  r.p = p;
  r.buf = buf;
  r.cnt = cnt;
  return pred;
}

// --- a sequential scan's entropy decoding on two threads (entropy-split.ts) ----------------------------------

/**
 * The second part of a scan's entropy decoding, for another thread: `decodeSplitTail(bytes, split)` there,
 * with the same file's bytes. Made by the head at the scan, offered with the planes (PlaneSink.splits).
 */
export interface EntropySplit {
  /** The byte of the file's entropy data where the tail starts reading (neither an 0xFF nor just after one). */
  from: number;
  /** The scan's components' tables, in scan order, and the component of each block of an MCU. */
  tables: { dc: Huffman; ac: Huffman }[];
  order: Uint8Array;
  /** The IDCT's side: the tail keeps the `size` x `size` window of each block. */
  size: number;
  /** Blocks the shared memory holds: the scan's, plus the tail's false starts. */
  capacity: number;
  memory: SharedArrayBuffer;
}

/** Entropy data below which a split does not pay for its start (the tail's copy, false starts, handshake). */
const SPLIT_MIN_BYTES = 256 * 1024;
/**
 * The head's share of the entropy data: the tail still resizes and encodes every row after its share, the
 * head only runs the IDCT over the blocks it takes.
 */
const HEAD_SHARE = 0.6;
/** The most shared memory a split may take for its coefficients (a 50 MP photo at 1/2 scale is 27 MB). */
const SPLIT_MAX_BYTES = 32 * 1024 * 1024;
/** The least the head waits for a tail that has started (a thread's wake-up takes about a millisecond). */
const MIN_PATIENCE_MS = 10;

/**
 * A split of this scan (which holds every component, with no restart interval) at about HEAD_SHARE of its
 * data, with its shared memory; null when the image is too small or is decoded at more than half size (the
 * tail's copy of every coefficient would pass SPLIT_MAX_BYTES sooner). Where the tail's start is in the
 * unstuffed data, the head's reader notes as it passes (a marker before it ends the split there).
 */
function planSplit(b: Uint8Array, dataStart: number, header: ScanHeader, frame: Frame): { plan: EntropySplit; memory: SplitMemory } | null {
  const size = frame.size;
  if (size > 4) return null;
  const order: number[] = [];
  header.comps.forEach((c, ci) => {
    for (let i = 0; i < c.h * c.v; i++) order.push(ci);
  });
  const capacity = frame.mcusPerLine * frame.mcusPerColumn * order.length + MARKS;
  if (SplitMemory.bytes(capacity, size * size) > SPLIT_MAX_BYTES) return null;
  // The scan's data ends before the file's last EOI (a motion photo's video, or padding, may follow it).
  let end = b.length;
  for (let i = b.lastIndexOf(0xd9); i > dataStart; i = b.lastIndexOf(0xd9, i - 1)) {
    if (b[i - 1] === 0xff) {
      end = i - 1;
      break;
    }
  }
  if (end - dataStart < SPLIT_MIN_BYTES) return null;
  let from = dataStart + Math.floor((end - dataStart) * HEAD_SHARE);
  while (from < end && (b[from] === 0xff || b[from - 1] === 0xff)) from++;
  if (from >= end) return null;
  const memory = SplitMemory.create(capacity, size * size);
  const tables = header.comps.map((c) => ({ dc: c.dcTable!, ac: c.acTable! }));
  const plan = { from, tables, order: Uint8Array.from(order), size, capacity, memory: memory.memory };
  return { plan, memory };
}

/**
 * The head's side of a split scan: reads each block itself (through the scan's block step) until one of
 * its block boundaries matches one of the tail's, then takes the tail's blocks from there: their DC
 * differences added up from its own prediction, dequantised, through the same IDCT.
 */
class SplitHead {
  readonly perMcu: number;
  private readonly blocks: number;
  private readonly size: number;
  private readonly blk = new Int32Array(64);
  private watching = true;
  private taking = false;
  /** The tail's index of a block minus the head's, once taking. */
  private shift = 0;
  private readonly started = performance.now();
  /** Whether the head has reached the tail's start (and set its patience). */
  private reached = false;

  constructor(
    private readonly memory: SplitMemory,
    private readonly reader: BitReader,
    plan: EntropySplit,
    private readonly parts: BaselineComponent[],
    frame: Frame,
  ) {
    this.perMcu = plan.order.length;
    this.blocks = frame.mcusPerLine * frame.mcusPerColumn * this.perMcu;
    this.size = frame.size;
  }

  /** Block `g` of the scan (at `place` in its MCU): read by `step`, or taken from the tail. */
  block(step: BlockStep, c: Component, ci: number, row: number, col: number, g: number, place: number): void {
    if (this.watching) this.watch(g, place);
    if (this.taking) this.take(c, ci, row, col, g + this.shift);
    else step.block(c, ci, row, col);
  }

  /** The scan ended (or failed): a tail whose blocks were not taken stops. */
  close(): void {
    if (!this.taking) this.memory.cancel();
  }

  private watch(g: number, place: number): void {
    const r = this.reader;
    // Not yet where the tail started (its place is known once the refill has passed it).
    if (r.marked < 0) return;
    const bit = (r.base + r.p - r.marked) * 8 - r.cnt;
    if (bit < 0) return;
    if (!this.reached) {
      // Waiting for the tail longer than reading its part alone would take cannot pay.
      this.reached = true;
      this.memory.patience(Math.max(MIN_PATIENCE_MS, ((performance.now() - this.started) * (1 - HEAD_SHARE)) / HEAD_SHARE));
    }
    const j = this.memory.match(bit, place);
    if (j === NOT_YET) return;
    this.watching = false;
    if (j !== GIVE_UP && this.memory.confirm(j, this.blocks - g, g)) {
      this.taking = true;
      this.shift = j - g;
    } else {
      this.memory.cancel();
    }
  }

  private take(c: Component, ci: number, row: number, col: number, j: number): void {
    const { kept, keptQ, stride } = this.parts[ci]!;
    const coefficients = this.memory.coefficients;
    const o = j * this.memory.window;
    const blk = this.blk;
    c.pred += coefficients[o]!;
    blk[0] = c.pred * keptQ[0]!;
    for (let i = 1; i < kept.length; i++) blk[kept[i]!] = coefficients[o + i]! * keptQ[i]!;
    const size = this.size;
    idct(blk, size, c.plane, row * size * stride + col * size, stride);
  }
}

/**
 * The tail's half of a split scan: reads `bytes` (the file the head decodes, shared or not) from
 * `split.from` to the end of the scan's data, block after block in the MCU's order as if the first began
 * there, recording where its first blocks began and every block's window of coefficients for the head. A
 * code that does not read (a false start, or corrupt data) is recorded, and reading goes on from the next
 * bit. Returns at once when the head has already read on alone; stops when the head cancels.
 */
export function decodeSplitTail(bytes: Uint8Array, split: EntropySplit): void {
  const memory = new SplitMemory(split.memory, split.capacity, split.size * split.size);
  if (!memory.start()) return;
  let blocks = 0;
  try {
    blocks = readSplitTail(bytes.slice(split.from), split, memory);
  } finally {
    memory.finish(blocks);
  }
}

function readSplitTail(src: Uint8Array, split: EntropySplit, memory: SplitMemory): number {
  const r = scanReader(src, 0, new Uint8Array(WINDOW + MARGIN));
  const { size, order } = split;
  const window = size * size;
  const parts = split.tables.map((t) => windowTables(t.dc, t.ac, null, size, 0));
  const kept = parts[0]!.kept;
  const out = memory.coefficients;
  const blk = new Int32Array(65);
  let place = 0;
  let n = 0;
  for (; n < split.capacity; n++) {
    if (r.state === Source.More) {
      if (r.length - r.p < MARGIN) refill(r);
    } else if (r.p * 8 - r.cnt >= r.length * 8) {
      break; // every bit of the scan's data read
    }
    if (n < MARKS) memory.mark(n, (r.base + r.p) * 8 - r.cnt, place);
    try {
      const o = n * window;
      out[o] = decodeBaselineBlock(r, parts[order[place]!]!, 0, blk);
      blk[0] = 0;
      for (let i = 1; i < window; i++) {
        const z = kept[i]!;
        out[o + i] = blk[z]!;
        blk[z] = 0;
      }
      place = place + 1 === order.length ? 0 : place + 1;
    } catch {
      if (!memory.error(n)) return n;
      // On from the bit after the block's start (a failed block leaves the reader there), as the MCU's first.
      blk.fill(0);
      bits(r, 1);
      place = 0;
    }
    if ((n & 1023) === 1023 && !memory.progress(n + 1)) return n + 1;
  }
  return n;
}

// --- progressive scans (T.81 G.1.2) -------------------------------------------------------------------------

/** Tops the reader up to more than 24 bits, a byte at a time; past the end it reads zeros, as libjpeg does. */
function fill(r: BitReader): void {
  while (r.cnt <= 24) {
    r.buf = (r.buf << 8) | (r.p < r.length ? r.data[r.p]! : 0);
    r.p++;
    r.cnt += 8;
  }
}

/** The next Huffman symbol. */
function huff(r: BitReader, t: Huffman): number {
  if (r.cnt < 16) fill(r);
  const e = t.lookup[(r.buf >>> (r.cnt - LOOKUP_BITS)) & LOOKUP_MASK]!;
  const code = e !== 0 ? e : slowHuffman(t, (r.buf >>> (r.cnt - 16)) & 0xffff);
  r.cnt -= code >> 8;
  return code & 255;
}

/** The next `s` bits (s <= 16) as an unsigned number. */
function bits(r: BitReader, s: number): number {
  if (r.cnt < s) fill(r);
  r.cnt -= s;
  return (r.buf >>> r.cnt) & ((1 << s) - 1);
}

/** The next `s` bits as the signed value they code (T.81 F.2.2.1 EXTEND). */
function extend(r: BitReader, s: number): number {
  if (s === 0) return 0;
  const v = bits(r, s);
  return v < 1 << (s - 1) ? v - (1 << s) + 1 : v;
}

/**
 * The block a progressive scan is working on: its quantised coefficients at `o` in `coef` (the IDCT's window
 * only) and the nonzero bits of the rest at `m` in `nz`; `slot` maps a zigzag position to its index in the
 * window, or -1.
 */
interface CoefficientBlock {
  coef: Int16Array;
  nz: Uint8Array | null;
  o: number;
  m: number;
  slot: Int32Array;
}

/** Whether the coefficient at zigzag position k is nonzero so far. */
function isSet(b: CoefficientBlock, k: number): boolean {
  const i = b.slot[k]!;
  return i >= 0 ? b.coef[b.o + i] !== 0 : ((b.nz![b.m + (k >> 3)]! >> (k & 7)) & 1) === 1;
}

/** Stores a new nonzero value at zigzag position k (outside the window: only that it is nonzero). */
function put(b: CoefficientBlock, k: number, v: number): void {
  const i = b.slot[k]!;
  if (i >= 0) b.coef[b.o + i] = v;
  else b.nz![b.m + (k >> 3)] = b.nz![b.m + (k >> 3)]! | (1 << (k & 7));
}

/** Refines a nonzero coefficient by one bit (nothing to keep outside the window). */
function refine(b: CoefficientBlock, k: number, p1: number, m1: number): void {
  const i = b.slot[k]!;
  if (i >= 0 && (b.coef[b.o + i]! & p1) === 0) b.coef[b.o + i] = b.coef[b.o + i]! + (b.coef[b.o + i]! >= 0 ? p1 : m1);
}

/**
 * The block step of a progressive scan: points the block cursor at the block, then decodes the scan's band
 * of it (DC first or refining, AC first or refining) into the component's coefficients.
 */
class ProgressiveBlocks implements BlockStep {
  private readonly window: number;
  private readonly b: CoefficientBlock;

  constructor(
    private readonly r: BitReader,
    private readonly scan: ScanHeader,
    size: number,
  ) {
    const slot = new Int32Array(64);
    for (let k = 0; k < 64; k++) {
      const z = ZIGZAG[k]!;
      slot[k] = z >> 3 < size && (z & 7) < size ? (z >> 3) * size + (z & 7) : -1;
    }
    this.window = size * size;
    this.b = { coef: new Int16Array(0), nz: null, o: 0, m: 0, slot };
  }

  block(c: Component, _ci: number, row: number, col: number): void {
    const { r, b } = this;
    const { ss, se, ah, al } = this.scan;
    if (c.skip) {
      // Only an interleaved DC scan gets here with a component not kept (AC scans hold one component, and a
      // scan of only such components is passed over whole): read its bits, keep nothing.
      if (ss !== 0) throw new Error("an AC scan holds more than one component");
      if (ah !== 0) bits(r, 1);
      else if (!c.dcTable) throw new Error("scan uses a table that was not defined");
      else c.pred += extend(r, huff(r, c.dcTable));
      return;
    }
    b.coef = c.coefficients!;
    b.nz = c.nonzero;
    const block = row * c.blocksPerLine + col;
    b.o = block * this.window;
    b.m = block * 8;
    if (ss === 0) {
      if (ah === 0) {
        if (!c.dcTable) throw new Error("scan uses a table that was not defined");
        c.pred += extend(r, huff(r, c.dcTable));
        b.coef[b.o] = c.pred * (1 << al);
      } else if (bits(r, 1)) {
        b.coef[b.o] = b.coef[b.o]! | (1 << al);
      }
      return;
    }
    if (!c.acTable) throw new Error("scan uses a table that was not defined");
    if (ah === 0) decodeAcFirst(r, b, c.acTable, ss, se, al);
    else decodeAcRefine(r, b, c.acTable, ss, se, al);
  }
}

/** The first pass over an AC band (T.81 G.1.2.2), with end-of-band runs. */
function decodeAcFirst(r: BitReader, b: CoefficientBlock, ac: Huffman, ss: number, se: number, al: number): void {
  if (r.eobrun > 0) {
    r.eobrun--;
    return;
  }
  for (let k = ss; k <= se; ) {
    const rs = huff(r, ac);
    const s = rs & 15;
    const run = rs >> 4;
    if (s === 0) {
      if (run < 15) {
        r.eobrun = (1 << run) - 1 + (run ? bits(r, run) : 0);
        break;
      }
      k += 16;
      continue;
    }
    k += run;
    if (k > 63) throw new Error("coefficient index past 63");
    put(b, k, extend(r, s) * (1 << al));
    k++;
  }
}

/** Successive approximation refinement of an AC band (T.81 G.1.2.3). */
function decodeAcRefine(r: BitReader, b: CoefficientBlock, ac: Huffman, ss: number, se: number, al: number): void {
  const p1 = 1 << al;
  const m1 = -1 << al;
  let k = ss;
  if (r.eobrun === 0) {
    for (; k <= se; k++) {
      const rs = huff(r, ac);
      let s = rs & 15;
      let run = rs >> 4;
      if (s !== 0) {
        s = bits(r, 1) ? p1 : m1;
      } else if (run !== 15) {
        r.eobrun = (1 << run) + (run ? bits(r, run) : 0);
        break;
      }
      while (k <= se) {
        if (isSet(b, k)) {
          if (bits(r, 1)) refine(b, k, p1, m1);
        } else {
          if (run === 0) break;
          run--;
        }
        k++;
      }
      if (s !== 0 && k <= se) put(b, k, s);
    }
  }
  if (r.eobrun > 0) {
    for (; k <= se; k++) {
      if (isSet(b, k) && bits(r, 1)) refine(b, k, p1, m1);
    }
    r.eobrun--;
  }
}

function idctAll(c: Component, q: Int32Array, size: number): void {
  const coef = c.coefficients!;
  const block = new Int32Array(64);
  const stride = c.blocksPerLine * size;
  for (let row = 0; row < c.blocksPerColumn; row++) {
    for (let col = 0; col < c.blocksPerLine; col++) {
      const o = (row * c.blocksPerLine + col) * size * size;
      for (let y = 0; y < size; y++) {
        for (let x = 0; x < size; x++) {
          const z = y * 8 + x;
          block[z] = coef[o + y * size + x]! * q[z]!;
        }
      }
      idct(block, size, c.plane, (row * size * c.blocksPerLine + col) * size, stride);
    }
  }
  c.coefficients = null;
  c.nonzero = null;
}

// --- inverse DCT --------------------------------------------------------------------------------------------
//
// f(n) = 1/2 * sum_u C(u) F(u) cos((2n + 1) u pi / 2N) per axis, C(0) = 1/sqrt(2), evaluated on an N-point
// grid (N = 1..8) from the top-left N x N coefficients: the N-point grid samples the 8-point basis at the
// centres of N equal sub-blocks, which is what DCT-domain downscaling is. Points n and N-1-n share the even
// terms and negate the odd ones, so each half is computed once.

const C = (k: number, n: number) => Math.cos((k * Math.PI) / (2 * n));
const R2 = Math.SQRT1_2;
// 8-point constants.
const C1 = C(1, 8),
  C2 = C(2, 8),
  C3 = C(3, 8),
  C5 = C(5, 8),
  C6 = C(6, 8),
  C7 = C(7, 8);
// 4-point constants.
const D1 = C(1, 4),
  D3 = C(3, 4);

const work = new Float64Array(64);

/** In-place 1-D IDCT of 8 values at `o`, step `s` (no 1/2 factor: applied once at the end). */
function idct8(a: Float64Array, o: number, s: number): void {
  const f0 = a[o]!,
    f1 = a[o + s]!,
    f2 = a[o + 2 * s]!,
    f3 = a[o + 3 * s]!;
  const f4 = a[o + 4 * s]!,
    f5 = a[o + 5 * s]!,
    f6 = a[o + 6 * s]!,
    f7 = a[o + 7 * s]!;
  if (f1 === 0 && f2 === 0 && f3 === 0 && f4 === 0 && f5 === 0 && f6 === 0 && f7 === 0) {
    const dc = f0 * R2;
    for (let i = 0; i < 8; i++) a[o + i * s] = dc;
    return;
  }
  const ee0 = (f0 + f4) * R2;
  const ee1 = (f0 - f4) * R2;
  const eo0 = f2 * C2 + f6 * C6;
  const eo1 = f2 * C6 - f6 * C2;
  const e0 = ee0 + eo0,
    e3 = ee0 - eo0,
    e1 = ee1 + eo1,
    e2 = ee1 - eo1;
  // cos((2n+1) u pi / 16) for odd u at n = 0..3.
  const o0 = f1 * C1 + f3 * C3 + f5 * C5 + f7 * C7;
  const o1 = f1 * C3 - f3 * C7 - f5 * C1 - f7 * C5;
  const o2 = f1 * C5 - f3 * C1 + f5 * C7 + f7 * C3;
  const o3 = f1 * C7 - f3 * C5 + f5 * C3 - f7 * C1;
  a[o] = e0 + o0;
  a[o + 7 * s] = e0 - o0;
  a[o + s] = e1 + o1;
  a[o + 6 * s] = e1 - o1;
  a[o + 2 * s] = e2 + o2;
  a[o + 5 * s] = e2 - o2;
  a[o + 3 * s] = e3 + o3;
  a[o + 4 * s] = e3 - o3;
}

/**
 * IDCT of the top-left size x size of `block` (dequantised, natural order) into `out` at `o`, row stride;
 * clears those coefficients afterwards so the block is ready for the next one.
 */
function idct(block: Int32Array, size: number, out: Uint8ClampedArray, o: number, stride: number): void {
  if (size === 4) {
    idct4x4(block, out, o, stride);
    return;
  }
  if (size === 3) {
    idct3x3(block, out, o, stride);
    return;
  }
  if (size !== 1 && size !== 2 && size !== 8) {
    idctN(block, size, out, o, stride);
    return;
  }
  if (size === 1) {
    out[o] = block[0]! / 8 + 128;
    block[0] = 0;
    return;
  }
  if (size === 2) {
    // 2x2: each term is F * (1/4) * (C(u) cos)(C(v) cos) = F / 8, with signs by position.
    const a = block[0]!,
      b = block[1]!,
      c = block[8]!,
      d = block[9]!;
    out[o] = (a + b + c + d) / 8 + 128;
    out[o + 1] = (a - b + c - d) / 8 + 128;
    out[o + stride] = (a + b - c - d) / 8 + 128;
    out[o + stride + 1] = (a - b - c + d) / 8 + 128;
    block[0] = block[1] = block[8] = block[9] = 0;
    return;
  }
  const w = work;
  for (let i = 0; i < 64; i++) w[i] = block[i]!;
  block.fill(0);
  for (let x = 0; x < 8; x++) idct8(w, x, 8); // columns
  for (let y = 0; y < 8; y++) idct8(w, y * 8, 1); // rows
  for (let y = 0; y < 8; y++) {
    const r = o + y * stride;
    const i = y * 8;
    for (let x = 0; x < 8; x++) out[r + x] = w[i + x]! * 0.25 + 128;
  }
}

/** cos tables per N: BASIS[N][n * N + u] = C(u) cos((2n + 1) u pi / 2N). */
const BASIS: Float64Array[] = [];
for (let n = 1; n <= 8; n++) {
  const t = new Float64Array(n * n);
  for (let x = 0; x < n; x++) {
    for (let u = 0; u < n; u++) t[x * n + u] = (u === 0 ? R2 : 1) * Math.cos(((2 * x + 1) * u * Math.PI) / (2 * n));
  }
  BASIS[n] = t;
}

/** Any N x N grid (3, 5, 6, 7) as two small matrix products; N^3 multiplies per pass is cheap for N <= 7. */
function idctN(b: Int32Array, size: number, out: Uint8ClampedArray, o: number, stride: number): void {
  const m = BASIS[size]!;
  const w = work;
  let ac = 0;
  for (let v = 0; v < size; v++) for (let u = 0; u < size; u++) ac |= v + u === 0 ? 0 : b[v * 8 + u]!;
  if (ac === 0) {
    const dc = b[0]! / 8 + 128;
    b[0] = 0;
    for (let y = 0; y < size; y++) for (let x = 0; x < size; x++) out[o + y * stride + x] = dc;
    return;
  }
  // Columns: w[y * 8 + u] = sum_v basis(y, v) F(v, u).
  for (let u = 0; u < size; u++) {
    for (let y = 0; y < size; y++) {
      let acc = 0;
      for (let v = 0; v < size; v++) acc += m[y * size + v]! * b[v * 8 + u]!;
      w[y * 8 + u] = acc;
    }
  }
  for (let v = 0; v < size; v++) for (let u = 0; u < size; u++) b[v * 8 + u] = 0;
  for (let y = 0; y < size; y++) {
    const r = o + y * stride;
    for (let x = 0; x < size; x++) {
      let acc = 0;
      for (let u = 0; u < size; u++) acc += m[x * size + u]! * w[y * 8 + u]!;
      out[r + x] = acc * 0.25 + 128;
    }
  }
}

const E1 = C(1, 3); // cos(pi / 6)

/**
 * The 3x3 case (3/8 scale: a 12 MP 4:3 photo bound for 1440 wide), unrolled with the block in locals. Per
 * axis: f0 = F0/sqrt2 + F1 cos(pi/6) + F2/2, f1 = F0/sqrt2 - F2, f2 = F0/sqrt2 - F1 cos(pi/6) + F2/2.
 */
function idct3x3(b: Int32Array, out: Uint8ClampedArray, o: number, stride: number): void {
  const a00 = b[0]!,
    a01 = b[1]!,
    a02 = b[2]!;
  const a10 = b[8]!,
    a11 = b[9]!,
    a12 = b[10]!;
  const a20 = b[16]!,
    a21 = b[17]!,
    a22 = b[18]!;
  b[0] = b[1] = b[2] = b[8] = b[9] = b[10] = b[16] = b[17] = b[18] = 0;
  const r1 = o + stride;
  const r2 = r1 + stride;
  if ((a01 | a02 | a10 | a11 | a12 | a20 | a21 | a22) === 0) {
    const v = a00 / 8 + 128;
    out[o] = out[o + 1] = out[o + 2] = v;
    out[r1] = out[r1 + 1] = out[r1 + 2] = v;
    out[r2] = out[r2 + 1] = out[r2 + 2] = v;
    return;
  }
  // Columns (u = 0, 1, 2): rows y = 0..2 of each.
  let e = a00 * R2 + a20 * 0.5,
    d = a10 * E1;
  const w00 = e + d,
    w20 = e - d,
    w10 = a00 * R2 - a20;
  e = a01 * R2 + a21 * 0.5;
  d = a11 * E1;
  const w01 = e + d,
    w21 = e - d,
    w11 = a01 * R2 - a21;
  e = a02 * R2 + a22 * 0.5;
  d = a12 * E1;
  const w02 = e + d,
    w22 = e - d,
    w12 = a02 * R2 - a22;
  // Rows, with the 1/4 of both passes and the level shift.
  e = (w00 * R2 + w02 * 0.5) * 0.25 + 128;
  d = w01 * E1 * 0.25;
  out[o] = e + d;
  out[o + 2] = e - d;
  out[o + 1] = (w00 * R2 - w02) * 0.25 + 128;
  e = (w10 * R2 + w12 * 0.5) * 0.25 + 128;
  d = w11 * E1 * 0.25;
  out[r1] = e + d;
  out[r1 + 2] = e - d;
  out[r1 + 1] = (w10 * R2 - w12) * 0.25 + 128;
  e = (w20 * R2 + w22 * 0.5) * 0.25 + 128;
  d = w21 * E1 * 0.25;
  out[r2] = e + d;
  out[r2 + 2] = e - d;
  out[r2 + 1] = (w20 * R2 - w22) * 0.25 + 128;
}

/** The 4x4 case (1/2 scale, the common one for phone photos), unrolled with the block in locals. */
function idct4x4(b: Int32Array, out: Uint8ClampedArray, o: number, stride: number): void {
  const a00 = b[0]!,
    a01 = b[1]!,
    a02 = b[2]!,
    a03 = b[3]!;
  const a10 = b[8]!,
    a11 = b[9]!,
    a12 = b[10]!,
    a13 = b[11]!;
  const a20 = b[16]!,
    a21 = b[17]!,
    a22 = b[18]!,
    a23 = b[19]!;
  const a30 = b[24]!,
    a31 = b[25]!,
    a32 = b[26]!,
    a33 = b[27]!;
  b[0] = b[1] = b[2] = b[3] = b[8] = b[9] = b[10] = b[11] = 0;
  b[16] = b[17] = b[18] = b[19] = b[24] = b[25] = b[26] = b[27] = 0;
  if ((a01 | a02 | a03 | a10 | a11 | a12 | a13 | a20 | a21 | a22 | a23 | a30 | a31 | a32 | a33) === 0) {
    const v = a00 / 8 + 128;
    for (let y = 0; y < 4; y++) {
      const r = o + y * stride;
      out[r] = out[r + 1] = out[r + 2] = out[r + 3] = v;
    }
    return;
  }
  const w = work;
  // Columns: row n of column x from coefficients a0x..a3x (the 1/4 for both passes is applied on output).
  col4(w, 0, a00, a10, a20, a30);
  col4(w, 1, a01, a11, a21, a31);
  col4(w, 2, a02, a12, a22, a32);
  col4(w, 3, a03, a13, a23, a33);
  for (let y = 0; y < 4; y++) {
    const i = y * 4;
    const f0 = w[i]!,
      f1 = w[i + 1]!,
      f2 = w[i + 2]!,
      f3 = w[i + 3]!;
    const e0 = (f0 + f2) * R2,
      e1 = (f0 - f2) * R2;
    const o0 = f1 * D1 + f3 * D3,
      o1 = f1 * D3 - f3 * D1;
    const r = o + y * stride;
    out[r] = (e0 + o0) * 0.25 + 128;
    out[r + 3] = (e0 - o0) * 0.25 + 128;
    out[r + 1] = (e1 + o1) * 0.25 + 128;
    out[r + 2] = (e1 - o1) * 0.25 + 128;
  }
}

function col4(w: Float64Array, x: number, f0: number, f1: number, f2: number, f3: number): void {
  const e0 = (f0 + f2) * R2,
    e1 = (f0 - f2) * R2;
  const o0 = f1 * D1 + f3 * D3,
    o1 = f1 * D3 - f3 * D1;
  w[x] = e0 + o0;
  w[12 + x] = e0 - o0;
  w[4 + x] = e1 + o1;
  w[8 + x] = e1 - o1;
}

// --- colour -------------------------------------------------------------------------------------------------

function toRgba(frame: Frame, adobeTransform: number): RgbaImage {
  const size = frame.size;
  const { width, height } = scaledSize(frame);
  const out = new Uint8Array(width * height * 4);
  const px = new Uint32Array(out.buffer);
  const [c0, c1, c2] = frame.components;
  if (!c1 || !c2) {
    const g = c0!;
    const stride = g.blocksPerLine * size;
    for (let y = 0; y < height; y++) {
      let i = y * width;
      const r = y * stride;
      for (let x = 0; x < width; x++) {
        const v = g.plane[r + x]!;
        px[i++] = (v | (v << 8) | (v << 16) | 0xff000000) >>> 0;
      }
    }
    return { width, height, data: out };
  }
  if (frame.components.length === 4) {
    cmykConvert(frame, adobeTransform === 2, width, height, out, false);
    return { width, height, data: out };
  }
  const rgb = rgbStored(frame, adobeTransform);
  const [l0, l1, l2] = planeLayout(frame) as [PlaneLayout, PlaneLayout, PlaneLayout];
  const { plane: p0, sx: sx0 } = l0,
    { plane: p1, sx: sx1 } = l1,
    { plane: p2, sx: sx2 } = l2;
  for (let y = 0; y < height; y++) {
    const r0 = (y >> l0.sy) * l0.stride;
    const r1 = (y >> l1.sy) * l1.stride;
    const r2 = (y >> l2.sy) * l2.stride;
    const i = y * width;
    if (rgb) {
      for (let x = 0; x < width; x++) px[i + x] = p0[r0 + (x >> sx0)]! | (p1[r1 + (x >> sx1)]! << 8) | (p2[r2 + (x >> sx2)]! << 16) | 0xff000000;
    } else {
      ycbcrRow(px, i, width, p0, r0, sx0, p1, r1, sx1, p2, r2, sx2);
    }
  }
  return { width, height, data: out };
}

/** The size of the decoded image at the frame's scale. */
function scaledSize(frame: Frame): { width: number; height: number } {
  return { width: Math.ceil((frame.width * frame.size) / 8), height: Math.ceil((frame.height * frame.size) / 8) };
}

/**
 * How one component's plane maps to output pixels: its samples, its row stride, and the shift of x and y
 * (1 for a plane at half the resolution of the largest, whose samples each cover two pixels; 2 for a
 * quarter).
 */
interface PlaneLayout {
  plane: Uint8ClampedArray;
  stride: number;
  sx: number;
  sy: number;
}

function planeLayout(frame: Frame): PlaneLayout[] {
  return frame.components.map((c) => ({
    plane: c.plane,
    stride: c.blocksPerLine * frame.size,
    sx: Math.log2(frame.hMax / c.h),
    sy: Math.log2(frame.vMax / c.v),
  }));
}

/**
 * A four-component frame's colours: CMYK as stored (inverted inks), or YCCK, whose first three planes are
 * YCbCr for the inverted C, M, Y (libjpeg's C = 255 - R of the YCbCr). Each colour is the stored C (M, Y)
 * times the stored K over 255, rounded: (255 - c)(255 - k) / 255 in inks, photon's and libjpeg's reading
 * without an ICC profile. Written into `out` (width x height) as RGBA, or with `gray` as their BT.601 luma
 * (the QR reader's weights), one byte per pixel; the luma may be written over the first plane (it must be
 * full size), since each pixel lands at or before where it was read.
 */
function cmykConvert(frame: Frame, ycck: boolean, width: number, height: number, out: Uint8Array | Uint8ClampedArray, gray: boolean): void {
  const [l0, l1, l2, l3] = planeLayout(frame) as [PlaneLayout, PlaneLayout, PlaneLayout, PlaneLayout];
  const { plane: p0, sx: sx0 } = l0,
    { plane: p1, sx: sx1 } = l1,
    { plane: p2, sx: sx2 } = l2,
    { plane: p3, sx: sx3 } = l3;
  const clamp = CLAMP;
  // x * k / 255 rounded, for x, k in 0..255: t = x * k + 128; (t + (t >> 8)) >> 8.
  const times = (x: number, k: number) => {
    const t = x * k + 128;
    return (t + (t >> 8)) >> 8;
  };
  for (let y = 0; y < height; y++) {
    const r0 = (y >> l0.sy) * l0.stride;
    const r1 = (y >> l1.sy) * l1.stride;
    const r2 = (y >> l2.sy) * l2.stride;
    const r3 = (y >> l3.sy) * l3.stride;
    let o = y * width * (gray ? 1 : 4);
    for (let x = 0; x < width; x++) {
      let c = p0[r0 + (x >> sx0)]!;
      let m = p1[r1 + (x >> sx1)]!;
      let ye = p2[r2 + (x >> sx2)]!;
      const k = p3[r3 + (x >> sx3)]!;
      if (ycck) {
        const a = c + 256;
        const cb = m;
        const cr = ye;
        c = 255 - clamp[a + R_CR[cr]!]!;
        m = 255 - clamp[a + G_CBCR[(cb << 8) | cr]!]!;
        ye = 255 - clamp[a + B_CB[cb]!]!;
      }
      const r = times(c, k);
      const g = times(m, k);
      const b = times(ye, k);
      if (gray) {
        out[o++] = (r * 77 + g * 150 + b * 29) >> 8;
        continue;
      }
      out[o] = r;
      out[o + 1] = g;
      out[o + 2] = b;
      out[o + 3] = 255;
      o += 4;
    }
  }
}

/**
 * One row of JFIF YCbCr -> RGB in 16-bit fixed point: the tables hold each Cb/Cr byte's offsets, already
 * rounded, so a pixel costs three lookups, three adds and three clamps. (Writing a negative int32 into
 * the Uint32Array stores its two's complement, the 0xff alpha byte on top.)
 */
function ycbcrRow(
  px: Uint32Array,
  i: number,
  width: number,
  p0: Uint8ClampedArray,
  r0: number,
  sx0: number,
  p1: Uint8ClampedArray,
  r1: number,
  sx1: number,
  p2: Uint8ClampedArray,
  r2: number,
  sx2: number,
): void {
  const clamp = CLAMP;
  for (let x = 0; x < width; x++) {
    const a = p0[r0 + (x >> sx0)]! + 256;
    const b = p1[r1 + (x >> sx1)]!;
    const c = p2[r2 + (x >> sx2)]!;
    px[i + x] = clamp[a + R_CR[c]!]! | (clamp[a + G_CBCR[(b << 8) | c]!]! << 8) | (clamp[a + B_CB[b]!]! << 16) | 0xff000000;
  }
}

/** Red's offset for each Cr, blue's for each Cb, green's for each (Cb << 8 | Cr): 16-bit fixed point, rounded. */
const R_CR = new Int16Array(256);
const B_CB = new Int16Array(256);
const G_CBCR = new Int16Array(65536);
for (let i = 0; i < 256; i++) {
  const d = i - 128;
  R_CR[i] = (Math.round(1.402 * 65536) * d + 32768) >> 16;
  B_CB[i] = (Math.round(1.772 * 65536) * d + 32768) >> 16;
  for (let j = 0; j < 256; j++) {
    G_CBCR[(i << 8) | j] = (-Math.round(0.344136 * 65536) * d - Math.round(0.714136 * 65536) * (j - 128) + 32768) >> 16;
  }
}
/** clamp[v + 256] = v limited to 0..255, for v in -256..511 (and a margin beyond). */
const CLAMP = new Uint8ClampedArray(1024);
for (let i = 0; i < 1024; i++) CLAMP[i] = i - 256;
