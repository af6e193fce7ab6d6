/**
 * The two public catalogue endpoints: templates (with demo images this service serves) and models with
 * exact prices from configuration; both cacheable with ETags and described in the OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import SwaggerParser from "@apidevtools/swagger-parser";
import { createTestApp, type TestApp } from "../helpers/harness";
import { decodePng } from "./fixtures";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(() => h.close());

type Template = { id: string; title: string; categoryId: string; categoryTitle: string; demoImageUrl: string };

describe("GET /api/image/product-photography-prompts", () => {
  it("lists at least 30 templates in the four families, without their prompts, publicly and cacheably", async () => {
    const res = await h.app.request("/api/image/product-photography-prompts");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=3600");
    const { data } = (await res.json()) as { data: Template[] };
    expect(data.length).toBeGreaterThanOrEqual(30);
    const families = new Set(data.map((t) => t.categoryId));
    for (const family of ["studio", "lifestyle", "holiday", "ecommerce"]) expect(families).toContain(family);
    expect(new Set(data.map((t) => t.id)).size).toBe(data.length);
    for (const t of data) {
      expect(Object.keys(t).sort()).toEqual(["categoryId", "categoryTitle", "demoImageUrl", "id", "title"]);
      expect(t.demoImageUrl).toBe(`http://127.0.0.1:8787/api/image/demo/${t.id}.png`);
    }
    const etag = res.headers.get("etag")!;
    const again = await h.app.request("/api/image/product-photography-prompts", { headers: { "If-None-Match": etag } });
    expect(again.status).toBe(304);
  });

  it("serves a real demo image for a template, made by the local compositor", async () => {
    const res = await h.app.request("/api/image/demo/hol-diwali.png");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    const png = await decodePng(Buffer.from(await res.arrayBuffer()));
    expect(png.width).toBeGreaterThanOrEqual(512);
    // Not a flat placeholder: the image has many distinct colours.
    const colours = new Set<number>();
    for (let i = 0; i < png.data.length; i += png.channels * 7) colours.add((png.data[i]! << 16) | (png.data[i + 1]! << 8) | png.data[i + 2]!);
    expect(colours.size).toBeGreaterThan(500);
    expect((await h.app.request("/api/image/demo/no-such.png")).status).toBe(404);
  });
});

describe("GET /api/image/image-model-options", () => {
  it("lists pro, standard and flash with every field and exact prices", async () => {
    const res = await h.app.request("/api/image/image-model-options");
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toMatch(/^"[0-9a-f]+"$/);
    const { data } = (await res.json()) as { data: Array<Record<string, any>> };
    expect(data.map((m) => m.model)).toEqual(["pro", "standard", "flash"]);
    for (const m of data) {
      expect(Object.keys(m).sort()).toEqual(
        [
          "badge",
          "defaultResolution",
          "description",
          "estimatedCost",
          "maxBatchSize",
          "model",
          "modelId",
          "name",
          "pricingPerResolution",
          "provider",
          "supportedResolutions",
          "supportsBatchGeneration",
          "supportsVariableResolution",
        ].sort(),
      );
      expect(Object.keys(m.pricingPerResolution)).toEqual(m.supportedResolutions);
      expect(m.estimatedCost).toEqual(m.pricingPerResolution[m.defaultResolution]);
    }
    const [pro, standard] = data;
    expect(pro).toMatchObject({ defaultResolution: "4K", supportedResolutions: ["1K", "2K", "4K"], supportsVariableResolution: true });
    expect(standard).toMatchObject({
      supportedResolutions: ["1K"],
      defaultResolution: "1K",
      maxBatchSize: 10,
      supportsBatchGeneration: true,
      supportsVariableResolution: false,
    });
    expect(standard!.pricingPerResolution["1K"]).toEqual({ credits: 4, usd: 0.039, inr: 3.45 });
  });

  it("takes model ids, prices and the INR rate from configuration", async () => {
    const custom = await createTestApp({
      env: {
        USD_INR_RATE: "90",
        PHOTO_MODELS: JSON.stringify({
          usdToInr: "80",
          creditsPerUsd: 1000,
          models: [
            {
              model: "standard",
              modelId: "acme/fast:1",
              name: "Fast",
              provider: "replicate",
              description: "d",
              badge: "b",
              supportedResolutions: ["1K", "2K"],
              maxBatchSize: 3,
              pricing: { "1K": "0.0333", "2K": "0.1" },
            },
          ],
        }),
      },
    });
    try {
      const { data } = (await (await custom.app.request("/api/image/image-model-options")).json()) as { data: Array<Record<string, any>> };
      expect(data).toHaveLength(1);
      expect(data[0]).toMatchObject({ modelId: "acme/fast:1", maxBatchSize: 3, defaultResolution: "2K", estimatedCost: { credits: 100, usd: 0.1, inr: 9 } });
      expect(data[0]!.pricingPerResolution["1K"]).toEqual({ credits: 34, usd: 0.0333, inr: 3 });
    } finally {
      await custom.close();
    }
  });

  it("a wrong PHOTO_MODELS stops start-up with the variable named", async () => {
    await expect(createTestApp({ env: { PHOTO_MODELS: "{" } })).rejects.toThrow(/PHOTO_MODELS/);
    await expect(createTestApp({ env: { PHOTO_MODELS: JSON.stringify({ usdToInr: "80", creditsPerUsd: 1, models: [] }) } })).rejects.toThrow(/PHOTO_MODELS/);
    await expect(createTestApp({ env: { USD_INR_RATE: "eighty" } })).rejects.toThrow(/USD_INR_RATE/);
  });
});

describe("OpenAPI", () => {
  it("describes area B in the API's valid OpenAPI 3.1 document; the former /api/image/openapi.json answers 301 to it", async () => {
    const doc = (await (await h.app.request("/openapi.json")).json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe("3.1.0");
    expect(
      Object.keys(doc.paths)
        .filter((p) => p.startsWith("/api/image/"))
        .sort(),
    ).toEqual([
      "/api/image/credits",
      "/api/image/demo/{file}",
      "/api/image/gallery",
      "/api/image/gallery/{id}",
      "/api/image/image-model-options",
      "/api/image/product-photography",
      "/api/image/product-photography-prompts",
      "/api/image/product-photography/jobs/{id}",
    ]);
    await SwaggerParser.validate(structuredClone(doc) as never);
    const old = await h.app.request("/api/image/openapi.json");
    expect([old.status, old.headers.get("location")]).toEqual([301, "/openapi.json"]);
  });
});
