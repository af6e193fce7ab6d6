/**
 * Images decoded whole on Node (WebP, interlaced PNG, progressive CMYK JPEG, JPEGs only photon reads): held to
 * NODE_DECODE_LIMITS' whole-decode limit (8 MP) where a JPEG or non-interlaced PNG streams up to 40 MP. A
 * lossless WebP of 8000x5000 is a file of a few KB that would hold hundreds of MB decoded; it is refused
 * from its header at every place an image is accepted (QR logo and QR reading, area B's product, logo and
 * reference images, area C's media upload) with a 422 that names the limit and the image's size and says
 * what to send instead. WebPs within the limit (a 1000x800 logo, a 3000x2000 product photo, 4000x2000 at
 * the limit) and 40 MP JPEGs and PNGs still work. Against the real server (`functions/node.ts`), the
 * refusal costs the server no more memory than the streamed path costs for a 40 MP PNG, and so does a
 * corrupt 40 MP PNG, which is refused without being decoded again whole.
 */
import { deflateSync } from "node:zlib";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EDGE_DECODE_LIMITS } from "../../src/edge-services";
import { NODE_DECODE_LIMITS } from "../../src/images/limits";
import { createTestApp, type TestApp } from "../helpers/harness";
import { patchJpegSize, pngChunk } from "../helpers/images";
import { imageEntryPoints } from "../helpers/images";
import { peakGrowthOf } from "../helpers/proc-memory";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";

/** A lossless WebP of one colour: a few KB even at 40 MP. */
const solidWebp = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: "#fff" } })
    .webp({ lossless: true })
    .toBuffer();

/** A PNG of one colour (a few hundred KB at 40 MP). */
const solidPng = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 30, b: 60 } } })
    .png({ compressionLevel: 9 })
    .toBuffer();

/**
 * A 40 MP-style PNG whose last row has a filter type that does not exist, checksums right: our streaming
 * decoder reads every row before it finds the damage.
 */
function pngCorruptAtTheEnd(width: number, height: number): Buffer {
  const row = 1 + width * 3;
  const raw = Buffer.alloc(row * height, 0xff);
  for (let y = 0; y < height; y++) raw[y * row] = 0;
  raw[(height - 1) * row] = 7;
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, pngChunk("IHDR", ihdr), pngChunk("IDAT", deflateSync(raw, { level: 9 })), pngChunk("IEND", new Uint8Array())]);
}

const dataUri = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString("base64")}`;
const webpUri = (webp: Buffer) => dataUri("image/webp", webp);

/** The start of an answer's body, for an assertion's message (a success carries a whole image). */
const start = async (res: Response) => (await res.clone().text()).slice(0, 300);

/** The refusal's words: what the image is, the limit, and what to send instead. */
const REFUSAL =
  /WebP of 8000x5000 \(40 million pixels\); WebP images are accepted up to 8 million pixels, since they are decoded whole\. Send it as a JPEG or PNG \(which may have up to 40 million pixels\), or make it smaller\./;

let huge: Buffer;

beforeAll(async () => {
  huge = await solidWebp(8000, 5000);
  expect(huge.subarray(12, 16).toString("latin1"), "a lossless (VP8L) frame").toBe("VP8L");
  expect(huge.length).toBeLessThan(10_000);
}, 60_000);

describe("images decoded whole through each entry point (in process)", () => {
  let h: TestApp;
  let apiKey: string;
  let product: string;

  beforeAll(async () => {
    h = await createTestApp({ env: { RATE_LIMIT_QR: "1000", RATE_LIMIT_PHOTO: "1000", RATE_LIMIT_SOCIAL_WRITE: "1000" } });
    apiKey = (await h.createUser()).apiKey;
    product = dataUri(
      "image/jpeg",
      await sharp({ create: { width: 600, height: 800, channels: 3, background: "#1f8a8a" } })
        .jpeg()
        .toBuffer(),
    );
  }, 60_000);
  afterAll(() => h?.close());

  const post = (path: string, body: unknown) => h.app.request(path, { method: "POST", headers: h.json(apiKey), body: JSON.stringify(body) });
  const photo = (extra: Record<string, unknown>) => ({ productImages: [{ dataUrl: product }], scenePrompt: "on a wooden table", ...extra });
  const refusal = async (res: Response) => {
    const json = (await res.json()) as { error: { code: string; message: string } };
    expect(res.status, JSON.stringify(json).slice(0, 300)).toBe(422);
    expect(json.error.code).toBe("INVALID_IMAGE");
    return json.error.message;
  };

  const entries = imageEntryPoints(() => product);

  for (const [name, path, body, field] of entries) {
    it(`${name}: a 40 MP lossless WebP of a few KB is 422 INVALID_IMAGE naming the limit`, async () => {
      const message = await refusal(await post(path, body(webpUri(huge))));
      expect(message).toMatch(REFUSAL);
      if (field) expect(message.startsWith(`${field}: `), message).toBe(true);
    }, 30_000);
  }

  it("the limit is 8 million pixels on Node (2 on the edge): exactly that is accepted, a row more is refused", async () => {
    expect(NODE_DECODE_LIMITS.wholeDecodePixels).toBe(8_000_000);
    expect(NODE_DECODE_LIMITS.maxPixels).toBe(Infinity);
    expect(EDGE_DECODE_LIMITS.wholeDecodePixels).toBe(2_000_000);
    expect(h.services.imageLimits).toBe(NODE_DECODE_LIMITS);
    const at = await post("/api/v1/social/media", { base64: webpUri(await solidWebp(4000, 2000)) });
    expect(at.status, await start(at)).toBe(201);
    const over = await refusal(await post("/api/v1/social/media", { base64: webpUri(await solidWebp(4000, 2001)) }));
    expect(over).toMatch(/WebP of 4000x2001 \(8 million pixels\); WebP images are accepted up to 8 million pixels/);
  }, 60_000);

  it("other images decoded whole are held to it too: a progressive CMYK JPEG whose header says 40 MP is refused by name", async () => {
    const cmyk = await sharp({ create: { width: 96, height: 64, channels: 3, background: "#446688" } })
      .toColourspace("cmyk")
      .jpeg({ progressive: true })
      .toBuffer();
    const message = await refusal(await post("/api/v1/social/media", { base64: dataUri("image/jpeg", patchJpegSize(cmyk, 8000, 5000)) }));
    expect(message).toMatch(
      /progressive CMYK JPEG of 8000x5000 \(40 million pixels\); this server decodes such images only up to 8 million pixels\. Send it as a standard JPEG/,
    );
  }, 30_000);

  it("WebPs within the limit still work: a 1000x800 logo (QR and area B) and a 3000x2000 product photo", async () => {
    const logo = webpUri(
      await sharp({ create: { width: 1000, height: 800, channels: 4, background: { r: 20, g: 40, b: 160, alpha: 1 } } })
        .webp({ quality: 90 })
        .toBuffer(),
    );
    const qr = await post("/api/qr-code/generate", { type: "text", value: "hello", logoUrl: logo });
    expect(qr.status, await start(qr)).toBe(200);
    const media = await post("/api/v1/social/media", { base64: logo });
    expect(media.status, await start(media)).toBe(201);
    expect(((await media.json()) as { data: { width: number; height: number } }).data).toMatchObject({ width: 1000, height: 800 });
    const withLogo = await post("/api/image/product-photography", photo({ logoImage: logo }));
    expect(withLogo.status, await start(withLogo)).toBe(200);

    const photoWebp = await sharp({
      create: { width: 3000, height: 2000, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 30 } },
    })
      .blur(1.5)
      .webp({ quality: 80 })
      .toBuffer();
    const scene = await post("/api/image/product-photography", { productImages: [{ dataUrl: webpUri(photoWebp) }], scenePrompt: "on a wooden table" });
    expect(scene.status, await start(scene)).toBe(200);
  }, 120_000);

  it("a 40 MP JPEG and a 40 MP PNG are not held to it (they stream)", async () => {
    const jpeg = await sharp({ create: { width: 8000, height: 5000, channels: 3, background: "#a0522d" } })
      .jpeg({ quality: 80 })
      .toBuffer();
    const fromJpeg = await post("/api/v1/social/media", { base64: dataUri("image/jpeg", jpeg) });
    expect(fromJpeg.status, await start(fromJpeg)).toBe(201);
    const fromPng = await post("/api/v1/social/media", { base64: dataUri("image/png", await solidPng(8000, 5000)) });
    expect(fromPng.status, await start(fromPng)).toBe(201);
    expect(((await fromPng.json()) as { data: { width: number; height: number } }).data).toMatchObject({ width: 1440, height: 900 });
  }, 120_000);
});

describe("the server's memory (spawned server)", () => {
  /** Peak resident growth the streamed paths keep for a 40 MP PNG; what is decoded whole must keep it too. */
  const BOUND_MIB = 64;
  let server: ServerProcess;

  beforeAll(async () => {
    server = await startServerProcess({
      env: { PHOTO_SIGNUP_CREDITS: "1000000", HEAVY_THREADS: "1", HEAVY_IDLE_SECONDS: "600", RATE_LIMIT_SOCIAL_WRITE: "1000", RATE_LIMIT_QR: "1000" },
    });
  }, 120_000);
  afterAll(() => server?.dispose());

  const post = (path: string, image: string) =>
    fetch(`${server.baseUrl}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ base64: image }),
    });

  const peakGrowth = <T>(work: () => Promise<T>) => peakGrowthOf(server.dataDir, work);

  const answer = async (res: Response) => ({ status: res.status, body: (await res.json()) as { error?: { code: string; message: string } } });

  it("refuses a 40 MP WebP within the memory a 40 MP PNG costs as it streams", async () => {
    // Warm: the heavy-work thread started and its code loaded.
    expect((await post("/api/v1/social/media", dataUri("image/png", await solidPng(400, 300)))).status).toBe(201);
    expect((await post("/api/qr-code/decode", dataUri("image/png", await solidPng(400, 300)))).status).toBe(422);

    const png = dataUri("image/png", await solidPng(8000, 5000));
    const plain = await peakGrowth(async () => {
      const res = await post("/api/v1/social/media", png);
      await res.arrayBuffer();
      return res.status;
    });
    expect(plain.value).toBe(201);
    expect(plain.growthMiB, "40 MP PNG: peak growth, MiB").toBeLessThan(BOUND_MIB);

    const webp = await peakGrowth(async () => answer(await post("/api/v1/social/media", webpUri(huge))));
    if (process.env.DEBUG_SERVER) console.log({ plainMiB: plain.growthMiB, webpMiB: webp.growthMiB });
    expect(webp.growthMiB, "40 MP WebP: peak growth, MiB").toBeLessThan(BOUND_MIB);
    expect(webp.value.status, JSON.stringify(webp.value.body).slice(0, 300)).toBe(422);
    expect(webp.value.body.error?.code).toBe("INVALID_IMAGE");
    expect(webp.value.body.error?.message).toMatch(REFUSAL);
  }, 180_000);

  it("refuses a 40 MP PNG corrupt in its last row within that memory too (QR reading: not decoded again whole)", async () => {
    const corrupt = await peakGrowth(async () => answer(await post("/api/qr-code/decode", dataUri("image/png", pngCorruptAtTheEnd(8000, 5000)))));
    if (process.env.DEBUG_SERVER) console.log({ corruptMiB: corrupt.growthMiB });
    expect(corrupt.growthMiB, "corrupt 40 MP PNG: peak growth, MiB").toBeLessThan(BOUND_MIB);
    expect(corrupt.value.status, JSON.stringify(corrupt.value.body).slice(0, 300)).toBe(422);
    expect(corrupt.value.body.error?.code).toBe("INVALID_IMAGE");
    expect(corrupt.value.body.error?.message).toMatch(/^The image data is corrupt/);
  }, 180_000);
});
