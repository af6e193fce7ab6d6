/**
 * decodePngAtMost against sharp (libvips) as the reference decoder: every colour type and bit depth, tRNS,
 * each filter, PNGs from sharp's and our own encoder; shrinking against sharp's pixels box-averaged here;
 * then hostile input (truncation, corruption, a zlib bomb, a pixel bomb, seeded random mutations in a worker
 * thread that is killed if a case hangs); and the same answers inside workerd.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { crc32, deflateSync } from "node:zlib";
import sharp from "sharp";
import { describe, expect, it, vi } from "vitest";
import { PhotonImage } from "@cf-wasm/photon/others";
import { EDGE_DECODE_LIMITS } from "../../src/edge-services";
import { decodeImage } from "../../src/images";
import { decodeAtLeast, decodeAtMost } from "../../src/images/scaled";
import { encodePng } from "../../src/images/png";
import { decodePngAtLeast, decodePngAtMost, MAX_ROW_BYTES } from "../../src/images/png-decode";
import { MAX_IMAGE_PIXELS } from "../../src/images/sniff";
import type { RgbaImage } from "../../src/images/types";
import { startTestWorker } from "../helpers/workerd";
import type { FuzzCase, FuzzOutcome } from "./png-decode.fuzz-worker";
import { seeded } from "../../src/photo/local/raster";

// --- a tiny PNG writer: any colour type, bit depth and filter ----------------------------------------------

const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

interface PngSpec {
  width: number;
  height: number;
  depth: number;
  colourType: number;
  /** Unfiltered packed scanlines. */
  rows: Uint8Array[];
  /** Filter type per row (default: y % 5, every filter in turn). */
  filter?: (y: number) => number;
  palette?: Uint8Array;
  trns?: Uint8Array;
  interlace?: boolean;
  /** Chunks written after IHDR (and PLTE/tRNS), before IDAT. */
  extra?: Array<[string, Uint8Array]>;
  /** Largest IDAT chunk; the zlib stream is split across as many as needed. */
  idatSize?: number;
  /** Replaces the zlib stream of the filtered rows. */
  zlib?: (filtered: Uint8Array) => Uint8Array;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const b = Buffer.alloc(12 + data.length);
  b.writeUInt32BE(data.length, 0);
  b.write(type, 4, "latin1");
  b.set(data, 8);
  b.writeUInt32BE(crc32(b.subarray(4, 8 + data.length)), 8 + data.length);
  return b;
}

function writePng(spec: PngSpec): Uint8Array {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(spec.width, 0);
  ihdr.writeUInt32BE(spec.height, 4);
  ihdr[8] = spec.depth;
  ihdr[9] = spec.colourType;
  ihdr[12] = spec.interlace ? 1 : 0;
  const bpp = Math.max(1, (spec.depth * CHANNELS[spec.colourType]!) >> 3);
  const stride = spec.rows[0]?.length ?? 0;
  const filtered = new Uint8Array(spec.rows.length * (stride + 1));
  spec.rows.forEach((row, y) => {
    const type = (spec.filter ?? ((i) => i % 5))(y);
    filtered[y * (stride + 1)] = type;
    filtered.set(filterRow(type, row, y > 0 ? spec.rows[y - 1]! : null, bpp), y * (stride + 1) + 1);
  });
  const z = spec.zlib ? spec.zlib(filtered) : deflateSync(filtered);
  const size = spec.idatSize ?? z.length;
  const idats: Buffer[] = [];
  for (let i = 0; i < z.length; i += size) idats.push(chunk("IDAT", z.subarray(i, i + size)));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    ...(spec.palette ? [chunk("PLTE", spec.palette)] : []),
    ...(spec.trns ? [chunk("tRNS", spec.trns)] : []),
    ...(spec.extra ?? []).map(([type, data]) => chunk(type, data)),
    ...idats,
    chunk("IEND", new Uint8Array(0)),
  ]);
}

function filterRow(type: number, row: Uint8Array, prev: Uint8Array | null, bpp: number): Uint8Array {
  const out = new Uint8Array(row.length);
  for (let i = 0; i < row.length; i++) {
    const a = i >= bpp ? row[i - bpp]! : 0;
    const b = prev ? prev[i]! : 0;
    const c = prev && i >= bpp ? prev[i - bpp]! : 0;
    const p = a + b - c;
    const paeth = Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
    const predictor = [0, a, b, (a + b) >> 1, paeth][type]!;
    out[i] = (row[i]! - predictor) & 0xff;
  }
  return out;
}

// --- random images of a given format ------------------------------------------------------------------------

interface Format {
  name: string;
  colourType: number;
  depth: number;
  trns?: boolean;
}

/**
 * Random pixels with some structure (runs of equal pixels, the tRNS key colour and near misses of it, alpha 0
 * and full) so every filter and the transparency paths see real work. Returns the PNG spec without filter
 * choice.
 */
function randomImage(format: Format, width: number, height: number, seed: number): PngSpec {
  const rng = seeded(seed);
  const { colourType, depth } = format;
  const channels = CHANNELS[colourType]!;
  const max = (1 << depth) - 1;
  const int = (n: number) => Math.floor(rng() * (n + 1));
  let palette: Uint8Array | undefined;
  let trns: Uint8Array | undefined;
  let paletteSize = 0;
  let key: number[] | null = null;
  if (colourType === 3) {
    paletteSize = depth === 8 ? 200 : 1 << depth;
    palette = Uint8Array.from({ length: paletteSize * 3 }, () => int(255));
    if (format.trns) trns = Uint8Array.from({ length: Math.max(1, paletteSize >> 1) }, (_, i) => (i === 0 ? 0 : int(255)));
  } else if (format.trns) {
    key = Array.from({ length: channels }, () => int(max));
    trns = new Uint8Array(channels * 2);
    key.forEach((v, i) => {
      trns![i * 2] = v >> 8;
      trns![i * 2 + 1] = v & 0xff;
    });
  }
  const hasAlpha = colourType === 4 || colourType === 6;
  const stride = Math.ceil((width * channels * depth) / 8);
  const rows: Uint8Array[] = [];
  let last: number[] = new Array<number>(channels).fill(0);
  for (let y = 0; y < height; y++) {
    const row = new Uint8Array(stride);
    for (let x = 0; x < width; x++) {
      const roll = rng();
      let px: number[];
      if (roll < 0.25) px = last;
      else if (roll < 0.4 && key) px = key;
      else if (roll < 0.5 && key)
        px = key.map((v, c) => (c === Math.floor(rng() * channels) ? (v + 1) & max : v)); // near miss
      else if (colourType === 3) px = [int(paletteSize - 1)];
      else px = Array.from({ length: channels }, () => int(max));
      if (hasAlpha && roll >= 0.25 && rng() < 0.4) px = [...px.slice(0, -1), rng() < 0.5 ? 0 : max];
      last = px;
      px.forEach((v, c) => {
        writeSample(row, x * channels + c, depth, v);
      });
    }
    rows.push(row);
  }
  return { width, height, depth, colourType, rows, palette, trns };
}

function writeSample(row: Uint8Array, index: number, depth: number, v: number): void {
  if (depth === 16) {
    row[index * 2] = v >> 8;
    row[index * 2 + 1] = v & 0xff;
  } else if (depth === 8) {
    row[index] = v;
  } else {
    const bit = index * depth;
    row[bit >> 3]! |= v << (8 - depth - (bit & 7));
  }
}

// --- the reference: sharp's decode, and a box average of it --------------------------------------------------

/** sharp's RGBA; 16-bit images through its 16-bit pipeline, rounded to 8 bits as decodePngAtMost does. */
async function sharpRgba(png: Uint8Array): Promise<RgbaImage> {
  const meta = await sharp(png).metadata();
  if (meta.depth === "ushort") {
    const { data, info } = await sharp(png)
      .pipelineColourspace("rgb16")
      .toColourspace("rgb16")
      .ensureAlpha()
      .raw({ depth: "ushort" })
      .toBuffer({ resolveWithObject: true });
    const samples = new Uint16Array(data.buffer, data.byteOffset, data.length / 2);
    return { width: info.width, height: info.height, data: Uint8Array.from(samples, (v) => Math.round(v / 257)) };
  }
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, data: new Uint8Array(data) };
}

/** Each factor x factor block: alpha the mean, colour the alpha-weighted mean (0,0,0,0 when all transparent). */
function boxAverage(img: RgbaImage, factor: number): RgbaImage {
  const starts = (side: number) => Array.from({ length: Math.ceil(side / factor) + 1 }, (_, i) => Math.min(side, i * factor));
  return blockAverage(img, starts(img.width), starts(img.height));
}

/** Blocks of `count` as even as whole pixels allow, as the decoder documents: starts at round(i * side / count). */
function evenStarts(side: number, count: number): number[] {
  return Array.from({ length: count + 1 }, (_, i) => Math.round((i * side) / count));
}

/** The alpha-weighted mean of each block between the given column and row starts (each list ends with the side). */
function blockAverage(img: RgbaImage, xs: number[], ys: number[]): RgbaImage {
  const width = xs.length - 1;
  const height = ys.length - 1;
  const data = new Uint8Array(width * height * 4);
  for (let oy = 0; oy < height; oy++) {
    for (let ox = 0; ox < width; ox++) {
      const sums = [0, 0, 0, 0];
      let n = 0;
      for (let y = ys[oy]!; y < ys[oy + 1]!; y++) {
        for (let x = xs[ox]!; x < xs[ox + 1]!; x++) {
          const i = (y * img.width + x) * 4;
          const a = img.data[i + 3]!;
          for (let c = 0; c < 3; c++) sums[c]! += img.data[i + c]! * a;
          sums[3]! += a;
          n++;
        }
      }
      if (sums[3] === 0) continue;
      const o = (oy * width + ox) * 4;
      for (let c = 0; c < 3; c++) data[o + c] = Math.round(sums[c]! / sums[3]!);
      data[o + 3] = Math.round(sums[3]! / n);
    }
  }
  return { width, height, data };
}

/** A 45x80 RGBA PNG whose rows come in runs of 1 to 9 repeats (flat areas), at any phase against the blocks. */
function repeatedRows(seed: number, imageSeed: number): Uint8Array {
  const rng = seeded(seed);
  const base = randomImage({ name: "", colourType: 6, depth: 8 }, 45, 80, imageSeed);
  const rows: Uint8Array[] = [];
  while (rows.length < 80) {
    const row = base.rows[rows.length]!;
    for (let n = 1 + Math.floor(rng() * 9); n > 0 && rows.length < 80; n--) rows.push(row);
  }
  return writePng({ ...base, rows });
}

/** The first difference larger than `tolerance`, described, or null. */
function difference(actual: RgbaImage | null, expected: RgbaImage, tolerance = 0): string | null {
  if (!actual) return "decodePngAtMost returned null";
  if (actual.width !== expected.width || actual.height !== expected.height) {
    return `size ${actual.width}x${actual.height}, expected ${expected.width}x${expected.height}`;
  }
  for (let i = 0; i < expected.data.length; i++) {
    if (Math.abs(actual.data[i]! - expected.data[i]!) > tolerance) {
      const p = i >> 2;
      return `pixel (${p % expected.width}, ${Math.floor(p / expected.width)}) is ${actual.data.subarray(p * 4, p * 4 + 4).join(",")}, expected ${expected.data.subarray(p * 4, p * 4 + 4).join(",")}`;
    }
  }
  return null;
}

/** Full decode equals sharp's exactly; a shrink by `factor` equals sharp's pixels box-averaged, within 1. */
async function expectMatchesSharp(png: Uint8Array, factor = 4): Promise<void> {
  const reference = await sharpRgba(png);
  expect(difference(decodePngAtMost(png, 100_000), reference)).toBeNull();
  const longer = Math.max(reference.width, reference.height);
  const maxSide = Math.ceil(longer / factor);
  expect(Math.ceil(longer / maxSide)).toBe(factor); // the decoder derives the same factor from maxSide
  expect(difference(decodePngAtMost(png, maxSide), boxAverage(reference, factor), 1)).toBeNull();
}

// --- the tests ----------------------------------------------------------------------------------------------

const FORMATS: Format[] = [
  ...[1, 2, 4, 8, 16].flatMap((depth) => [
    { name: `grey ${depth}-bit`, colourType: 0, depth },
    { name: `grey ${depth}-bit + tRNS`, colourType: 0, depth, trns: true },
  ]),
  ...[8, 16].flatMap((depth) => [
    { name: `RGB ${depth}-bit`, colourType: 2, depth },
    { name: `RGB ${depth}-bit + tRNS`, colourType: 2, depth, trns: true },
    { name: `grey+alpha ${depth}-bit`, colourType: 4, depth },
    { name: `RGBA ${depth}-bit`, colourType: 6, depth },
  ]),
  ...[1, 2, 4, 8].flatMap((depth) => [
    { name: `palette ${depth}-bit`, colourType: 3, depth },
    { name: `palette ${depth}-bit + tRNS`, colourType: 3, depth, trns: true },
  ]),
];

describe("decodePngAtMost: colour types, bit depths, filters", () => {
  it.each(FORMATS.map((f, i) => [f.name, f, i] as const))("%s, rows in every filter, equals sharp (whole and shrunk by 4)", async (_, format, i) => {
    // 37 x 23: sub-byte rows end mid-byte, and the shrink has partial blocks on the right and bottom.
    await expectMatchesSharp(writePng(randomImage(format, 37, 23, 1000 + i)), 4);
  });

  const filterFormats = FORMATS.filter((f) => ["RGB 8-bit", "RGBA 16-bit", "grey 1-bit", "palette 4-bit + tRNS", "grey+alpha 8-bit"].includes(f.name));
  const FILTERS = ["None", "Sub", "Up", "Average", "Paeth"];
  it.each(FILTERS.flatMap((filterName, type) => filterFormats.map((f) => [filterName, f.name, type, f] as const)))(
    "filter %s on every row, %s",
    async (_, __, type, format) => {
      await expectMatchesSharp(writePng({ ...randomImage(format, 29, 31, 7 + type), filter: () => type }), 3);
    },
  );

  it("reads PNGs written by sharp: photo-like RGB (adaptive filters), 16-bit, palette, grey, alpha", async () => {
    const width = 160;
    const height = 120;
    const rng = seeded(42);
    const raw = Buffer.alloc(width * height * 4);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 4;
        const n = (rng() - 0.5) * 60;
        raw[i] = Math.max(0, Math.min(255, (x / width) * 200 + 30 + n));
        raw[i + 1] = Math.max(0, Math.min(255, (y / height) * 180 + 40 + n));
        raw[i + 2] = Math.max(0, Math.min(255, ((x + y) / (width + height)) * 150 + 60 + n));
        raw[i + 3] = x < 40 ? 0 : x < 80 ? Math.floor(rng() * 256) : 255;
      }
    }
    const rgba = () => sharp(raw, { raw: { width, height, channels: 4 } });
    const pngs = [
      await rgba().removeAlpha().png({ adaptiveFiltering: true }).toBuffer(),
      await rgba().png({ adaptiveFiltering: true, compressionLevel: 9 }).toBuffer(),
      await rgba().toColourspace("rgb16").png().toBuffer(),
      await rgba().png({ palette: true }).toBuffer(),
      await rgba().png({ palette: true, colours: 4 }).toBuffer(),
      await rgba().removeAlpha().toColourspace("b-w").png().toBuffer(),
      await rgba().removeAlpha().toColourspace("grey16").png().toBuffer(),
    ];
    for (const png of pngs) await expectMatchesSharp(png, 5);
  });

  it("reads PNGs written by src/images/png.ts: indexed 1/2/4/8-bit with tRNS, RGB, RGBA", async () => {
    const rng = seeded(9);
    for (const bitDepth of [1, 2, 4, 8] as const) {
      const colours = Math.min(1 << bitDepth, 150);
      const palette = Array.from({ length: colours }, (_, i) => [(i * 7) % 256, (i * 13) % 256, (i * 29) % 256, i === 1 ? 0 : 255] as const);
      const png = encodePng({
        width: 45,
        height: 33,
        color: { kind: "indexed", bitDepth, palette },
        writeRow: (y, out) => {
          for (let x = 0; x < 45; x++) {
            const v = y % 4 === 3 ? x % colours : Math.floor(rng() * colours);
            writeSample(out, x, bitDepth, v);
          }
        },
      });
      await expectMatchesSharp(png, 3);
    }
    for (const kind of ["rgb", "rgba"] as const) {
      const png = encodePng({
        width: 50,
        height: 41,
        color: { kind },
        writeRow: (y, out) => {
          for (let i = 0; i < out.length; i++) out[i] = y % 3 === 0 ? (i * 5) & 0xff : Math.floor(rng() * 256);
        },
      });
      await expectMatchesSharp(png, 4);
    }
  });

  it("reads Adam7-interlaced PNGs (sharp's progressive): every colour kind, sizes with empty passes, whole and shrunk", async () => {
    for (const [width, height] of [
      [1, 1],
      [3, 2],
      [7, 9],
      [37, 23],
      [160, 120],
    ] as const) {
      const raw = Buffer.alloc(width * height * 4);
      const rng = seeded(width * 1000 + height);
      for (let i = 0; i < raw.length; i++) raw[i] = i % 4 === 3 ? (rng() < 0.3 ? Math.floor(rng() * 256) : 255) : Math.floor(rng() * 256);
      const rgba = () => sharp(raw, { raw: { width, height, channels: 4 } });
      const pngs = [
        await rgba().removeAlpha().png({ progressive: true }).toBuffer(),
        await rgba().png({ progressive: true }).toBuffer(),
        await rgba().toColourspace("rgb16").png({ progressive: true }).toBuffer(),
        await rgba().png({ palette: true, colours: 4, progressive: true }).toBuffer(),
        await rgba().png({ palette: true, progressive: true }).toBuffer(),
        await rgba().removeAlpha().toColourspace("b-w").png({ progressive: true }).toBuffer(),
      ];
      for (const png of pngs) {
        expect(png[28], "interlace method in IHDR").toBe(1);
        await expectMatchesSharp(png, Math.min(3, Math.max(width, height)));
      }
    }
  });

  it("refuses an interlaced PNG whose passes' data ends early or runs on", async () => {
    const rows = (height: number) =>
      sharp(Buffer.alloc(40 * height * 3, 7), { raw: { width: 40, height, channels: 3 } })
        .png({ progressive: true })
        .toBuffer();
    const png = await rows(30);
    // Its one IDAT chunk cut to half (the length patched; CRCs are not checked), then IEND.
    const idat = png.indexOf("IDAT") - 4;
    const half = png.readUInt32BE(idat) >> 1;
    const cut = Buffer.concat([png.subarray(0, idat + 8 + half), Buffer.alloc(4), png.subarray(png.length - 12)]);
    cut.writeUInt32BE(half, idat);
    expect(() => decodePngAtMost(cut, 100)).toThrow(/ends in pass [1-7] of 7/);
    // IHDR's height one row short of the data (same pass rows but the last): more data than the passes take.
    const long = Buffer.from(await rows(32));
    long.writeUInt32BE(31, 20);
    expect(() => decodePngAtMost(long, 100)).toThrow(/^The PNG is corrupt: /);
  });

  it("streams: one-byte IDAT chunks (the zlib header split too) give the same pixels", () => {
    const spec = randomImage({ name: "", colourType: 6, depth: 8 }, 20, 15, 3);
    const whole = decodePngAtMost(writePng(spec), 100);
    expect(decodePngAtMost(writePng({ ...spec, idatSize: 1 }), 100)).toEqual(whole);
    expect(decodePngAtMost(writePng({ ...spec, idatSize: 5000 }), 7)).toEqual(decodePngAtMost(writePng(spec), 7));
  });

  it("streams: noise then a flat area (inflate slices grow, then shrink), in 8 KiB, 100 KB and 1-chunk IDATs", async () => {
    const width = 700;
    const height = 500;
    const rng = seeded(77);
    const rows = Array.from({ length: height }, (_, y) => Uint8Array.from({ length: width * 3 }, (_, i) => (y < 300 ? Math.floor(rng() * 256) : (i % 3) * 90)));
    const spec: PngSpec = { width, height, depth: 8, colourType: 2, rows, filter: (y) => (y < 300 ? y % 5 : 2) };
    for (const idatSize of [8192, 100_000, undefined]) await expectMatchesSharp(writePng({ ...spec, idatSize }), 3);
  });

  it("shrinks runs of repeated rows (flat areas) like any other rows, whatever their phase against the blocks", async () => {
    const png = repeatedRows(31, 12);
    for (const factor of [2, 3, 4, 7]) await expectMatchesSharp(png, factor);
  });

  it("ignores ancillary chunks (gAMA, iCCP, tEXt, unknown lower-case ones) and a tRNS on an image with alpha", () => {
    const spec = randomImage({ name: "", colourType: 6, depth: 8 }, 12, 9, 4);
    const plain = decodePngAtMost(writePng(spec), 100);
    const gamma = Buffer.alloc(4);
    gamma.writeUInt32BE(22000);
    const withAncillary = writePng({
      ...spec,
      trns: new Uint8Array(6),
      extra: [
        ["gAMA", gamma],
        ["iCCP", Buffer.from("x\0\0junk")],
        ["tEXt", Buffer.from("Comment\0hello")],
        ["zzZz", new Uint8Array(3)],
      ],
    });
    expect(decodePngAtMost(withAncillary, 100)).toEqual(plain);
  });

  it("does not check CRCs: a PNG with a wrong CRC on every chunk still decodes", () => {
    const png = writePng(randomImage({ name: "", colourType: 2, depth: 8 }, 10, 10, 5));
    const damaged = new Uint8Array(png);
    for (let pos = 8; pos < damaged.length; ) {
      const length = new DataView(damaged.buffer).getUint32(pos);
      damaged[pos + 8 + length]! ^= 0xff;
      pos += 12 + length;
    }
    expect(decodePngAtMost(damaged, 100)).toEqual(decodePngAtMost(png, 100));
  });
});

describe("decodePngAtLeast: blocks as even as whole pixels allow", () => {
  it.each(FORMATS.map((f, i) => [f.name, f, i] as const))("%s: at least the size asked for, each block its alpha-weighted mean", async (_, format, i) => {
    const png = writePng(randomImage(format, 37, 23, 2000 + i));
    const reference = await sharpRgba(png);
    for (const [w, h] of [
      [10, 5],
      [13, 6],
      [18, 11],
      [7, 11],
    ] as const) {
      const out = decodePngAtLeast(png, w, h)!;
      const ratio = Math.min(37 / w, 23 / h);
      expect([out.width, out.height]).toEqual([Math.ceil(37 / ratio), Math.ceil(23 / ratio)]);
      expect(out.width >= w && out.height >= h).toBe(true);
      expect(difference(out, blockAverage(reference, evenStarts(37, out.width), evenStarts(23, out.height)), 1)).toBeNull();
    }
  });

  it("decodes whole when the PNG is less than twice the size asked for (never below it)", async () => {
    const png = writePng(randomImage({ name: "", colourType: 6, depth: 8 }, 37, 23, 77));
    expect(difference(decodePngAtLeast(png, 20, 12), await sharpRgba(png))).toBeNull();
    expect(difference(decodePngAtLeast(png, 100, 100), await sharpRgba(png))).toBeNull();
  });

  it("shrinks runs of repeated rows into blocks of different heights like any other rows", async () => {
    const png = repeatedRows(41, 13);
    const reference = await sharpRgba(png);
    for (const [w, h] of [
      [17, 30],
      [13, 23],
      [9, 16],
    ] as const) {
      const out = decodePngAtLeast(png, w, h)!;
      expect(difference(out, blockAverage(reference, evenStarts(45, out.width), evenStarts(80, out.height)), 1)).toBeNull();
    }
  });
});

describe("decodePngAtMost: what it refuses", () => {
  const base = randomImage({ name: "", colourType: 2, depth: 8 }, 16, 12, 11);
  const good = writePng(base);
  const corruptMessage = /^The PNG is corrupt: /;

  it("throws for a file truncated anywhere inside a chunk; accepts one that only lacks IEND", () => {
    for (const cut of [0, 5, 8, 20, 33, 40, Math.floor(good.length / 2), good.length - 20, good.length - 13, good.length - 1]) {
      expect(() => decodePngAtMost(good.subarray(0, cut), 100), `cut at ${cut}`).toThrow(Error);
    }
    expect(decodePngAtMost(good.subarray(0, good.length - 12), 100)).toEqual(decodePngAtMost(good, 100));
  });

  const cases: Array<[string, () => Uint8Array]> = [
    ["missing IHDR", () => Buffer.concat([good.subarray(0, 8), good.subarray(33)])],
    ["missing IDAT", () => writePng({ ...base, zlib: () => new Uint8Array(0) })],
    ["missing PLTE in a palette image", () => writePng({ ...randomImage({ name: "", colourType: 3, depth: 4 }, 8, 8, 1), palette: undefined })],
    ["an unknown critical chunk", () => writePng({ ...base, extra: [["ZZZZ", new Uint8Array(4)]] })],
    ["a chunk type that is not letters", () => writePng({ ...base, extra: [["a1b2", new Uint8Array(4)]] })],
    ["colour type 2 at bit depth 4", () => writePng({ ...base, depth: 4 })],
    ["colour type 3 at bit depth 16", () => writePng({ ...randomImage({ name: "", colourType: 3, depth: 8 }, 8, 8, 1), depth: 16 })],
    ["colour type 5", () => writePng({ ...base, colourType: 5 })],
    ["zero width", () => writePng({ ...base, width: 0 })],
    ["an unknown filter type", () => writePng({ ...base, filter: (y) => (y === 5 ? 5 : 0) })],
    ["a palette index out of range", () => writePng({ ...randomImage({ name: "", colourType: 3, depth: 8 }, 8, 8, 1), palette: new Uint8Array(3 * 4) })],
    ["a tRNS longer than the palette", () => writePng({ ...randomImage({ name: "", colourType: 3, depth: 2 }, 8, 8, 1), trns: new Uint8Array(9) })],
    [
      "a PLTE whose length is not a multiple of 3",
      () => writePng({ ...randomImage({ name: "", colourType: 3, depth: 1 }, 8, 8, 1), palette: new Uint8Array(5) }),
    ],
    ["rows one byte short (wrong scanline length)", () => writePng({ ...base, width: 17 })],
    ["more image data than the header implies", () => writePng({ ...base, height: 11 })],
    [
      "inflate error (garbage after the zlib header)",
      () => writePng({ ...base, zlib: () => Uint8Array.from([0x78, 0x9c, 0xff, 0xff, 0xff, 0xff, 0x00, 0x12, 0x34]) }),
    ],
    ["a stream that is not zlib", () => writePng({ ...base, zlib: (f) => Uint8Array.from(deflateSync(f)).map((v, i) => (i === 0 ? 0x79 : v)) })],
    [
      "a zlib preset dictionary",
      () => writePng({ ...base, zlib: (f) => Buffer.concat([Buffer.from([0x78, 0xbb]), Buffer.from([0, 0, 0, 1]), deflateSync(f).subarray(2)]) }),
    ],
    [
      "a deflate stream that ends before the image",
      () => writePng({ ...base, zlib: (f) => Buffer.concat([deflateSync(f.subarray(0, 50)), Buffer.alloc(300_000, 0x55)]) }),
    ],
  ];
  it.each(cases)("throws for %s", (_, make) => {
    expect(() => decodePngAtMost(make(), 100)).toThrow(corruptMessage);
  });

  it("throws for more than MAX_IMAGE_PIXELS before allocating anything", () => {
    for (const [width, height] of [
      [7000, 7000],
      [0x7fffffff, 0x7fffffff],
      [MAX_IMAGE_PIXELS + 1, 1],
    ] as const) {
      // A header that claims the size, with one row of data: the limit must fire at IHDR.
      const png = writePng({ ...base, width, height, zlib: () => deflateSync(new Uint8Array(4)) });
      const t = performance.now();
      expect(() => decodePngAtMost(png, 100_000)).toThrow(/million pixels/);
      expect(performance.now() - t).toBeLessThan(50);
    }
  });

  it("returns null for rows wider than MAX_ROW_BYTES (the whole-image decoder gets them)", () => {
    const wide = MAX_ROW_BYTES / 8 + 1; // 16-bit RGBA: 8 bytes a pixel
    const png = writePng({ width: wide, height: 2, depth: 16, colourType: 6, rows: [], zlib: () => deflateSync(new Uint8Array(16)) });
    expect(decodePngAtMost(png, 4000)).toBeNull();
  });

  it("rejects a maxSide below 1", () => {
    expect(() => decodePngAtMost(good, 0)).toThrow(RangeError);
    expect(() => decodePngAtMost(good, Number.NaN)).toThrow(RangeError);
  });
});

describe("decodePngAtMost: hostile input", () => {
  it("decodes a zlib bomb (a 6300x6300 PNG of one colour, ~128 KB) at maxSide 1600 quickly, to 1575x1575", async () => {
    const png = await sharp({ create: { width: 6300, height: 6300, channels: 4, background: { r: 10, g: 200, b: 30, alpha: 0.5 } } })
      .png({ compressionLevel: 9 })
      .toBuffer();
    expect(png.length).toBeLessThan(200_000);
    const t = performance.now();
    const img = decodePngAtMost(png, 1600)!;
    const ms = performance.now() - t;
    expect([img.width, img.height]).toEqual([1575, 1575]);
    const first = Array.from(img.data.subarray(0, 4));
    expect(first).toEqual([10, 200, 30, 128]);
    expect(img.data.every((v, i) => v === first[i % 4])).toBe(true);
    // ~1 s on a quiet machine (inflating 160 MB dominates); generous for a loaded CI box.
    expect(ms).toBeLessThan(8000);
  });

  it("survives 400 seeded random mutations of valid PNGs: each decodes or throws an Error, none hangs", async () => {
    const rng = seeded(20240611);
    const bases = [
      writePng(randomImage({ name: "", colourType: 6, depth: 8 }, 40, 30, 1)),
      writePng({ ...randomImage({ name: "", colourType: 3, depth: 4, trns: true }, 33, 17, 2), idatSize: 100 }),
      writePng(randomImage({ name: "", colourType: 0, depth: 16, trns: true }, 21, 19, 3)),
      writePng(randomImage({ name: "", colourType: 0, depth: 2 }, 50, 8, 4)),
      new Uint8Array(
        await sharp({ create: { width: 64, height: 64, channels: 3, background: "#abcdef", noise: { type: "gaussian", mean: 128, sigma: 30 } } })
          .png()
          .toBuffer(),
      ),
    ];
    const cases: FuzzCase[] = Array.from({ length: 400 }, () => ({
      bytes: mutate(bases[Math.floor(rng() * bases.length)]!, rng),
      maxSide: rng() < 0.5 ? 16 : 4096,
    }));
    const outcomes = await runFuzz(cases, 3000);
    const bad = outcomes.filter((o) => !["image", "null", "error"].includes(o.outcome));
    expect(bad).toEqual([]);
    expect(Math.max(...outcomes.map((o) => o.ms))).toBeLessThan(1000);
    // Both kinds of outcome occur, so the mutations reach past the header checks.
    const count = (kind: string) => outcomes.filter((o) => o.outcome === kind).length;
    expect(count("image")).toBeGreaterThan(20);
    expect(count("error")).toBeGreaterThan(100);
  });
});

describe("decodePngAtMost in workerd", () => {
  it("decodes, shrinks and refuses exactly as on Node", async () => {
    const decoder = new URL("../../src/images/png-decode.ts", import.meta.url).pathname;
    const worker = await startTestWorker({
      name: "png-decode-workerd-test",
      main: {
        source: `import { decodePngAtMost } from ${JSON.stringify(decoder)};
export default {
  async fetch(request) {
    const maxSide = Number(new URL(request.url).searchParams.get("max"));
    try {
      const img = decodePngAtMost(new Uint8Array(await request.arrayBuffer()), maxSide);
      return Response.json(img && { width: img.width, height: img.height, data: Array.from(img.data) });
    } catch (e) {
      return Response.json({ error: e instanceof Error ? e.message : "not an Error" });
    }
  },
};`,
      },
    });
    try {
      const pngs = [
        writePng(randomImage({ name: "", colourType: 6, depth: 16 }, 30, 20, 21)),
        writePng(randomImage({ name: "", colourType: 3, depth: 2, trns: true }, 30, 20, 22)),
        writePng({ ...randomImage({ name: "", colourType: 2, depth: 8 }, 30, 20, 23), height: 19 }), // corrupt
      ];
      for (const png of pngs) {
        for (const maxSide of [100, 8]) {
          const res = await worker.mf.dispatchFetch(`http://png.test/?max=${maxSide}`, { method: "POST", body: png });
          let expected: unknown;
          try {
            const img = decodePngAtMost(png, maxSide);
            expected = img && { width: img.width, height: img.height, data: Array.from(img.data) };
          } catch (e) {
            expected = { error: (e as Error).message };
          }
          expect(await res.json()).toEqual(expected);
        }
      }
    } finally {
      await worker.dispose();
    }
  }, 120_000);
});

/**
 * One to three random edits: byte flips anywhere or (twice as often) inside IDAT data, so inflate and the
 * filters see damage too; a random u32, truncation, deletion, duplication, inserted bytes, IHDR fields.
 */
function mutate(src: Uint8Array, rng: () => number): Uint8Array {
  let b = new Uint8Array(src);
  const at = () => 8 + Math.floor(rng() * (b.length - 8));
  const edits = 1 + Math.floor(rng() * 3);
  for (let e = 0; e < edits; e++) {
    const kind = Math.floor(rng() * 9);
    if (kind >= 7) {
      const idat = idatRanges(b);
      const [start, end] = idat[Math.floor(rng() * idat.length)] ?? [8, b.length];
      for (let i = 0; i < 1 + rng() * 3; i++) b[start + Math.floor(rng() * (end - start))]! ^= 1 << Math.floor(rng() * 8);
    } else if (kind === 0) for (let i = 0; i < 1 + rng() * 4; i++) b[at()]! ^= 1 << Math.floor(rng() * 8);
    else if (kind === 1) new DataView(b.buffer).setUint32(Math.min(at(), b.length - 4), rng() < 0.5 ? rng() * 2 ** 32 : Math.floor(rng() * 70000));
    else if (kind === 2) b = b.slice(0, at());
    else if (kind === 3) {
      const i = at();
      b = Buffer.concat([b.subarray(0, i), b.subarray(Math.min(b.length, i + 1 + Math.floor(rng() * 64)))]);
    } else if (kind === 4) {
      const i = at();
      const j = Math.min(b.length, i + 1 + Math.floor(rng() * 200));
      b = Buffer.concat([b.subarray(0, j), b.subarray(i, j), b.subarray(j)]);
    } else if (kind === 5) {
      const i = at();
      b = Buffer.concat([b.subarray(0, i), Uint8Array.from({ length: 1 + Math.floor(rng() * 16) }, () => Math.floor(rng() * 256)), b.subarray(i)]);
    } else if (b.length >= 29) {
      // IHDR fields: width, height, bit depth, colour type, interlace.
      const field = [16, 20, 24, 25, 28][Math.floor(rng() * 5)]!;
      if (field < 24) new DataView(b.buffer).setUint32(field, Math.floor(rng() * 100_000));
      else b[field] = Math.floor(rng() * 20);
    }
    if (b.length < 9) break;
  }
  return new Uint8Array(b);
}

/** Where the data of each IDAT chunk lies, as far as the chunk structure can be read. */
function idatRanges(b: Uint8Array): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  const view = new DataView(b.buffer, b.byteOffset, b.length);
  for (let pos = 8; pos + 12 <= b.length; ) {
    const length = view.getUint32(pos);
    if (pos + 12 + length > b.length) break;
    if (length > 0 && String.fromCharCode(...b.subarray(pos + 4, pos + 8)) === "IDAT") ranges.push([pos + 8, pos + 8 + length]);
    pos += 12 + length;
  }
  return ranges;
}

/** Runs the cases in a worker; rejects naming the case if one takes longer than `hangMs`. */
function runFuzz(cases: FuzzCase[], hangMs: number): Promise<FuzzOutcome[]> {
  return new Promise((resolve, reject) => {
    // Workers do not inherit vitest's TypeScript transform: the worker loads its module through tsx.
    const tsx = createRequire(import.meta.url).resolve("tsx/cjs/api");
    const entry = fileURLToPath(new URL("./png-decode.fuzz-worker.ts", import.meta.url));
    const boot = `require(${JSON.stringify(tsx)}).require(${JSON.stringify(entry)}, ${JSON.stringify(entry)});`;
    const worker = new Worker(boot, { eval: true, workerData: { cases } });
    const outcomes: FuzzOutcome[] = [];
    let timer: NodeJS.Timeout;
    const arm = (first = false) => {
      clearTimeout(timer);
      // The first case also waits for the worker to load TypeScript.
      timer = setTimeout(
        () => {
          void worker.terminate();
          reject(new Error(`case ${outcomes.length} hung (> ${hangMs} ms); its bytes: ${Buffer.from(cases[outcomes.length]!.bytes).toString("base64")}`));
        },
        first ? hangMs + 15_000 : hangMs,
      );
    };
    arm(true);
    worker.on("message", (o: FuzzOutcome) => {
      outcomes.push(o);
      if (outcomes.length === cases.length) {
        clearTimeout(timer);
        void worker.terminate();
        resolve(outcomes);
      } else arm();
    });
    worker.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

describe("which decoder a PNG goes to", () => {
  it("on the edge every non-interlaced PNG streams through ours, and photon never sees it; on Node a small one goes to photon", async () => {
    const png = await sharp({ create: { width: 300, height: 200, channels: 4, background: { r: 200, g: 40, b: 90, alpha: 0.5 } } })
      .png()
      .toBuffer();
    const photon = vi.spyOn(PhotonImage, "new_from_byteslice");
    try {
      const node = decodeImage(png);
      expect(photon).toHaveBeenCalledTimes(1);
      for (const edge of [decodeImage(png, EDGE_DECODE_LIMITS), decodeAtMost(png, 100, EDGE_DECODE_LIMITS), decodeAtLeast(png, 250, EDGE_DECODE_LIMITS)]) {
        expect(edge.width).toBeGreaterThan(0);
      }
      expect(photon).toHaveBeenCalledTimes(1);
      expect(Buffer.from(decodeImage(png, EDGE_DECODE_LIMITS).data).equals(Buffer.from(node.data))).toBe(true);
    } finally {
      photon.mockRestore();
    }
  });
});
