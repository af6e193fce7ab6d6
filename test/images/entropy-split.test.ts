/**
 * One baseline scan's entropy decoding split over two threads (src/images/entropy-split.ts): the tail reads
 * the data from a byte part way through as if a block began there, the head reads from the start and takes
 * the tail's blocks from the first block boundary the two share. Here both sides run on this thread, the
 * tail first (inside the sink's `planes`, as a tail that has finished by the time the head gets there), so
 * each answer is deterministic: the planes are one thread's, byte for byte, for every kind of baseline file
 * and decode size, the tail's blocks are really taken, and where the tail cannot help (it never started,
 * the data after the split is corrupt or cut short, the file has restart markers) the head reads on alone
 * and answers what one thread answers, errors included, also for forty seeded random damages of the data.
 * The two threads together: pipeline.test.ts.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeAlone as alone, decodeWithSplit as withSplit } from "../helpers/entropy-split";
import { photoPixels } from "../helpers/images";
import { haveSystemTool } from "../helpers/system-tools";

/** The files libjpeg's cjpeg writes (4:2:2, 4:4:0, restart markers) are left out without it. */
const haveCjpeg = haveSystemTool("entropy-split: the cases cjpeg writes (4:2:2, 4:4:0, restart markers)", "cjpeg");

/** The file with `run` bytes of stuffed 0xFF (all one bits: no code of any table) at `at` of its entropy data. */
function corruptAt(jpeg: Buffer, at: number, run = 600): Buffer {
  const bytes = Buffer.from(jpeg);
  const sos = bytes.indexOf(Buffer.from([0xff, 0xda]));
  const p = sos + Math.floor((bytes.length - sos) * at);
  for (let i = p; i < p + run; i += 2) bytes.set([0xff, 0x00], i);
  return bytes;
}

/** The file with an RST0 marker written over its entropy data at `at` (no restart interval is defined). */
function withMarkerAt(jpeg: Buffer, at: number): Buffer {
  const bytes = Buffer.from(jpeg);
  const sos = bytes.indexOf(Buffer.from([0xff, 0xda]));
  let p = sos + Math.floor((bytes.length - sos) * at);
  while (bytes[p - 1] === 0xff || bytes[p] === 0xff || bytes[p + 1] === 0xff) p++;
  bytes.set([0xff, 0xd0], p);
  return bytes;
}

let dir: string;
const files: { name: string; bytes: Buffer }[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "entropy-split-"));
  const raw = await photoPixels(1600, 1200);
  const photo = (width = 1600, height = 1200, pixels = raw) => sharp(pixels, { raw: { width, height, channels: 3 } });
  const ppm = join(dir, "in.ppm");
  writeFileSync(ppm, Buffer.concat([Buffer.from("P6\n1600 1200\n255\n"), raw]));
  const cjpeg = (args: string[]) => execFileSync("cjpeg", [...args, ppm]);
  const odd = await photoPixels(1999, 1333);
  files.push(
    { name: "4:2:0, optimised Huffman tables (sharp's default)", bytes: await photo().jpeg({ quality: 90 }).toBuffer() },
    { name: "4:2:0, the standard tables", bytes: await photo().jpeg({ quality: 90, optimiseCoding: false }).toBuffer() },
    { name: "4:4:4", bytes: await photo().jpeg({ quality: 85, chromaSubsampling: "4:4:4" }).toBuffer() },
    ...(haveCjpeg
      ? [
          { name: "4:2:2 by libjpeg", bytes: cjpeg(["-quality", "92", "-sample", "2x1"]) },
          { name: "4:4:0 by libjpeg", bytes: cjpeg(["-quality", "92", "-sample", "1x2"]) },
        ]
      : []),
    { name: "an odd size, quality 97", bytes: await photo(1999, 1333, odd).jpeg({ quality: 97 }).toBuffer() },
  );
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a scan's entropy decoding split between two threads", () => {
  it("gives one thread's planes byte for byte, with the tail's blocks taken, for every kind of file and scale", () => {
    for (const { name, bytes } of files) {
      // 1/2, 3/8, 1/4 and 1/8 of 1600 (or 1999) wide.
      for (const min of [700, 520, 330, 150]) {
        const one = alone(bytes, min);
        const two = withSplit(bytes, min);
        const label = `${name} at ${min}`;
        expect(one.error, label).toBeNull();
        expect(two.offered, label).toBe(true);
        expect(two.taken, label).toBeGreaterThan(0);
        expect(two.error, label).toBeNull();
        expect(two.planes, label).toEqual(one.planes);
      }
    }
  }, 120_000);

  it("is not offered at more than half size or for small files", async () => {
    const big = files[0]!.bytes;
    expect(withSplit(big, 1600).offered).toBe(false); // full size: every coefficient would be copied
    const small = await sharp(await photoPixels(400, 300), { raw: { width: 400, height: 300, channels: 3 } })
      .jpeg()
      .toBuffer();
    expect(withSplit(small, 100).offered).toBe(false);
  });

  it.skipIf(!haveCjpeg)("is not offered with restart markers", () => {
    const ppm = join(dir, "in.ppm");
    const restarts = execFileSync("cjpeg", ["-quality", "92", "-restart", "1", ppm]);
    const two = withSplit(restarts, 330);
    expect(two.offered).toBe(false);
    expect(two.planes).toEqual(alone(restarts, 330).planes);
  });

  it("reads on alone, with one thread's planes, when the tail never started or stalled, and stops it", () => {
    for (const { name, bytes } of files.slice(0, 2)) {
      for (const tail of ["never", "stalled"] as const) {
        const two = withSplit(bytes, 520, tail);
        expect(two.offered, `${name}, ${tail}`).toBe(true);
        expect(two.taken, `${name}, ${tail}`).toBe(-1);
        expect(two.planes, `${name}, ${tail}`).toEqual(alone(bytes, 520).planes);
        // Cancelled: a tail that starts only now does nothing.
        expect(two.memory!.start(), `${name}, ${tail}`).toBe(false);
      }
    }
  });

  it("stops the tail when the head fails before reading a block (a quantisation table missing)", () => {
    const bytes = Buffer.from(files[0]!.bytes);
    const sof = bytes.indexOf(Buffer.from([0xff, 0xc0]));
    // The chroma components' table numbers (the third byte of each component's entry) set to 3, never defined.
    bytes[sof + 10 + 3 + 2] = 3;
    bytes[sof + 10 + 6 + 2] = 3;
    const one = alone(bytes, 520);
    const two = withSplit(bytes, 520, "never");
    expect(one.error).toMatch(/table/);
    expect([two.offered, two.error]).toEqual([true, one.error]);
    expect(two.memory!.start()).toBe(false);
  });

  it("splits the scan's data, not what follows the end of the image (a motion photo's video, padding)", () => {
    const jpeg = files[0]!.bytes;
    const zeros = Buffer.concat([jpeg, Buffer.alloc(jpeg.length)]);
    // Bytes of every value, markers and an EOI among them, as a video's would be.
    const other = Buffer.concat([jpeg, Buffer.from(Array.from({ length: jpeg.length }, (_, i) => (i * 7919 + 13) % 256))]);
    const two = withSplit(zeros, 520);
    expect(two.taken).toBeGreaterThan(0);
    expect(two.planes).toEqual(alone(jpeg, 520).planes);
    expect(withSplit(other, 520).planes).toEqual(alone(jpeg, 520).planes);
  });

  it("fails as one thread fails on data corrupt after the split, before it, or cut short", () => {
    const jpeg = files[0]!.bytes;
    const sos = jpeg.indexOf(Buffer.from([0xff, 0xda]));
    const cases = [
      { name: "corrupt in the tail's part", bytes: corruptAt(jpeg, 0.85) },
      // Few bad codes, after which the tail falls into step again and reads on to the end.
      { name: "a few bytes corrupt in the tail's part", bytes: corruptAt(jpeg, 0.85, 8) },
      { name: "corrupt where the tail starts", bytes: corruptAt(jpeg, 0.6, 200) },
      { name: "corrupt in the head's part", bytes: corruptAt(jpeg, 0.3) },
      { name: "cut short in the tail's part", bytes: jpeg.subarray(0, sos + Math.floor((jpeg.length - sos) * 0.8)) },
      { name: "a marker in the head's part (the data ends there)", bytes: withMarkerAt(jpeg, 0.3) },
    ];
    for (const c of cases) {
      const one = alone(c.bytes, 520);
      const two = withSplit(c.bytes, 520);
      expect(two.offered, c.name).toBe(true);
      expect(two.taken, c.name).toBe(-1);
      expect([two.error, two.planes], c.name).toEqual([one.error, one.planes]);
    }
    // The corrupt ones are refused by both; the cut one decodes as far as it goes, as libjpeg would.
    expect(cases.slice(0, 4).map((c) => alone(c.bytes, 520).error)).not.toContain(null);
  });

  it("answers what one thread answers for randomly damaged entropy data (seeded)", () => {
    let seed = 20261129;
    const random = () => {
      // mulberry32: a fixed sequence, so a failure names its case.
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const jpeg = files[1]!.bytes;
    const sos = jpeg.indexOf(Buffer.from([0xff, 0xda])) + 20;
    const at = () => sos + Math.floor(random() * (jpeg.length - sos - 40));
    const damages: [string, (b: Buffer) => Buffer][] = [
      ["a byte changed", (b) => ((b[at()] = Math.floor(random() * 256)), b)],
      [
        "eight bytes of noise",
        (b) => (
          b.set(
            Array.from({ length: 8 }, () => Math.floor(random() * 256)),
            at(),
          ),
          b
        ),
      ],
      ["a stuffed 0xFF00 pair", (b) => (b.set([0xff, 0x00], at()), b)],
      ["a marker", (b) => (b.set([0xff, 0xd0 + Math.floor(random() * 8)], at()), b)],
      ["cut short", (b) => b.subarray(0, at())],
    ];
    let taken = 0;
    for (let i = 0; i < 40; i++) {
      const [kind, damage] = damages[i % damages.length]!;
      const bytes = damage(Buffer.from(jpeg));
      const one = alone(bytes, 330);
      const two = withSplit(bytes, 330);
      if (two.taken >= 0) taken++;
      expect([two.error, two.planes], `case ${i}: ${kind}`).toEqual([one.error, one.planes]);
    }
    // Damage in the head's part leaves the tail's blocks good to take.
    expect(taken).toBeGreaterThan(5);
  });
});
