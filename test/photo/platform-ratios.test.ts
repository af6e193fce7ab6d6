/**
 * Area B's sizes meet area C's platforms: a portrait image is never narrower than its named ratio, so a 4:5
 * photo at any resolution is one photoplatform takes (its bounds are 4:5 to 1.91:1, compared exactly).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { photoHarness, productDataUrl, type PhotoHarness } from "./fixtures";

let h: PhotoHarness;
let product: string;

beforeAll(async () => {
  h = await photoHarness();
  product = await productDataUrl();
});
afterAll(() => h.close());

async function photo(resolution: string): Promise<{ photoDataUri: string; width: number; height: number }> {
  const res = await h.post({ productImages: [{ dataUrl: product }], promptId: "ecom-light-grey", model: "flash", resolution, aspectRatio: "4:5" });
  const body = (await res.json()) as { data: { photoDataUri: string; width: number; height: number } };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.data;
}

describe("a 4:5 product photo posted to photoplatform", () => {
  it.each(["1K", "4K"])("at %s is within 4:5 and within a pixel of it", async (resolution) => {
    const { width, height } = await photo(resolution);
    expect(height).toBe({ "1K": 1024, "4K": 2048 }[resolution]);
    expect(width * 5).toBeGreaterThanOrEqual(height * 4);
    expect(width - (height * 4) / 5).toBeLessThan(1);
  });

  it("is accepted by area C for a photoplatform account", async () => {
    const { photoDataUri } = await photo("1K");
    const account = await h.app.request("/sandbox/accounts", {
      method: "POST",
      headers: h.json(h.apiKey),
      body: JSON.stringify({ platform: "photoplatform", name: "ratios", platformAccountId: "4005" }),
    });
    expect(account.status).toBeLessThan(300);
    const media = await h.app.request("/api/v1/social/media", { method: "POST", headers: h.json(h.apiKey), body: JSON.stringify(photoDataUri) });
    const mediaBody = (await media.json()) as { data: { id: string; width: number; height: number } };
    expect(media.status, JSON.stringify(mediaBody)).toBe(201);
    const post = await h.app.request("/api/v1/social/posts", {
      method: "POST",
      headers: h.json(h.apiKey, { "Idempotency-Key": crypto.randomUUID() }),
      body: JSON.stringify({ accountIds: "photoplatform:4005", caption: "New serum", images: [{ mediaId: mediaBody.data.id }] }),
    });
    expect(post.status, await post.clone().text()).toBe(202);
  });
});
