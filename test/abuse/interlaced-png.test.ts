/**
 * Interlaced (Adam7) PNGs: decoded whole whichever decoder reads them, so they are held to a pixel limit of
 * their own (INTERLACED_PNG_PIXELS, src/images/limits.ts) where a non-interlaced PNG streams up to 40 MP.
 * A 40 MP interlaced PNG of a few hundred KB is refused from its header at every place an image is accepted
 * (QR logo and QR reading, area B's product, logo and reference images, area C's media upload) with a 422
 * that names the limit and says to save the PNG without interlacing; one within the limit, such as a
 * 1000x800 logo, still works. Against the real server (`functions/node.ts`), the refusal costs the server no
 * more memory than the streamed path costs for a non-interlaced 40 MP PNG.
 */
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INTERLACED_PNG_PIXELS } from "../../src/images/limits";
import { createTestApp, type TestApp } from "../helpers/harness";
import { imageEntryPoints } from "../helpers/images";
import { peakGrowthOf } from "../helpers/proc-memory";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";

/** A PNG of one colour (a few hundred KB even at 40 MP), interlaced or not. */
function solidPng(width: number, height: number, interlaced: boolean): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 4, background: { r: 200, g: 30, b: 60, alpha: 1 } } })
    .png({ progressive: interlaced, compressionLevel: 9 })
    .toBuffer();
}

const dataUri = (png: Buffer) => `data:image/png;base64,${png.toString("base64")}`;

/** The start of an answer's body, for an assertion's message (a success carries a whole image). */
const start = async (res: Response) => (await res.clone().text()).slice(0, 300);

/** The refusal's words: what the image is, the limit, and what to send instead. */
const REFUSAL =
  /interlaced PNG of 8000x5000 \(40 million pixels\); interlaced PNGs are accepted up to 8 million pixels, since they are decoded whole\. Save it without interlacing/;

let huge: Buffer;

beforeAll(async () => {
  huge = await solidPng(8000, 5000, true);
  expect(huge[28], "interlace method in IHDR").toBe(1);
  expect(huge.length).toBeLessThan(400_000);
}, 60_000);

describe("interlaced PNGs through each entry point (in process)", () => {
  let h: TestApp;
  let apiKey: string;
  let product: string;

  beforeAll(async () => {
    h = await createTestApp({ env: { RATE_LIMIT_QR: "1000", RATE_LIMIT_PHOTO: "1000", RATE_LIMIT_SOCIAL_WRITE: "1000" } });
    apiKey = (await h.createUser()).apiKey;
    product = `data:image/jpeg;base64,${(
      await sharp({ create: { width: 600, height: 800, channels: 3, background: "#1f8a8a" } })
        .jpeg()
        .toBuffer()
    ).toString("base64")}`;
  }, 60_000);
  afterAll(() => h?.close());

  const post = (path: string, body: unknown) => h.app.request(path, { method: "POST", headers: h.json(apiKey), body: JSON.stringify(body) });
  const photo = (extra: Record<string, unknown>) => ({ productImages: [{ dataUrl: product }], scenePrompt: "on a wooden table", ...extra });

  const entries = imageEntryPoints(() => product);

  for (const [name, path, body, field] of entries) {
    it(`${name}: a 40 MP interlaced PNG is 422 INVALID_IMAGE naming the limit`, async () => {
      const res = await post(path, body(dataUri(huge)));
      const json = (await res.json()) as { error: { code: string; message: string; details?: Array<{ path: string }> } };
      expect(res.status, JSON.stringify(json).slice(0, 300)).toBe(422);
      expect(json.error.code).toBe("INVALID_IMAGE");
      expect(json.error.message).toMatch(REFUSAL);
      if (field) expect(json.error.message.startsWith(`${field}: `), json.error.message).toBe(true);
    }, 30_000);
  }

  it("the limit is 8 million pixels: exactly that is accepted, a row more is refused", async () => {
    expect(INTERLACED_PNG_PIXELS).toBe(8_000_000);
    const at = await post("/api/v1/social/media", { base64: dataUri(await solidPng(4000, 2000, true)) });
    expect(at.status, await start(at)).toBe(201);
    const over = await post("/api/v1/social/media", { base64: dataUri(await solidPng(4000, 2001, true)) });
    expect(over.status).toBe(422);
    expect(((await over.json()) as { error: { message: string } }).error.message).toMatch(/interlaced PNG of 4000x2001 .*accepted up to 8 million pixels/);
    // A non-interlaced PNG of that size streams and is accepted.
    expect((await post("/api/v1/social/media", { base64: dataUri(await solidPng(4000, 2001, false)) })).status).toBe(201);
  }, 60_000);

  it("a 1000x800 interlaced logo still works: QR logo, media upload and area B logo", async () => {
    const logo = await solidPng(1000, 800, true);
    expect(logo[28], "interlace method in IHDR").toBe(1);
    const qr = await post("/api/qr-code/generate", { type: "text", value: "hello", logoUrl: dataUri(logo) });
    expect(qr.status, await start(qr)).toBe(200);
    const media = await post("/api/v1/social/media", { base64: dataUri(logo) });
    expect(media.status, await start(media)).toBe(201);
    expect(((await media.json()) as { data: { width: number; height: number } }).data).toMatchObject({ width: 1000, height: 800 });
    const withLogo = await post("/api/image/product-photography", photo({ logoImage: dataUri(logo) }));
    expect(withLogo.status, await start(withLogo)).toBe(200);
  }, 60_000);
});

describe("the server's memory (spawned server)", () => {
  /** Peak resident growth the streamed paths keep for a 40 MP PNG; the interlaced one must keep it too. */
  const BOUND_MIB = 64;
  let server: ServerProcess;

  beforeAll(async () => {
    server = await startServerProcess({
      env: { PHOTO_SIGNUP_CREDITS: "1000000", HEAVY_THREADS: "1", HEAVY_IDLE_SECONDS: "600", RATE_LIMIT_SOCIAL_WRITE: "1000" },
    });
  }, 120_000);
  afterAll(() => server?.dispose());

  const upload = (png: Buffer) =>
    fetch(`${server.baseUrl}/api/v1/social/media`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ base64: dataUri(png) }),
    });

  const peakGrowth = <T>(work: () => Promise<T>) => peakGrowthOf(server.dataDir, work);

  it("refuses a 40 MP interlaced PNG within the memory a 40 MP non-interlaced one costs as it streams", async () => {
    // Warm: the heavy-work thread started and its code loaded.
    expect((await upload(await solidPng(400, 300, false))).status).toBe(201);

    const plain = await peakGrowth(async () => {
      const res = await upload(await solidPng(8000, 5000, false));
      await res.arrayBuffer();
      return res.status;
    });
    expect(plain.value).toBe(201);
    expect(plain.growthMiB, "non-interlaced 40 MP PNG: peak growth, MiB").toBeLessThan(BOUND_MIB);

    const interlaced = await peakGrowth(async () => {
      const res = await upload(huge);
      return { status: res.status, body: (await res.json()) as { error?: { code: string; message: string } } };
    });
    expect(interlaced.growthMiB, "interlaced 40 MP PNG: peak growth, MiB").toBeLessThan(BOUND_MIB);
    if (process.env.DEBUG_SERVER) console.log({ plainMiB: plain.growthMiB, interlacedMiB: interlaced.growthMiB });
    expect(interlaced.value.status, JSON.stringify(interlaced.value.body).slice(0, 300)).toBe(422);
    expect(interlaced.value.body.error?.code).toBe("INVALID_IMAGE");
    expect(interlaced.value.body.error?.message).toMatch(REFUSAL);
  }, 120_000);
});
