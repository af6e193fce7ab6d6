/**
 * Area B validation through HTTP: every rule of POST /api/image/product-photography answers a 4xx that
 * names the field, before anything is generated or charged.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { count } from "drizzle-orm";
import sharp from "sharp";
import { generations, photoJobs } from "../../db/schema";
import { dataUrl, photoHarness, productDataUrl, type PhotoHarness } from "./fixtures";

let h: PhotoHarness;
let product: string;

beforeAll(async () => {
  h = await photoHarness();
  product = await productDataUrl();
});
afterAll(() => h.close());

const base = () => ({ productImages: [{ dataUrl: product }], promptId: "studio-white-sweep", model: "standard" });

async function expect422(body: unknown, field: string) {
  const res = await h.post(body);
  const json = (await res.json()) as { error: { code: string; message: string; details?: Array<{ path: string }> } };
  expect(res.status, JSON.stringify(json)).toBe(422);
  expect(json.error.details?.map((d) => d.path) ?? [], json.error.message).toContain(field);
  return json.error;
}

describe("POST /api/image/product-photography validation", () => {
  it("needs productImages, one to ten", async () => {
    await expect422({ promptId: "studio-white-sweep" }, "productImages");
    await expect422({ ...base(), productImages: [] }, "productImages");
    await expect422({ ...base(), productImages: Array.from({ length: 11 }, () => ({ dataUrl: product })) }, "productImages");
  });

  it("needs exactly one of dataUrl or url per product", async () => {
    await expect422({ ...base(), productImages: [{ label: "x" }] }, "productImages.0.dataUrl");
    await expect422({ ...base(), productImages: [{ dataUrl: product, url: "https://example.com/a.png" }] }, "productImages.0.url");
  });

  it("wants https URLs and image data URIs", async () => {
    await expect422({ ...base(), productImages: [{ url: "http://example.com/a.png" }] }, "productImages.0.url");
    await expect422({ ...base(), productImages: [{ url: "ftp://example.com/a.png" }] }, "productImages.0.url");
    await expect422({ ...base(), productImages: [{ dataUrl: "data:text/plain;base64,aGk=" }] }, "productImages.0.dataUrl");
  });

  it("refuses remote images at private, loopback or credentialled addresses (the shared safe fetch)", async () => {
    for (const url of [
      "https://127.0.0.1/a.png",
      "https://10.0.0.8/a.png",
      "https://user:pw@example.com/a.png",
      "https://localhost/a.png",
      "https://[::1]/a.png",
    ]) {
      const res = await h.post({ ...base(), productImages: [{ url }] });
      const json = (await res.json()) as { error: { code: string; message: string } };
      expect(res.status, url).toBe(422);
      expect(json.error.code).toBe("INVALID_IMAGE_URL");
      expect(json.error.message).toContain("productImages.0.url");
    }
  });

  it("sniffs the format from the bytes: a GIF or text labelled PNG is refused", async () => {
    const gif = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#f00" } })
      .gif()
      .toBuffer();
    const e1 = await expect422({ ...base(), productImages: [{ dataUrl: await dataUrl(gif, "image/png") }] }, "productImages.0.dataUrl");
    expect(e1.code).toBe("INVALID_IMAGE");
    const e2 = await expect422(
      { ...base(), productImages: [{ dataUrl: `data:image/png;base64,${Buffer.from("not an image at all").toString("base64")}` }] },
      "productImages.0.dataUrl",
    );
    expect(e2.code).toBe("INVALID_IMAGE");
    const webp = await sharp({ create: { width: 64, height: 64, channels: 3, background: "#0a0" } })
      .webp()
      .toBuffer();
    const tiff = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#00f" } })
      .tiff()
      .toBuffer();
    expect((await h.post({ ...base(), productImages: [{ dataUrl: await dataUrl(webp, "image/webp") }] })).status).toBe(200);
    await expect422({ ...base(), productImages: [{ dataUrl: await dataUrl(tiff, "image/jpeg") }] }, "productImages.0.dataUrl");
  });

  it("needs promptId or scenePrompt, and a known promptId", async () => {
    await expect422({ productImages: [{ dataUrl: product }] }, "promptId");
    const e = await expect422({ ...base(), promptId: "no-such-scene" }, "promptId");
    expect(e.message).toContain("product-photography-prompts");
    expect((await h.post({ productImages: [{ dataUrl: product }], scenePrompt: "pink marble, soft light", model: "standard" })).status).toBe(200);
  });

  it("checks placement, logo size and the logo image", async () => {
    await expect422({ ...base(), logoPlacement: "middle" }, "logoPlacement");
    await expect422({ ...base(), logoSize: 0.05 }, "logoSize");
    await expect422({ ...base(), logoSize: 0.81 }, "logoSize");
    await expect422({ ...base(), logoSize: "0.2" }, "logoSize");
    await expect422({ ...base(), logoImage: "logo.png" }, "logoImage");
    const e = await expect422({ ...base(), logoImage: `data:image/png;base64,${Buffer.from("junk").toString("base64")}` }, "logoImage");
    expect(e.code).toBe("INVALID_IMAGE");
    await expect422({ ...base(), referenceImage: "https://127.0.0.1/ref.png" }, "referenceImage");
  });

  it("a logo whose header is fine but whose data is corrupt is a 422, and frees its Idempotency-Key", async () => {
    const png = await sharp({ create: { width: 64, height: 64, channels: 4, background: { r: 255, g: 0, b: 255, alpha: 0.5 } } })
      .png()
      .toBuffer();
    const idat = png.indexOf(Buffer.from("IDAT"));
    const broken = Buffer.from(png);
    for (let i = idat + 6; i < idat + 30; i++) broken[i] = 0xff;
    const body = { ...base(), logoImage: await dataUrl(broken, "image/png") };
    const res = await h.post(body, { "Idempotency-Key": "corrupt-logo" });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("INVALID_IMAGE");
    const again = await h.post({ ...base(), logoImage: await dataUrl(png, "image/png") }, { "Idempotency-Key": "corrupt-logo" });
    expect(again.status).toBe(200);
  });

  it("checks model, resolution for the model, batch size for the model", async () => {
    await expect422({ ...base(), model: "ultra" }, "model");
    await expect422({ ...base(), resolution: "8K" }, "resolution");
    const e = await expect422({ ...base(), model: "standard", resolution: "2K" }, "resolution");
    expect(e.message).toContain("1K");
    await expect422({ ...base(), model: "pro", productImages: Array.from({ length: 5 }, () => ({ dataUrl: product })) }, "productImages");
  });

  it("checks aspect ratio, output mode, text lengths and unknown fields", async () => {
    await expect422({ ...base(), aspectRatio: "5:4" }, "aspectRatio");
    await expect422({ ...base(), outputResult: "file" }, "outputResult");
    await expect422({ ...base(), overlayText: "x".repeat(81) }, "overlayText");
    await expect422({ ...base(), marketingText: "x".repeat(241) }, "marketingText");
    await expect422({ ...base(), scenePrompt: "x".repeat(2001) }, "scenePrompt");
    await expect422({ ...base(), overlayText: "a\u0000b" }, "overlayText");
    // A lone surrogate (JSON's "\ud800") is no text: refused by name, never stored (the label went to a jsonb column as a 500).
    for (const e of [
      await expect422({ ...base(), productImages: [{ dataUrl: product, label: "x\udc00" }] }, "productImages.0.label"),
      await expect422({ ...base(), scenePrompt: "a kitchen \ud800 table" }, "scenePrompt"),
      await expect422({ ...base(), productImages: [{ url: "https://shop.com/p\ud800.png" }] }, "productImages.0.url"),
    ])
      expect(e.message).toMatch(/valid Unicode/);
    // Millions of characters are refused by their length and checked in linear time (no 500 on the stack).
    await expect422({ ...base(), scenePrompt: `${"a".repeat(9_000_000)}\ud800` }, "scenePrompt");
    await expect422({ ...base(), productImages: [{ dataUrl: product, label: "x".repeat(101) }] }, "productImages.0.label");
    await expect422({ ...base(), colour: "red" }, "colour");
    const e = await expect422({ ...base(), overlayText: "Sale 🎉" }, "overlayText");
    expect(e.message).toContain("🎉");
    await expect422({ ...base(), marketingText: "新年快乐" }, "marketingText");
  });

  it("answers 401 without a key, 415 for a non-JSON body, 400 for malformed JSON", async () => {
    const anon = await h.app.request("/api/image/product-photography", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    expect(anon.status).toBe(401);
    const text = await h.app.request("/api/image/product-photography", {
      method: "POST",
      headers: h.auth(h.apiKey, { "Content-Type": "text/plain" }),
      body: "{}",
    });
    expect(text.status).toBe(415);
    const bad = await h.app.request("/api/image/product-photography", { method: "POST", headers: h.json(h.apiKey), body: "{nope" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("INVALID_JSON");
  });

  it("malformed Idempotency-Key is 400", async () => {
    const res = await h.post(base(), { "Idempotency-Key": "has space" });
    expect(res.status).toBe(400);
  });

  it("nothing refused above left a job or a ledger row behind", async () => {
    const jobs = await h.db.select({ n: count() }).from(photoJobs);
    const rows = await h.db.select({ n: count() }).from(generations);
    // Only the valid requests above (webp, scenePrompt alone, the good logo) made anything.
    expect(rows[0]!.n).toBe(3);
    expect(jobs[0]!.n).toBe(3);
  });
});

describe("rate limit", () => {
  it("answers 429 with Retry-After past RATE_LIMIT_PHOTO", async () => {
    const small = await photoHarness({ env: { RATE_LIMIT_PHOTO: "2" } });
    try {
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 3; i++) {
        last = await small.post({ productImages: [{ url: "https://127.0.0.1/x.png" }], promptId: "studio-white-sweep" });
        statuses.push(last.status);
      }
      expect(statuses).toEqual([422, 422, 429]);
      expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
    } finally {
      await small.close();
    }
  });
});
