/**
 * Normalisation split over two threads (src/images/plane-pipe.ts): the head decodes a JPEG's planes in a
 * worker thread while the tail, on this thread, reads the second part of the entropy data where the file
 * allows (entropy-split.ts) and then resizes and encodes the rows already decoded. For every
 * kind of input the pair answers exactly what `normaliseToJpeg` answers on one thread, byte for byte; the
 * tail does the work for the JPEGs it can stream and stands aside for the rest (and when the head finds the
 * data corrupt part way); through the heavy-work pool and through POST /media the answer is the same; and
 * the limiter gives such a job a second thread only when one is free and nothing waits.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NodeHeavyWork } from "../../functions/node/heavy-pool";
import { LimitedHeavyWork, type HeavyRunner } from "../../src/heavy";
import { normaliseToJpeg, type NormalisedJpeg } from "../../src/images";
import { DEFAULT_DECODE_LIMITS } from "../../src/images/limits";
import { isJpegPart, joinSplit, normaliseHead, normaliseTail, type JpegPart } from "../../src/images/normalise";
import { PipeHead, PipeTail, pipeControl, type PlanePipe } from "../../src/images/plane-pipe";
import { resample, StreamedResample, type Samples } from "../../src/images/resize";
import { makePhotoJpeg, makePng, photoPixels } from "../helpers/images";
import { createSocialTestApp, type SocialTestApp } from "../helpers/social";
import { haveSystemTool } from "../helpers/system-tools";

/** The cases libjpeg's cjpeg writes (restart markers, separate scans, 4:2:2) are left out without it. */
const haveCjpeg = haveSystemTool("pipeline: the cases cjpeg writes (restart markers, separate scans, 4:2:2)", "cjpeg");

const tsx = createRequire(import.meta.url).resolve("tsx/cjs/api");
const headEntry = fileURLToPath(new URL("./pipeline-head.worker.ts", import.meta.url));

type HeadAnswer = { value?: NormalisedJpeg | JpegPart | null; error?: { name: string; message: string; code?: string } };

/**
 * Runs the head in a new worker thread and the tail here, on one pipe; both answers. `openRows`: the output's
 * MCU rows, opened before either starts, so that a head done before the tail began takes its share.
 */
async function split(bytes: Uint8Array, openRows?: number): Promise<{ head: HeadAnswer; tail: NormalisedJpeg | JpegPart | null }> {
  const control = pipeControl();
  const { port1, port2 } = new MessageChannel();
  if (openRows) new PipeTail({ control, port: port2 }, Date.now()).openRows(openRows);
  const worker = new Worker(`require(${JSON.stringify(tsx)}).require(${JSON.stringify(headEntry)}, ${JSON.stringify(headEntry)});`, { eval: true });
  try {
    const head = new Promise<HeadAnswer>((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    const pipe: PlanePipe = { control, port: port1 };
    // In shared memory, as the pool hands it over: the tail then also takes half of the entropy decoding.
    const shared = new Uint8Array(new SharedArrayBuffer(bytes.length));
    shared.set(bytes);
    worker.postMessage({ bytes: shared, pipe }, [port1 as unknown as import("node:worker_threads").MessagePort]);
    const tail = await normaliseTail({ control, port: port2 }, 60_000);
    return { head: await head, tail };
  } finally {
    await worker.terminate();
  }
}

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;

/** A PPM of photo-like pixels, encoded by libjpeg's cjpeg with `args` (sampling, restarts, scan scripts). */
function cjpeg(dir: string, raw: Buffer, width: number, height: number, args: string[]): Buffer {
  const ppm = join(dir, "in.ppm");
  writeFileSync(ppm, Buffer.concat([Buffer.from(`P6\n${width} ${height}\n255\n`), raw]));
  return execFileSync("cjpeg", [...args, ppm]);
}

interface Case {
  name: string;
  bytes: Buffer;
  /** Whether the tail resizes and encodes it (else the head does it all). */
  streamed: boolean;
  /** Whether the head, done decoding before the tail encoded a row, surely takes the lower rows to encode. */
  shared?: boolean;
}

const cases: Case[] = [];
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pipeline-"));
  const raw = await photoPixels(1600, 1200);
  const photo = () => sharp(raw, { raw: { width: 1600, height: 1200, channels: 3 } });
  writeFileSync(join(dir, "separate.scans"), "0;\n1;\n2;\n");
  // A second scan of all three components (another photo's, the same standard tables) before the end:
  // refused as corrupt by the decoder either way (the tail would have encoded the first scan's rows already).
  const standard = async () =>
    sharp(await photoPixels(1600, 1200), { raw: { width: 1600, height: 1200, channels: 3 } })
      .jpeg({ quality: 85, optimiseCoding: false })
      .toBuffer();
  const first = await standard();
  const second = await standard();
  const rescanned = Buffer.concat([first.subarray(0, first.length - 2), second.subarray(second.indexOf(Buffer.from([0xff, 0xda])))]);
  const corrupt = Buffer.from(await makePhotoJpeg(1600, 1200));
  const sos = corrupt.indexOf(Buffer.from([0xff, 0xda]));
  const middle = sos + Math.floor((corrupt.length - sos) / 2);
  // Stuffed 0xFF bytes about half way down: all one bits, which no Huffman table has as a code.
  for (let i = middle; i < middle + 2000; i += 2) corrupt.set([0xff, 0x00], i);
  cases.push(
    { name: "a 4:2:0 photo shrunk at 5/8 and resized", bytes: await makePhotoJpeg(2400, 1800), streamed: true },
    { name: "an odd size (chroma rounded up)", bytes: await makePhotoJpeg(1001, 777), streamed: true },
    { name: "a small photo enlarged to 320 wide", bytes: await makePhotoJpeg(200, 150), streamed: true },
    {
      name: "EXIF orientation 6 (the tail rotates after the last row)",
      bytes: await photo().withMetadata({ orientation: 6 }).jpeg().toBuffer(),
      streamed: true,
    },
    ...(haveCjpeg ? [{ name: "a restart marker every MCU row", bytes: cjpeg(dir, raw, 1600, 1200, ["-sample", "2x2", "-restart", "1"]), streamed: true }] : []),
    ...(haveCjpeg
      ? [
          {
            name: "Y, Cb and Cr in three separate scans (no row is final before the end)",
            bytes: cjpeg(dir, raw, 1600, 1200, ["-scans", join(dir, "separate.scans")]),
            streamed: true,
            shared: true,
          },
        ]
      : []),
    { name: "entropy data corrupt half way (the head stops the tail and gives photon's verdict)", bytes: corrupt, streamed: false },
    { name: "a second scan of every component (refused: photon's verdict on both paths)", bytes: rescanned, streamed: false },
    ...(haveCjpeg
      ? [{ name: "4:2:2 (its chroma block-averaged 1x2 first, a row pair at a time)", bytes: cjpeg(dir, raw, 1600, 1200, ["-sample", "2x1"]), streamed: true }]
      : []),
    { name: "4:4:4 shrunk (its chroma block-averaged 2x2 first)", bytes: await photo().jpeg({ chromaSubsampling: "4:4:4" }).toBuffer(), streamed: true },
    { name: "a 6000x400 panorama (Y block-averaged 3x3 ahead of the resize)", bytes: await makePhotoJpeg(6000, 400), streamed: true },
    { name: "greyscale (one component)", bytes: await photo().toColourspace("b-w").jpeg().toBuffer(), streamed: false },
    { name: "progressive", bytes: await photo().jpeg({ progressive: true }).toBuffer(), streamed: false },
    { name: "a PNG", bytes: await makePng(900, 700), streamed: false },
  );
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("normalisation on two threads answers what one thread answers", () => {
  it("for every kind of input, byte for byte; the tail does the work exactly for the JPEGs it can stream", async () => {
    for (const c of cases) {
      // The three separate scans make every row final only at the end: with the rows opened, the head takes its share.
      const { head, tail } = await split(c.bytes, c.shared ? 68 : undefined);
      const refusal = await normaliseToJpeg(c.bytes).then(
        () => undefined,
        (err: { code?: string }) => err.code,
      );
      if (refusal) {
        // Photon's verdict on the corrupt file, given by the head as on one thread.
        expect([tail, head.error?.code], c.name).toEqual([null, refusal]);
        continue;
      }
      const alone = await normaliseToJpeg(c.bytes);
      expect(head.error, c.name).toBeUndefined();
      if (c.streamed) {
        // The head answers null, or the rest of the rows when it took the lower ones to encode.
        expect(head.value === null || (isJpegPart(head.value ?? null) && (head.value as JpegPart).part === "rest"), c.name).toBe(true);
        expect(tail, c.name).not.toBeNull();
        expect(isJpegPart(tail), c.name).toBe(isJpegPart(head.value ?? null));
        if (c.shared) expect(isJpegPart(head.value ?? null), c.name).toBe(true);
      } else {
        expect(tail, c.name).toBeNull();
        expect(head.value, c.name).not.toBeNull();
      }
      const answer = (c.streamed ? joinSplit(tail, head.value ?? null) : (head.value as NormalisedJpeg))!;
      expect([answer.width, answer.height], c.name).toEqual([alone.width, alone.height]);
      expect(same(answer.bytes, alone.bytes), c.name).toBe(true);
    }
  }, 120_000);

  it("a refusal is the head's, as on one thread, and the tail stands aside", async () => {
    const narrow = await makePhotoJpeg(100, 1000); // enlarging it to 320 wide would pass 1800 high
    await expect(normaliseToJpeg(narrow)).rejects.toMatchObject({ code: "INVALID_IMAGE" });
    const { head, tail } = await split(narrow);
    expect(tail).toBeNull();
    expect(head.error).toMatchObject({ code: "INVALID_IMAGE" });
  }, 60_000);

  it("the tail gives up when no head answers in time, and a head that starts after does the work alone", async () => {
    const control = pipeControl();
    const { port1, port2 } = new MessageChannel();
    const started = Date.now();
    expect(await normaliseTail({ control, port: port2 }, 300)).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    const photo = cases[0]!.bytes;
    const worker = new Worker(`require(${JSON.stringify(tsx)}).require(${JSON.stringify(headEntry)}, ${JSON.stringify(headEntry)});`, { eval: true });
    try {
      const head = new Promise<HeadAnswer>((resolve) => worker.once("message", resolve));
      worker.postMessage({ bytes: photo, pipe: { control, port: port1 } }, [port1 as unknown as import("node:worker_threads").MessagePort]);
      const answer = await head;
      expect(answer.value).not.toBeNull();
      expect(same(answer.value!.bytes, (await normaliseToJpeg(photo)).bytes)).toBe(true);
    } finally {
      await worker.terminate();
    }
  }, 60_000);
});

describe("through the heavy-work pool and POST /media", () => {
  let h: SocialTestApp;
  beforeAll(async () => {
    h = await createSocialTestApp({ env: { HEAVY_THREADS: "2" } });
  });
  afterAll(() => h?.close());

  it("a pool of two threads answers what one thread answers, for a streamed JPEG, one done whole and a PNG (never split)", async () => {
    const heavy = NodeHeavyWork({ threads: 2, perUser: 2, queuePerUser: 4, queue: 8, idleSeconds: 5 });
    for (const c of [cases[0]!, cases.find((c) => c.name.startsWith("greyscale"))!, cases.find((c) => c.name === "a PNG")!]) {
      const answer = await heavy.run("u", "normaliseMedia", { bytes: new Uint8Array(c.bytes) });
      expect(same(answer.bytes, (await normaliseToJpeg(c.bytes)).bytes), c.name).toBe(true);
    }
    expect(heavy.load()).toEqual({ running: 0, waiting: 0 });
  }, 60_000);

  it("POST /media stores the same JPEG as one thread makes", async () => {
    const { apiKey } = await h.createUser();
    const photo = cases[0]!.bytes;
    const res = await h.app.request("/api/v1/social/media", {
      method: "POST",
      headers: h.json(apiKey),
      body: JSON.stringify({ base64: photo.toString("base64"), mimeType: "image/jpeg" }),
    });
    expect(res.status).toBe(201);
    const { data } = (await res.json()) as { data: { url: string; width: number; height: number } };
    const file = await h.app.request(new URL(data.url).pathname);
    expect(same(new Uint8Array(await file.arrayBuffer()), (await normaliseToJpeg(photo)).bytes)).toBe(true);
  }, 60_000);
});

describe("the limiter's second slot", () => {
  it("a pairing job takes a second slot only when one is free and none waits, gives it back early, and is still one job", async () => {
    const spares: Array<(() => void) | undefined> = [];
    const finish: Array<() => void> = [];
    const runner = ((_name: string, _input: unknown, _handOver: unknown, spare?: () => void) => {
      spares.push(spare);
      return new Promise((resolve) => finish.push(() => resolve("done")));
    }) as unknown as HeavyRunner;
    const heavy = LimitedHeavyWork({ slots: 2, perUser: 1, queuePerUser: 2, queue: 4, pairs: ["normaliseMedia"] }, runner);
    const tick = () => new Promise((r) => setTimeout(r, 5));
    const job = (user: string, name: "normaliseMedia" | "qrDecode" = "normaliseMedia") => heavy.run(user, name, { bytes: new Uint8Array() });

    const alice = job("alice");
    await tick();
    expect(spares.map(Boolean)).toEqual([true]);
    expect(heavy.load()).toEqual({ running: 1, waiting: 0 }); // one job, on two slots

    const bob = job("bob");
    const carol = job("carol", "qrDecode");
    await tick();
    expect(heavy.load()).toEqual({ running: 1, waiting: 2 });
    spares[0]!(); // Alice's job is done with its second thread: Bob's starts, without one of its own
    await tick();
    expect(spares.map(Boolean)).toEqual([true, false]);
    expect(heavy.load()).toEqual({ running: 2, waiting: 1 });
    finish.shift()!();
    await alice;
    await tick();
    expect(spares.map(Boolean)).toEqual([true, false, false]); // Carol's starts as Alice's ends
    for (const done of finish.splice(0)) done();
    await Promise.all([bob, carol]);
    expect(heavy.load()).toEqual({ running: 0, waiting: 0 });

    const lone = job("dave", "qrDecode"); // a task that cannot pair never takes one
    await tick();
    expect(spares.at(-1)).toBeUndefined();
    finish.shift()!();
    await lone;
  });

  it("a job that finds only a second slot taken waits for it, even with no queue, and the refusals stay as without pairs", async () => {
    const finish: Array<() => void> = [];
    const runner = (() => new Promise((resolve) => finish.push(() => resolve("done")))) as unknown as HeavyRunner;
    const heavy = LimitedHeavyWork({ slots: 2, perUser: 1, queuePerUser: 0, queue: 0, pairs: ["normaliseMedia"] }, runner);
    const tick = () => new Promise((r) => setTimeout(r, 5));
    const alice = heavy.run("alice", "normaliseMedia", { bytes: new Uint8Array() });
    await tick();
    const bob = heavy.run("bob", "qrDecode", { bytes: new Uint8Array() }); // without pairs it would run now
    await tick();
    expect(heavy.load()).toEqual({ running: 1, waiting: 1 });
    // Carol's would have been refused without pairs too (both slots busy, no queue).
    await expect(heavy.run("carol", "qrDecode", { bytes: new Uint8Array() })).rejects.toMatchObject({ code: "RATE_LIMITED" });
    finish.shift()!();
    await alice;
    await tick();
    expect(heavy.load()).toEqual({ running: 1, waiting: 0 });
    finish.shift()!();
    await bob;
    expect(heavy.load()).toEqual({ running: 0, waiting: 0 });
  });
});

describe("the output rows shared by the tail and the head", () => {
  it("the head's last rows and the tail's first make one thread's JPEG, at any split row, for every kind it streams", async () => {
    for (const c of cases.filter((c) => c.streamed && !c.name.startsWith("EXIF"))) {
      const alone = await normaliseToJpeg(c.bytes);
      const mcuRows = Math.ceil(alone.height / 16);
      // The head takes a share of four rows or more left (fewer are the tail's: tested below).
      for (const begun of [0, Math.floor(mcuRows / 2), mcuRows - 5].filter((k, i, all) => k >= 0 && k <= mcuRows - 4 && all.indexOf(k) === i)) {
        // One thread, in turn: the tail has begun `begun` rows when the head, done decoding (its upload
        // not shared, so no entropy split to wait on), takes its share; then the tail encodes the rest.
        const control = pipeControl();
        const { port1, port2 } = new MessageChannel();
        const opener = new PipeTail({ control, port: port2 }, Date.now());
        opener.openRows(mcuRows);
        for (let my = 0; my < begun; my++) opener.take(my);
        const head = await normaliseHead(new Uint8Array(c.bytes), DEFAULT_DECODE_LIMITS, { control, port: port1 });
        const tail = await normaliseTail({ control, port: port2 }, 10_000);
        const name = `${c.name}, ${begun} of ${mcuRows} rows begun`;
        expect(isJpegPart(head) && head.part === "rest" && head.row, name).toBe(mcuRows - Math.floor((mcuRows - begun) * 0.4));
        expect(isJpegPart(tail) && tail.part === "first" && tail.row, name).toBe((head as JpegPart).row);
        const joined = joinSplit(tail, head);
        expect(joined && [joined.width, joined.height], name).toEqual([alone.width, alone.height]);
        expect(same(joined!.bytes, alone.bytes), name).toBe(true);
      }
    }
  }, 120_000);

  const pipe = () => {
    const control = pipeControl();
    const { port1, port2 } = new MessageChannel();
    return {
      head: new PipeHead({ control, port: port1 }),
      tail: new PipeTail({ control, port: port2 }, Date.now() + 1000),
      close: () => (port1.close(), port2.close()),
    };
  };

  it("the tail takes rows from the top; the head takes the last 40 % of those not begun, of at least four", () => {
    const { head, tail, close } = pipe();
    expect(head.takeRowsFrom()).toBe(-1); // the tail has not opened them
    tail.openRows(68);
    for (let my = 0; my < 10; my++) expect(tail.take(my)).toBe(true);
    expect(head.takeRowsFrom()).toBe(45); // 58 left: the head takes 23
    for (let my = 10; my < 45; my++) expect(tail.take(my)).toBe(true);
    expect(tail.take(45)).toBe(false);
    close();
  });

  it("leaves the last few rows to the tail, and a tail that took every row ends whole", () => {
    const { head, tail, close } = pipe();
    tail.openRows(12);
    for (let my = 0; my < 9; my++) expect(tail.take(my)).toBe(true);
    expect(head.takeRowsFrom()).toBe(-1); // three left
    for (let my = 9; my < 12; my++) expect(tail.take(my)).toBe(true);
    expect(tail.take(12)).toBe(false);
    expect(head.takeRowsFrom()).toBe(-1);
    close();
  });

  it("joins only parts that meet, under 8 MB", () => {
    const part = (p: "first" | "rest", row: number, bytes = new Uint8Array([1, 2])): JpegPart => ({ part: p, bytes, row, width: 10, height: 40 });
    expect(Array.from(joinSplit(part("first", 2), part("rest", 2, new Uint8Array([3])))!.bytes)).toEqual([1, 2, 3]);
    expect(joinSplit(part("first", 2), part("rest", 1))).toBeNull();
    expect(joinSplit(part("first", 2), null)).toBeNull();
    expect(joinSplit(part("first", 2), part("first", 2))).toBeNull();
    expect(joinSplit(part("first", 2), part("rest", 2, new Uint8Array(8 * 1024 * 1024)))).toBeNull();
    const whole: NormalisedJpeg = { bytes: new Uint8Array([9]), width: 10, height: 40, mimeType: "image/jpeg" };
    expect(joinSplit(whole, null)).toBe(whole);
  });
});

describe("StreamedResample", () => {
  it("gives exactly resample's result however the rows arrive, block averaging included", () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const sizes: [number, number, number, number][] = [
      [1500, 1125, 1440, 1080],
      [750, 563, 720, 540],
      [200, 150, 320, 240],
      [101, 77, 100, 77],
      [64, 64, 64, 40],
      [90, 33, 60, 33],
      [17, 9, 17, 9],
      // Block averaging first: 2x2, 1x2, 3x3 with short last groups, 4x1, and beyond the 16 cap.
      [1500, 1125, 720, 540],
      [750, 1125, 720, 540],
      [1001, 777, 300, 200],
      [64, 64, 16, 60],
      [2000, 40, 100, 2],
    ];
    for (const [sw, sh, dw, dh] of sizes) {
      const stride = sw + 5;
      const data = Uint8Array.from({ length: stride * sh }, () => Math.floor(random() * 256));
      const want = resample({ width: sw, height: sh, stride, channels: 1, data }, dw, dh);
      // The rows not yet arrived hold other values, so reading one early would show.
      const arriving = Uint8Array.from({ length: stride * sh }, () => Math.floor(random() * 256));
      const stream = StreamedResample.of({ width: sw, height: sh, stride, channels: 1, data: arriving }, dw, dh);
      let rows = 0;
      let arrived = 0;
      while (rows < dh) {
        rows = Math.min(dh, rows + 1 + Math.floor(random() * 20));
        const available = Math.max(arrived, Math.min(sh, stream.need(rows) + Math.floor(random() * 3)));
        arriving.set(data.subarray(arrived * stride, available * stride), arrived * stride);
        arrived = available;
        stream.advance(available, rows);
      }
      const got = stream.out;
      const rowsOf = (s: Samples) =>
        Array.from({ length: s.height }, (_, y) => Buffer.from(s.data.subarray(y * s.stride, y * s.stride + s.width)).toString("hex"));
      expect(rowsOf(got), `${sw}x${sh} -> ${dw}x${dh}`).toEqual(rowsOf(want));
    }
    const stream = StreamedResample.of({ width: 100, height: 100, stride: 100, channels: 1, data: new Uint8Array(100 * 100) }, 90, 90);
    expect(() => stream.advance(10, 50)).toThrow(/need/);
  });

  it("from a later output row on, gives exactly resample's rows there", () => {
    let seed = 11;
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const sizes: [number, number, number, number][] = [
      [1500, 1125, 1440, 1080],
      [750, 563, 720, 540],
      [200, 150, 320, 240],
      [101, 77, 100, 77],
      [90, 33, 60, 33],
      [1500, 1125, 720, 540],
      [750, 1125, 720, 540],
      [1001, 777, 300, 200],
      [2000, 40, 100, 2],
    ];
    const rowsOf = (s: Samples, y0: number) =>
      Array.from({ length: s.height - y0 }, (_, y) => Buffer.from(s.data.subarray((y0 + y) * s.stride, (y0 + y) * s.stride + s.width)).toString("hex"));
    for (const [sw, sh, dw, dh] of sizes) {
      const stride = sw + 3;
      const data = Uint8Array.from({ length: stride * sh }, () => Math.floor(random() * 256));
      const want = resample({ width: sw, height: sh, stride, channels: 1, data }, dw, dh);
      for (const from of [1, Math.floor(dh / 2), dh - 1]) {
        const stream = StreamedResample.of({ width: sw, height: sh, stride, channels: 1, data }, dw, dh, from);
        stream.advance(sh, dh);
        expect(rowsOf(stream.out, from), `${sw}x${sh} -> ${dw}x${dh} from ${from}`).toEqual(rowsOf(want, from));
      }
    }
  });
});
