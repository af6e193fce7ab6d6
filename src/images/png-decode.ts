/**
 * A streaming PNG decoder that shrinks while it decodes, so a 6300 x 6300 PNG bound for a 3200 px reader never
 * exists at full size in memory.
 *
 * Why it exists: a 40 MP PNG of one colour is ~128 KB on the wire but 160 MB of RGBA once photon has decoded
 * it, and the QR reader only needs ~3200 px on the longer side. Here the IDAT data is inflated as it comes
 * (zlib's streaming interface, through pako), each scanline is unfiltered as soon as it is complete, converted
 * to 8-bit RGBA and added into an integer box filter (png-rows.ts). Held at any time: two scanlines, one RGBA
 * row, two rows of block sums, the output, the inflater's 32 KiB window and one output buffer of at most
 * 256 KiB that every inflate call writes into. Nothing is allocated per call: in a Worker, short-lived
 * buffers count against the isolate's 128 MB until V8 collects them, and an inflater that allocates per call
 * (fflate's streaming one copies each call's output) leaves garbage that grows with the image.
 *
 * The output buffer also bounds a zlib bomb: a call stops when the buffer is full, whatever the input holds.
 *
 * Handled: colour types 0, 2, 3, 4, 6 at every bit depth the PNG spec allows, PLTE, tRNS (all three
 * forms), all five filters. Samples are scaled to 8 bits with rounding (16-bit v -> round(v / 257), the spec's
 * recommendation; libpng's default keeps the high byte, which differs by at most 1). Gamma and colour chunks
 * (gAMA, iCCP, sRGB, ...) and all other ancillary chunks are ignored, as is a tRNS on an image with alpha.
 * CRCs and the zlib Adler-32 are not checked: a damaged byte breaks inflate or a filter (both throw) or
 * shows as wrong pixels, as in decoders that skip CRCs. The image ends when the header's size has been
 * inflated; IEND is not required, and compressed data past the zlib trailer is not read (libpng also
 * treats it as benign).
 *
 * Adam7-interlaced images are decoded too, at full size first (a pass's rows are not whole rows), then
 * shrunk: their memory is the whole image's (createInterlacedSink).
 *
 * Returns null for what it does not handle: rows wider than MAX_ROW_BYTES.
 * Throws an Error for corrupt data: bad signature, missing IHDR/IDAT/PLTE, truncated chunks or image data,
 * unknown critical chunks, chunks out of order, invalid header values, PLTE or tRNS lengths, filter types
 * or palette indices, inflate errors, and more image data than the header implies.
 */
import { ZStream, zlibInflate, zlibInflateInit2, Z_NO_FLUSH, Z_OK, Z_STREAM_END } from "pako";
import { blockStarts, corruptPng as corrupt, createBoxShrink, equalBytes, rowConverter, unfilter, type BoxShrink, type PngColour } from "./png-rows";
import { MAX_IMAGE_PIXELS } from "./sniff";
import type { RgbaImage } from "./types";

/** Bit depths the PNG spec allows per colour type (0 grey, 2 RGB, 3 palette, 4 grey + alpha, 6 RGBA). */
const DEPTHS: Record<number, readonly number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** The most bytes one inflate call writes (into one buffer, reused); see createInflater. */
const OUTPUT_PER_CALL = 256 * 1024;
/** Compressed bytes that may pass without producing a pixel (a stored block is at most 64 KiB). */
const STALL_BYTES = 128 * 1024;
/** After the last scanline only the zlib trailer (end of block, Adler-32) may follow; this much is read. */
const TRAILER_BYTES = 1024;
/** Scanlines wider than this (2 M pixels of 16-bit RGBA) are left to the whole-image decoder. */
export const MAX_ROW_BYTES = 16 * 1024 * 1024;

/**
 * Decodes a PNG to 8-bit RGBA (straight alpha), shrunk by the smallest integer factor that brings the
 * longer side to at most `maxSide`: each factor x factor block (smaller at the right and bottom edges)
 * becomes one pixel, its alpha the block's mean and its colour the alpha-weighted mean, so transparent
 * pixels do not darken the colour (a fully transparent block is 0,0,0,0). Factor 1 is a plain decode.
 * Returns null for rows wider than MAX_ROW_BYTES (decode those whole); throws an Error for corrupt data or more than
 * MAX_IMAGE_PIXELS pixels (checked from IHDR, before anything is allocated).
 *
 * @example
 * const img = decodePngAtMost(bytes, 3200) ?? decodeImage(bytes); // 6300x6300 -> 3150x3150
 */
export function decodePngAtMost(bytes: Uint8Array, maxSide: number): RgbaImage | null {
  if (!(maxSide >= 1)) throw new RangeError(`maxSide must be at least 1, got ${maxSide}`);
  return decodePng(bytes, { maxSide });
}

/**
 * Decodes a PNG to 8-bit RGBA (straight alpha) at least `width` x `height` (or whole, when it is not that
 * large), as small as whole pixels allow: when it is at least twice that on both sides, its sides are split
 * into as many blocks as the size asked for needs (blocks of floor and ceil of the ratio, two pixels or
 * more), each block becoming one pixel as in decodePngAtMost; otherwise it is decoded whole. So a 4082 px
 * PNG asked for 1400 px comes out at 1400, not at 2041 (a whole factor of 2). Null and throws as
 * decodePngAtMost.
 *
 * @example
 * decodePngAtLeast(bytes, 1400, 1050); // 4082x3062 -> 1400x1051
 */
export function decodePngAtLeast(bytes: Uint8Array, width: number, height: number): RgbaImage | null {
  if (!(width >= 1 && height >= 1)) throw new RangeError(`the size must be at least 1x1, got ${width}x${height}`);
  return decodePng(bytes, { atLeast: { width, height } });
}

/** How large a decode comes out: a whole factor that fits `maxSide`, or blocks that keep `atLeast`. */
type Sizing = { maxSide: number } | { atLeast: { width: number; height: number } };

function decodePng(bytes: Uint8Array, sizing: Sizing): RgbaImage | null {
  if (bytes.length < 8 || SIGNATURE.some((v, i) => bytes[i] !== v)) throw corrupt("it does not start with the PNG signature");
  let colour: InterlacedColour | null = null;
  let scanlines: Scanlines | null = null;
  let idatDone = false;
  let sawTrns = false;
  let pos = 8;
  while (pos < bytes.length) {
    if (pos + 8 > bytes.length) throw corrupt("it is truncated inside a chunk header");
    const length = u32(bytes, pos);
    const type = chunkType(bytes, pos + 4);
    const critical = !(bytes[pos + 4]! & 0x20);
    if (length > 0x7fffffff) throw corrupt(`its ${type} chunk claims ${length} bytes`);
    if (pos + 12 + length > bytes.length) throw corrupt(`it is truncated inside its ${type} chunk`);
    const data = bytes.subarray(pos + 8, pos + 8 + length);
    pos += 12 + length;

    if (!colour) {
      if (type !== "IHDR") throw corrupt("its first chunk is not IHDR");
      colour = readHeader(data);
      continue;
    }
    if (type === "IDAT") {
      if (idatDone) throw corrupt("its IDAT chunks are not consecutive");
      if (!scanlines) {
        if (colour.colourType === 3 && !colour.palette) throw corrupt("it is a palette image without a PLTE chunk");
        scanlines = createScanlines(colour, sizing);
        if (!scanlines) return null; // rows too wide
      }
      scanlines.push(data);
      continue;
    }
    if (scanlines) idatDone = true;
    if (type === "IEND") break;
    if (type === "IHDR") throw corrupt("it has a second IHDR chunk");
    if (type === "PLTE") {
      if (scanlines) throw corrupt("its PLTE chunk comes after the image data");
      if (colour.palette) throw corrupt("it has two PLTE chunks");
      readPalette(colour, data);
    } else if (type === "tRNS") {
      if (sawTrns) throw corrupt("it has two tRNS chunks");
      sawTrns = true;
      if (!scanlines) readTransparency(colour, data);
    } else if (critical) {
      throw corrupt(`it has an unknown critical chunk ${type}`);
    }
  }
  if (!colour) throw corrupt("it has no IHDR chunk");
  if (!scanlines) throw corrupt("it has no image data (IDAT)");
  return scanlines.finish();
}

/** The colour facts from IHDR. Throws above MAX_IMAGE_PIXELS. */
function readHeader(d: Uint8Array): InterlacedColour {
  if (d.length !== 13) throw corrupt(`its IHDR chunk is ${d.length} bytes, not 13`);
  const width = u32(d, 0);
  const height = u32(d, 4);
  const [depth, colourType, compression, filter, interlace] = [d[8]!, d[9]!, d[10]!, d[11]!, d[12]!];
  if (width === 0 || height === 0 || width > 0x7fffffff || height > 0x7fffffff) throw corrupt(`its size ${width}x${height} is invalid`);
  if (!DEPTHS[colourType]?.includes(depth)) throw corrupt(`colour type ${colourType} with bit depth ${depth} is invalid`);
  if (compression !== 0 || filter !== 0 || interlace > 1) throw corrupt("its header names an unknown compression, filter or interlace method");
  if (width * height > MAX_IMAGE_PIXELS) {
    throw new Error(
      `The PNG is ${width}x${height} (${((width * height) / 1e6).toFixed(1)} million pixels); images may have at most ${MAX_IMAGE_PIXELS / 1e6} million pixels.`,
    );
  }
  return { width, height, depth, colourType, palette: null, paletteSize: 0, key: null, interlaced: interlace === 1 };
}

/** The colour facts, and whether the image is Adam7-interlaced. */
interface InterlacedColour extends PngColour {
  interlaced: boolean;
}

function readPalette(colour: PngColour, d: Uint8Array): void {
  const entries = d.length / 3;
  if (!Number.isInteger(entries) || entries < 1 || entries > 256) throw corrupt(`its PLTE chunk is ${d.length} bytes`);
  // A suggested palette in a truecolour or grey image is not used.
  if (colour.colourType !== 3) return;
  const palette = new Uint8Array(256 * 4);
  for (let i = 0; i < entries; i++) palette.set([d[i * 3]!, d[i * 3 + 1]!, d[i * 3 + 2]!, 255], i * 4);
  colour.palette = palette;
  colour.paletteSize = entries;
}

function readTransparency(colour: PngColour, d: Uint8Array): void {
  const { colourType } = colour;
  if (colourType === 3) {
    if (!colour.palette) throw corrupt("its tRNS chunk comes before PLTE");
    if (d.length > colour.paletteSize) throw corrupt(`its tRNS chunk has ${d.length} entries for ${colour.paletteSize} palette colours`);
    for (let i = 0; i < d.length; i++) colour.palette[i * 4 + 3] = d[i]!;
  } else if (colourType === 0 || colourType === 2) {
    const samples = colourType === 0 ? 1 : 3;
    if (d.length !== samples * 2) throw corrupt(`its tRNS chunk is ${d.length} bytes, not ${samples * 2}`);
    colour.key = Array.from({ length: samples }, (_, i) => (d[i * 2]! << 8) | d[i * 2 + 1]!);
  }
  // Colour types 4 and 6 already carry alpha; libpng ignores a tRNS there too.
}

interface Scanlines {
  /** Takes the data of one IDAT chunk. */
  push(idat: Uint8Array): void;
  /** After the last IDAT: the decoded image, or throws if the data ended early. */
  finish(): RgbaImage;
}

/**
 * The IDAT consumer: an inflater (zlib header, inflate calls) feeding a row sink (scanline
 * assembly and the row pipeline). Null when a scanline is wider than MAX_ROW_BYTES.
 */
function createScanlines(colour: InterlacedColour, sizing: Sizing): Scanlines | null {
  const plan = planRows(colour, sizing);
  if (!plan) return null;
  if (colour.interlaced) {
    const sink = createInterlacedSink(colour, plan);
    return { push: createInflater(sink, sink.expected), finish: sink.finish };
  }
  const sink = createRowSink(colour, plan);
  return { push: createInflater(sink, (plan.stride + 1) * colour.height), finish: sink.finish };
}

/** The geometry of the row pipeline for one image and its sizing. */
interface RowPlan {
  /** Bytes of one scanline without its filter byte. */
  stride: number;
  /** Bytes per complete pixel for the filters (1 below 8 bits); also the zero prefix of each row buffer. */
  bpp: number;
  /** Where the box filter's blocks start along each side (blockStarts); null for a plain decode. */
  blocks: { cols: Int32Array; rows: Int32Array } | null;
  outWidth: number;
  outHeight: number;
}

/** Null when a scanline is wider than MAX_ROW_BYTES. */
function planRows(colour: PngColour, sizing: Sizing): RowPlan | null {
  const { width, height, depth, colourType } = colour;
  const bitsPerPixel = depth * CHANNELS[colourType]!;
  const stride = Math.ceil((width * bitsPerPixel) / 8);
  if (stride > MAX_ROW_BYTES) return null;
  const bpp = Math.max(1, bitsPerPixel >> 3);
  let blocks: RowPlan["blocks"] = null;
  if ("maxSide" in sizing) {
    const factor = Math.max(1, Math.ceil(Math.max(width, height) / sizing.maxSide));
    if (factor > 1) blocks = { cols: blockStarts(width, { factor }), rows: blockStarts(height, { factor }) };
  } else {
    const ratio = Math.min(width / sizing.atLeast.width, height / sizing.atLeast.height);
    if (ratio >= 2) blocks = { cols: blockStarts(width, { count: Math.ceil(width / ratio) }), rows: blockStarts(height, { count: Math.ceil(height / ratio) }) };
  }
  const outWidth = blocks ? blocks.cols.length - 1 : width;
  const outHeight = blocks ? blocks.rows.length - 1 : height;
  return { stride, bpp, blocks, outWidth, outHeight };
}

/** Where inflated bytes go: split into scanlines, unfiltered, converted and (when shrinking) box-filtered. */
interface RowSink {
  take(data: Uint8Array): void;
  /** Whether every scanline the header implies has arrived. */
  complete(): boolean;
  /** The decoded image, or throws if scanlines are missing. */
  finish(): RgbaImage;
}

/** The buffers of the row pipeline, allocated when the first pixel data arrives. */
interface Rows {
  /** Two scanlines, each after `bpp` zero bytes so the first pixel's filter needs no special case. */
  cur: Uint8Array;
  prev: Uint8Array;
  out: Uint8Array;
  /** The box filter when shrinking. */
  box: BoxShrink | null;
}

function allocateRows(_colour: PngColour, plan: RowPlan): Rows {
  const out = new Uint8Array(plan.outWidth * 4 * plan.outHeight);
  const rowLength = plan.bpp + plan.stride;
  const box = plan.blocks ? createBoxShrink(plan.blocks.cols, plan.blocks.rows, out) : null;
  return { cur: new Uint8Array(rowLength), prev: new Uint8Array(rowLength), out, box };
}

function createRowSink(colour: PngColour, plan: RowPlan): RowSink {
  const { width, height } = colour;
  const { bpp, outWidth, outHeight } = plan;
  const outRow = outWidth * 4;
  const convert = rowConverter(colour);
  const line: Scanline = { filter: -1, filled: 0 };
  let y = 0;
  let rows: Rows | null = null;

  function finishRow(r: Rows, filter: number): void {
    const row = r.cur;
    unfilter(filter, row, r.prev, bpp);
    // A row equal to the one above (flat areas, bombs) is not converted again.
    const same = y > 0 && equalBytes(row, r.prev);
    if (!r.box) {
      if (same) r.out.copyWithin(y * outRow, (y - 1) * outRow, y * outRow);
      else convert(row, bpp, r.out.subarray(y * outRow, (y + 1) * outRow));
    } else {
      if (!same) convert(row, bpp, r.box.rgba);
      r.box.addRow(y, same);
    }
    r.cur = r.prev;
    r.prev = row;
    y++;
  }

  const target: ScanlineTarget = {
    size: `${width}x${height}`,
    row: () => (y === height ? null : rows!.cur),
    where: () => `row ${y}`,
    complete: (filter) => finishRow(rows!, filter),
  };
  return {
    take(data) {
      rows ??= allocateRows(colour, plan);
      takeScanlines(data, line, bpp, target);
    },
    complete: () => y === height,
    finish() {
      if (y < height) throw corrupt(`its image data ends after ${y} of ${height} rows`);
      return { width: outWidth, height: outHeight, data: rows!.out };
    },
  };
}

/** A scanline being assembled: its filter byte (-1 before it arrives) and how many of its bytes are in. */
interface Scanline {
  filter: number;
  filled: number;
}

/** Where a sink's scanlines go (takeScanlines). */
interface ScanlineTarget {
  /** The image's size, for the error when data runs on. */
  size: string;
  /** The buffer of the scanline being filled (`bpp` zero bytes, then the scanline), or null once all arrived. */
  row(): Uint8Array | null;
  /** Names that scanline, for the error when its filter type is unknown. */
  where(): string;
  /** Takes a whole scanline, with its filter type. */
  complete(filter: number): void;
}

/**
 * Splits inflated bytes into scanlines, the part both sinks share: each is a filter byte (0..4), then the
 * bytes that fill the target's row buffer after its `bpp` zero bytes; each whole one goes to `complete`.
 * More data than the image holds, or an unknown filter type, throws.
 */
function takeScanlines(data: Uint8Array, line: Scanline, bpp: number, target: ScanlineTarget): void {
  let i = 0;
  while (i < data.length) {
    const row = target.row();
    if (!row) throw corrupt(`its image data is longer than its ${target.size} size implies`);
    if (line.filter < 0) {
      line.filter = data[i++]!;
      if (line.filter > 4) throw corrupt(`${target.where()} has unknown filter type ${line.filter}`);
      continue;
    }
    const stride = row.length - bpp;
    const n = Math.min(stride - line.filled, data.length - i);
    row.set(data.subarray(i, i + n), bpp + line.filled);
    line.filled += n;
    i += n;
    if (line.filled === stride) {
      const filter = line.filter;
      line.filter = -1;
      line.filled = 0;
      target.complete(filter);
    }
  }
}

/** Adam7's seven passes: the first column and row each samples, and the steps between samples. */
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

/**
 * The sink of an Adam7-interlaced image: seven reduced images one after another, each with its own scanline
 * width and filters, whose pixels are scattered into the full-size RGBA image (a pass's rows are not whole
 * rows, so nothing can be shrunk before the last pass). When shrinking, the full image then goes through the
 * box filter row by row. Holds the full image, so callers keep interlaced PNGs to their own limit (`interlacedPngPixels`, limits.ts).
 */
function createInterlacedSink(colour: PngColour, plan: RowPlan): RowSink & { expected: number } {
  const { width, height, depth, colourType } = colour;
  const { bpp } = plan;
  const bitsPerPixel = depth * CHANNELS[colourType]!;
  const passes = ADAM7.map(([x0, y0, dx, dy]) => {
    const w = Math.max(0, Math.ceil((width - x0) / dx));
    const h = Math.max(0, Math.ceil((height - y0) / dy));
    return { x0, y0, dx, dy, w, h, stride: Math.ceil((w * bitsPerPixel) / 8), convert: rowConverter({ ...colour, width: w }) };
  }).filter((p) => p.w > 0 && p.h > 0);
  const expected = passes.reduce((n, p) => n + (p.stride + 1) * p.h, 0);
  const line: Scanline = { filter: -1, filled: 0 };
  let image: Uint32Array | null = null;
  let cur = new Uint8Array(0);
  let prev = new Uint8Array(0);
  let rgba = new Uint8Array(0);
  let px = new Uint32Array(0);
  let pass = 0;
  let y = 0;

  function startPass(): void {
    const p = passes[pass]!;
    cur = new Uint8Array(bpp + p.stride);
    prev = new Uint8Array(bpp + p.stride);
    rgba = new Uint8Array(p.w * 4);
    px = new Uint32Array(rgba.buffer);
  }

  function finishRow(filter: number): void {
    const p = passes[pass]!;
    unfilter(filter, cur, prev, bpp);
    p.convert(cur, bpp, rgba);
    const row = (p.y0 + y * p.dy) * width;
    for (let i = 0, x = p.x0; i < p.w; i++, x += p.dx) image![row + x] = px[i]!;
    [cur, prev] = [prev, cur];
    if (++y === p.h) {
      y = 0;
      if (++pass < passes.length) startPass();
    }
  }

  const target: ScanlineTarget = {
    size: `${width}x${height}`,
    row: () => (pass === passes.length ? null : cur),
    where: () => `row ${y} of pass ${pass + 1}`,
    complete: finishRow,
  };
  return {
    expected,
    take(data) {
      if (!image) {
        image = new Uint32Array(width * height);
        startPass();
      }
      takeScanlines(data, line, bpp, target);
    },
    complete: () => pass === passes.length,
    finish() {
      if (pass < passes.length) throw corrupt(`its image data ends in pass ${pass + 1} of ${passes.length}`);
      const full = new Uint8Array(image!.buffer);
      if (!plan.blocks) return { width, height, data: full };
      const out = new Uint8Array(plan.outWidth * plan.outHeight * 4);
      const box = createBoxShrink(plan.blocks.cols, plan.blocks.rows, out);
      for (let r = 0; r < height; r++) {
        box.rgba.set(full.subarray(r * width * 4, (r + 1) * width * 4));
        box.addRow(r, false);
      }
      return { width: plan.outWidth, height: plan.outHeight, data: out };
    },
  };
}

/**
 * Inflates IDAT data into `sink` through zlib's own streaming interface (pako's port of it): the deflate data
 * after the two-byte zlib header is inflated raw (windowBits -15), each call writing into one output buffer
 * of at most OUTPUT_PER_CALL bytes that is reused for the whole decode, so the output of a call is bounded
 * whatever the input (a zlib bomb) and nothing is allocated per call. Reading stops at the end of the
 * deflate data (the Adler-32 after it is not read), or once the sink is complete and TRAILER_BYTES more have
 * been offered (more pixels throw in take()). `expected` is the inflated size the header implies.
 */
function createInflater(sink: RowSink, expected: number): (idat: Uint8Array) => void {
  const strm = new ZStream();
  if (zlibInflateInit2(strm, -15) !== Z_OK) throw new Error("zlib's inflater did not start");
  const out = new Uint8Array(Math.max(1, Math.min(OUTPUT_PER_CALL, expected)));
  const zlibHeader: number[] = [];
  let ended = false;
  let sinceOutput = 0;
  let trailer = 0;

  function inflate(input: Uint8Array): void {
    if (sink.complete()) {
      // Complete: only the end of the deflate data may follow (more pixels throw in take()); the rest is not read.
      if (trailer >= TRAILER_BYTES) return;
      input = input.subarray(0, TRAILER_BYTES - trailer);
      trailer += input.length;
    }
    strm.input = input;
    strm.next_in = 0;
    strm.avail_in = input.length;
    while (strm.avail_in > 0 && !ended) {
      strm.output = out;
      strm.next_out = 0;
      strm.avail_out = out.length;
      const before = strm.avail_in;
      const status = zlibInflate(strm, Z_NO_FLUSH);
      if (status !== Z_OK && status !== Z_STREAM_END) throw corrupt(`its compressed image data is invalid (${strm.msg || `zlib status ${status}`})`);
      if (status === Z_STREAM_END) ended = true;
      sinceOutput = strm.next_out > 0 ? 0 : sinceOutput + (before - strm.avail_in);
      if (sinceOutput > STALL_BYTES) throw corrupt("its compressed image data stopped producing pixels");
      if (strm.next_out > 0) sink.take(out.subarray(0, strm.next_out));
    }
  }

  return (idat) => {
    let i = 0;
    while (zlibHeader.length < 2 && i < idat.length) zlibHeader.push(idat[i++]!);
    if (zlibHeader.length === 2 && i > 0) checkZlibHeader(zlibHeader[0]!, zlibHeader[1]!);
    if (i < idat.length) inflate(idat.subarray(i));
  };
}

function checkZlibHeader(cmf: number, flg: number): void {
  if ((cmf & 0x0f) !== 8 || cmf >> 4 > 7 || ((cmf << 8) | flg) % 31 !== 0) throw corrupt("its image data is not a zlib stream");
  if (flg & 0x20) throw corrupt("its zlib stream asks for a preset dictionary");
}

function chunkType(b: Uint8Array, at: number): string {
  let s = "";
  for (let i = at; i < at + 4; i++) {
    const c = b[i]! | 0x20;
    if (c < 0x61 || c > 0x7a) throw corrupt("it has a chunk whose type is not four letters");
    s += String.fromCharCode(b[i]!);
  }
  return s;
}

const u32 = (b: Uint8Array, i: number) => ((b[i]! << 24) | (b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!) >>> 0;
