/**
 * Memory in workerd: every image path of the built Worker, given the largest image of each format the limits
 * accept, answers correctly while workerd's memory stays within what a 128 MB isolate allows, or refuses the
 * image from its header with 422 naming the limit.
 *
 * Paths: media by base64 and by URL (area C), QR decoding and a QR code with a logo (area A), a product photo,
 * a logo and a reference image (area B, on the local compositor, which decodes all three). Images (made at run
 * time, seeded, each carrying a QR code so the decode is checked too): a photo-like PNG, a progressive JPEG
 * and a (baseline) CMYK JPEG at the edge's pixel limit (12.5 MP, EDGE_DECODE_LIMITS.maxPixels) and under
 * 10 MB (as much texture as fits); a progressive CMYK JPEG, an interlaced PNG and a WebP at the edge's
 * whole-decode limit (2 MP; see src/images/limits.ts); and, to be refused from their headers, each of those
 * whose header says 40 MP (the most Node accepts), and a progressive CMYK JPEG, an interlaced PNG and a WebP
 * whose headers say a little over 2 MP.
 *
 * How memory is measured: Miniflare runs workerd as a child process, so /proc gives its resident memory
 * (VmRSS) and peak (VmHWM, reset through clear_refs before each request). The Worker is restarted for each
 * path; after a warm-up request of that path with a small image, garbage is collected through the V8
 * inspector and the baseline is read. Each large image is then sent twice in a row, all formats one after
 * the other. Each image's peak is taken against the RSS after garbage collection just before it, and that
 * peak is asserted. Its peak against the path's baseline is printed too: WebAssembly memory that a request
 * grows is never given back, so what one request leaves behind counts against the next. Resident memory is an upper
 * bound of the isolate's growth (it also holds garbage V8 has not yet collected and pages the allocator keeps
 * after they were freed), so the bound is the isolate's limit less its own baseline: the V8 heap after the
 * warm-up plus the initial memory of every WebAssembly module in the build.
 *
 * Beside it, the isolate as V8 counts it (printed, not asserted; test/helpers/v8-trace.ts): workerd runs with
 * V8's GC trace, which gives the heap's peak and the ArrayBuffer memory after each collection (WebAssembly
 * memories included at the size they were made with), and the inspector gives what the WebAssembly memories
 * grew by. Their sum is what the platform counts against 128 MB (the ArrayBuffer part is a floor: buffers
 * made and dropped between two collections do not show).
 *
 * No image here may grow a WebAssembly memory (asserted): every one of them is decoded by our decoders in
 * JS memory, which is given back, so an isolate that lives on after any of these requests starts the next
 * from the same baseline. (Photon's memory, grown by a whole decode, would never shrink.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { createFetchMock } from "miniflare";
import sharp from "sharp";
import { openNodeDb } from "../../db/node";
import type { DbHandle } from "../../db/client";
import { createApiKey, createUser } from "../../src/http/api-keys";
import { planSocialSize } from "../../src/images";
import { EDGE_DECODE_LIMITS } from "../../src/edge-services";
import { startLocalEdge, type LocalEdge } from "../../dev/edge-worker";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { patchJpegSize, pngHeaderOnly } from "../helpers/images";
import { connectInspector, type Inspector } from "../helpers/inspector";
import { largestImage, type LargeFormat } from "../helpers/largest-images";
import { childProcessNamed, memoryMeter, type MemoryMeter } from "../helpers/proc-memory";
import { v8Trace } from "../helpers/v8-trace";
import { freePort } from "../helpers/server-process";
import { productJpeg } from "../photo/fixtures";

const MiB = 1024 * 1024;
const ISOLATE_LIMIT_MIB = 128;
const MAX_BYTES = 10 * MiB;
const IMAGE_HOST = "https://cdn.shopfront-images.com";
const QR_TEXT = "https://example.com/largest-image";
/** 40 MP, about 4:3: the most Node accepts, refused on the edge. */
const FULL = { width: 7300, height: 5479 };
/** The largest 4:3 image at the edge's pixel limit. */
const LARGEST = largest4by3(EDGE_DECODE_LIMITS.maxPixels);
/** The largest 3:2 image at the edge's whole-decode limit. */
const WHOLE = { width: 1732, height: 1154 };
/** A 3:2 image a little over the edge's whole-decode limit. */
const OVER_WHOLE = { width: 1800, height: 1200 };
const REPEATS = 2;

interface Fixture {
  name: string;
  format: LargeFormat;
  mime: string;
  bytes: Buffer;
  width: number;
  height: number;
}

let edge: LocalEdge;
let scratch: ScratchDatabase;
let handle: DbHandle;
let key: string;
let inspector: Inspector;
let inspectorPort: number;
let meter: MemoryMeter;
let wasmInitialMiB = 0;
const fixtures: Fixture[] = [];
/** Images to be refused, each with the limit its 422 names. */
const refused: Array<Fixture & { limit: number }> = [];
let small: string;
const report: string[] = [];
const v8Report: string[] = [];
/** workerd runs with V8's GC trace, for the isolate's own figures beside RSS. */
const trace = v8Trace();

beforeAll(async () => {
  expect(WHOLE.width * WHOLE.height).toBeLessThanOrEqual(EDGE_DECODE_LIMITS.wholeDecodePixels);
  expect(OVER_WHOLE.width * OVER_WHOLE.height).toBeGreaterThan(EDGE_DECODE_LIMITS.wholeDecodePixels);
  expect(LARGEST.width * LARGEST.height).toBeLessThanOrEqual(EDGE_DECODE_LIMITS.maxPixels);
  expect(LARGEST.width * LARGEST.height).toBeGreaterThan(EDGE_DECODE_LIMITS.maxPixels * 0.999);
  scratch = await createScratchDatabase();
  handle = await openNodeDb({ url: scratch.url, poolSize: 2 });
  const { userId } = await createUser(handle.db, `edge-memory-${crypto.randomUUID()}@example.test`);
  key = (await createApiKey(handle.db, userId)).key;
  small = `data:image/jpeg;base64,${(await productJpeg(600, 800)).toString("base64")}`;

  const qr = { text: QR_TEXT, side: 1400 };
  const make = async (name: string, format: LargeFormat, size: { width: number; height: number }) => {
    const img = await largestImage(format, { ...size, maxBytes: MAX_BYTES, qr: { ...qr, side: Math.min(qr.side, Math.round(size.height * 0.9)) } });
    return { name, format, mime: img.mimeType, bytes: img.bytes, ...size };
  };
  const mp = (size: { width: number; height: number }) => `${((size.width * size.height) / 1e6).toFixed(1)} MP`;
  fixtures.push(
    await make(`PNG ${mp(LARGEST)}`, "png", LARGEST),
    await make(`progressive JPEG ${mp(LARGEST)}`, "jpeg-progressive", LARGEST),
    await make(`CMYK JPEG ${mp(LARGEST)}`, "jpeg-cmyk", LARGEST),
    await make("progressive CMYK JPEG 2 MP", "jpeg-cmyk-progressive", WHOLE),
    await make("interlaced PNG 2 MP", "png-interlaced", WHOLE),
    await make("WebP 2 MP", "webp", WHOLE),
  );
  // Headers that say more than the data holds: a refusal must come from the header, not a decode.
  const [png, progressive, cmyk, progressiveCmyk, interlaced, webp] = fixtures as [Fixture, Fixture, Fixture, Fixture, Fixture, Fixture];
  const { maxPixels, wholeDecodePixels } = EDGE_DECODE_LIMITS;
  refused.push(
    { ...png, name: "PNG 40 MP (header)", bytes: pngHeaderOnly(FULL.width, FULL.height), ...FULL, limit: maxPixels },
    { ...progressive, name: "progressive JPEG 40 MP (header)", bytes: patchJpegSize(progressive.bytes, FULL.width, FULL.height), ...FULL, limit: maxPixels },
    { ...cmyk, name: "CMYK JPEG 40 MP (header)", bytes: patchJpegSize(cmyk.bytes, FULL.width, FULL.height), ...FULL, limit: maxPixels },
    {
      ...progressiveCmyk,
      name: "progressive CMYK JPEG 40 MP (header)",
      bytes: patchJpegSize(progressiveCmyk.bytes, FULL.width, FULL.height),
      ...FULL,
      limit: maxPixels,
    },
    { ...webp, name: "WebP 40 MP (header)", bytes: patchWebpSize(webp.bytes, FULL.width, FULL.height), ...FULL, limit: maxPixels },
    {
      ...progressiveCmyk,
      name: `progressive CMYK JPEG ${mp(OVER_WHOLE)} (header)`,
      bytes: patchJpegSize(progressiveCmyk.bytes, OVER_WHOLE.width, OVER_WHOLE.height),
      ...OVER_WHOLE,
      limit: wholeDecodePixels,
    },
    {
      ...interlaced,
      name: `interlaced PNG ${mp(OVER_WHOLE)} (header)`,
      bytes: patchPngSize(interlaced.bytes, OVER_WHOLE.width, OVER_WHOLE.height),
      ...OVER_WHOLE,
      limit: wholeDecodePixels,
    },
    {
      ...webp,
      name: `WebP ${mp(OVER_WHOLE)} (header)`,
      bytes: patchWebpSize(webp.bytes, OVER_WHOLE.width, OVER_WHOLE.height),
      ...OVER_WHOLE,
      limit: wholeDecodePixels,
    },
  );

  const fetchMock = createFetchMock();
  fetchMock.disableNetConnect();
  fetchMock.enableNetConnect(/^127\.0\.0\.1(:\d+)?$/);
  for (const [i, f] of [...fixtures, ...refused].entries()) {
    fetchMock
      .get(IMAGE_HOST)
      .intercept({ path: `/${i}` })
      .reply(200, f.bytes, { headers: { "content-type": f.mime } })
      .persist();
  }
  const port = await freePort();
  inspectorPort = await freePort();
  edge = await startLocalEdge({
    databaseUrl: scratch.url,
    port,
    inspectorPort,
    fetchMock,
    stdio: trace.stdio,
    vars: {
      LOG_LEVEL: "warn",
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      RATE_LIMIT_PHOTO: "1000",
      PHOTO_SIGNUP_CREDITS: "1000000",
      RATE_LIMIT_QR: "1000",
      RATE_LIMIT_SOCIAL_WRITE: "1000",
    },
  });
  meter = memoryMeter(childProcessNamed("workerd"));
  for (const file of (await readdir(edge.outDir)).filter((f) => f.endsWith(".wasm"))) {
    wasmInitialMiB += initialMemoryPages(await readFile(join(edge.outDir, file))) / 16;
  }
  inspector = await connectInspector(inspectorPort, wake);
}, 300_000);

afterAll(async () => {
  console.log(`edge memory (workerd RSS above the baseline after a warm-up, MiB; ${REPEATS} requests in a row per image):\n${report.join("\n")}`);
  console.log(
    "the isolate as V8 counts it during the same requests, MiB (heap reserved at its peak + ArrayBuffer memory " +
      "after a collection, a floor, holding each WebAssembly memory at its first size + what the WebAssembly memories grew by since the warm-up; " +
      "the platform's limit is 128):\n" +
      v8Report.join("\n"),
  );
  const steps: Array<() => unknown> = [() => inspector?.close(), () => edge?.dispose(), () => handle?.close(), () => scratch?.drop()];
  for (const step of steps)
    await Promise.resolve()
      .then(() => step())
      .catch(() => {});
});

/** A cheap request, so workerd runs the inspector's garbage collection (it waits for a task). */
const wake = () => fetch(`${edge.url}/`).then((r) => r.arrayBuffer());

/** Bytes an image occupies in a request: as a data URI in JSON, or by URL through the fetch mock. */
const dataUri = (f: Fixture) => `data:${f.mime};base64,${f.bytes.toString("base64")}`;
const urlOf = (f: Fixture) => `${IMAGE_HOST}/${[...fixtures, ...refused].indexOf(f)}`;

const post = async (path: string, body: unknown) => {
  const res = await fetch(`${edge.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
};

const pngSize = async (uri: string) => {
  const meta = await sharp(Buffer.from(uri.replace(/^data:image\/png;base64,/, ""), "base64")).metadata();
  return [meta.format, meta.width, meta.height];
};

interface ImagePath {
  name: string;
  send(image: string | Fixture): Promise<{ status: number; json: any }>;
  /** Checks a success answer for `f`. */
  check(json: any, f: Fixture): Promise<void>;
}

const photo = (extra: (image: string) => Record<string, unknown>) => (image: string | Fixture) =>
  post("/api/image/product-photography", {
    productImages: [{ dataUrl: small }],
    promptId: "studio-white-sweep",
    ...extra(typeof image === "string" ? image : dataUri(image)),
  });
const checkPhoto = async (json: any) => {
  expect([json.data.width, json.data.height]).toEqual([2048, 2048]);
  expect(await pngSize(json.data.photoDataUri)).toEqual(["png", 2048, 2048]);
};
const checkMedia = async (json: any, f: Fixture) => {
  const { width, height } = planSocialSize(f.width, f.height);
  expect(json.data).toMatchObject({ mimeType: "image/jpeg", width, height });
};

const PATHS: ImagePath[] = [
  {
    name: "media (base64)",
    send: (image) => post("/api/v1/social/media", { base64: typeof image === "string" ? image : dataUri(image) }),
    check: checkMedia,
  },
  {
    name: "media (url)",
    send: (image) => post("/api/v1/social/media", typeof image === "string" ? { base64: image } : { url: urlOf(image) }),
    check: checkMedia,
  },
  {
    name: "QR decode",
    send: (image) => post("/api/qr-code/decode", { base64: typeof image === "string" ? image : dataUri(image) }),
    check: async (json) => expect(json.data.decodedText).toBe(QR_TEXT),
  },
  {
    name: "QR logo",
    send: (image) =>
      post("/api/qr-code/generate", {
        type: "text",
        value: "edge memory",
        size: 2000,
        logoSizeRatio: 0.4,
        logoUrl: typeof image === "string" ? image : dataUri(image),
      }),
    check: async (json) => expect(await pngSize(json.data.qrCodeDataUrl)).toEqual(["png", 2000, 2000]),
  },
  {
    name: "product image",
    send: (image) =>
      post("/api/image/product-photography", {
        productImages: [{ dataUrl: typeof image === "string" ? image : dataUri(image) }],
        promptId: "studio-white-sweep",
      }),
    check: checkPhoto,
  },
  { name: "photo logo", send: photo((image) => ({ logoImage: image, logoSize: 0.8 })), check: checkPhoto },
  { name: "reference image", send: photo((image) => ({ referenceImage: image })), check: checkPhoto },
];

describe("every image path in workerd, with the largest image of each format", () => {
  for (const path of PATHS) {
    it(`${path.name}: answers each, within the isolate's memory, and refuses images above the edge's limits`, async () => {
      // A fresh isolate, warmed up by the same path with a small image, then garbage collected.
      await edge.setBindings(edge.bindings);
      meter = memoryMeter(childProcessNamed("workerd"));
      inspector.close();
      inspector = await connectInspector(inspectorPort, wake);
      const warm = await path.send(small);
      // The small photo holds no QR code: reading it is a 422 after the whole decode.
      expect(warm.status === 422 ? warm.json.error.code : warm.status, JSON.stringify(warm.json)).toSatisfy((v) => v === "QR_NOT_FOUND" || (v as number) < 300);
      await inspector.collectGarbage();
      const heap = await inspector.heapUsage();
      const baseline = meter.read().rssMiB;
      const wasmBaselineMiB = await inspector.wasmMemoryMiB();
      const isolateBaselineMiB = heap.totalMiB + wasmInitialMiB;
      const bound = ISOLATE_LIMIT_MIB - isolateBaselineMiB;

      const row: string[] = [];
      const v8Row: string[] = [];
      const wasmGrowth: string[] = [];
      let worst = 0;
      for (const f of fixtures) {
        // Each image against the memory left by the ones before it (garbage collected first): what WebAssembly
        // memory an earlier request grew stays in the baseline, so `cumulative` is also reported.
        await inspector.collectGarbage();
        const before = meter.read().rssMiB;
        let peak = 0;
        let cumulative = 0;
        const mark = trace.mark();
        for (let i = 0; i < REPEATS; i++) {
          meter.reset();
          const res = await path.send(f);
          // A failure quotes the Worker's own log of the request (its stdout, kept by the trace).
          const log = res.status >= 500 ? trace.linesWith(res.json?.error?.requestId ?? "-").join("\n") : "";
          expect(res.status, `${f.name}: ${JSON.stringify(res.json).slice(0, 300)}\n${log}`).toBeLessThan(300);
          await path.check(res.json, f);
          peak = Math.max(peak, meter.read().peakMiB - before);
          cumulative = Math.max(cumulative, meter.read().peakMiB - baseline);
        }
        worst = Math.max(worst, peak);
        row.push(`${f.name} +${peak.toFixed(0)} (+${cumulative.toFixed(0)} over the path's baseline)`);
        // A last collection prints the heap as the second request left it.
        await inspector.collectGarbage();
        const { heapMiB, externalMiB } = trace.since(mark);
        // V8's external figure already holds each WebAssembly memory at the size it had when it was made, so
        // only what the memories grew by since the warm-up is added.
        const wasmGrowthMiB = Math.max(0, (await inspector.wasmMemoryMiB()) - wasmBaselineMiB);
        v8Row.push(
          `${f.name} ${(heapMiB + externalMiB + wasmGrowthMiB).toFixed(0)} (${heapMiB.toFixed(0)} + ${externalMiB.toFixed(0)} + ${wasmGrowthMiB.toFixed(0)})`,
        );
        wasmGrowth.push(`${f.name} ${wasmGrowthMiB.toFixed(2)} MiB`);
      }
      for (const f of refused) {
        const res = await path.send(f);
        expect(res.status, f.name).toBe(422);
        expect(res.json.error.code).toBe("INVALID_IMAGE");
        expect(res.json.error.message).toContain(`${f.width}x${f.height}`);
        expect(res.json.error.message).toContain(`up to ${f.limit / 1e6} million pixels`);
      }
      report.push(
        `  ${path.name.padEnd(16)} ${row.join(", ")}; bound ${bound.toFixed(0)} (isolate baseline: heap ${heap.totalMiB.toFixed(0)} + wasm ${wasmInitialMiB.toFixed(0)})`,
      );
      v8Report.push(`  ${path.name.padEnd(16)} ${v8Row.join(", ")}`);
      expect(worst, row.join(", ")).toBeLessThan(bound);
      expect(wasmGrowth, "WebAssembly memory grown, after each image").toEqual(fixtures.map((f) => `${f.name} 0.00 MiB`));
    }, 120_000);
  }
});

/** The largest width x height of about 4:3 with at most `pixels` pixels. */
function largest4by3(pixels: number): { width: number; height: number } {
  const width = Math.floor(Math.sqrt((pixels * 4) / 3));
  return { width, height: Math.floor(pixels / width) };
}

/** The initial pages (64 KiB each) of a WebAssembly module's own memory, from its memory section. */
function initialMemoryPages(wasm: Uint8Array): number {
  let p = 8;
  const leb = () => {
    let value = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = wasm[p++]!;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return value;
  };
  while (p < wasm.length) {
    const id = wasm[p++]!;
    const size = leb();
    const end = p + size;
    if (id === 5 && leb() > 0) {
      p++; // limits flags of the first memory
      return leb();
    }
    p = end;
  }
  return 0;
}

/** Rewrites a PNG's IHDR size (its CRC is not checked before the refusal): the header then claims another size. */
function patchPngSize(png: Buffer, width: number, height: number): Buffer {
  const out = Buffer.from(png);
  if (out.toString("latin1", 12, 16) !== "IHDR") throw new Error("fixture is not a PNG");
  out.writeUInt32BE(width, 16);
  out.writeUInt32BE(height, 20);
  return out;
}

/** Rewrites the frame size of a simple lossy WebP ("VP8 " chunk): the header then claims another size. */
function patchWebpSize(webp: Buffer, width: number, height: number): Buffer {
  const out = Buffer.from(webp);
  if (out.toString("latin1", 12, 16) !== "VP8 ") throw new Error("fixture is not a simple lossy WebP");
  out.writeUInt16LE(width & 0x3fff, 26);
  out.writeUInt16LE(height & 0x3fff, 28);
  return out;
}
