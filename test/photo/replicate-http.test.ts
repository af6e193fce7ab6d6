/**
 * Area B on Replicate, through HTTP: REPLICATE_API_TOKEN and REPLICATE_API_BASE (pointing at the test fake
 * of Replicate's API, driven by the real `replicate` client) switch the generator; the service still draws
 * the logo and texts itself and fits the model's output to the exact size.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { generations, photoJobItems } from "../../db/schema";
import { startReplicateFake, type ReplicateFake } from "../helpers/replicate-fake";
import { bboxOf, decodePng, logoDataUrl, MAGENTA, photoHarness, productDataUrl, type PhotoHarness } from "./fixtures";

let replicate: ReplicateFake;
let h: PhotoHarness;
let product: string;
const logLines: string[] = [];

beforeAll(async () => {
  replicate = await startReplicateFake();
  h = await photoHarness({ env: { REPLICATE_API_TOKEN: replicate.token, REPLICATE_API_BASE: replicate.url }, logLines });
  product = await productDataUrl();
});
afterAll(async () => {
  await h.close();
  await replicate.close();
});
beforeEach(() => replicate.reset());

describe("area B on Replicate", () => {
  it("sends the product as a URL of our storage, maps model and resolution, and fits, brands and stores the output", async () => {
    replicate.script("*", { polls: 0 });
    const res = await h.post({
      productImages: [{ dataUrl: product, label: "serum" }],
      promptId: "studio-plinth",
      model: "pro",
      resolution: "2K",
      aspectRatio: "4:5",
      logoImage: await logoDataUrl(),
      logoPlacement: "top-left",
      overlayText: "New",
      outputResult: "url",
    });
    const body = (await res.json()) as { data: Record<string, any> };
    expect(res.status, JSON.stringify(body)).toBe(200);

    const create = replicate.requests.find((r) => r.method === "POST" && r.path.endsWith("/predictions"))!;
    expect(create.path).toBe("/v1/models/google/nano-banana-pro/predictions");
    const input = JSON.parse(create.body).input as Record<string, any>;
    expect(input).toMatchObject({ aspect_ratio: "4:5", resolution: "2K", output_format: "png" });
    expect(input.image_input).toHaveLength(1);
    expect(input.image_input[0]).toMatch(/^http:\/\/127\.0\.0\.1:8787\/files\/photo\/in\/[0-9a-f-]{36}\.jpg$/);
    expect(input.prompt).toContain("plaster plinth");
    expect(input.prompt).not.toContain("New");

    const png = await decodePng(Buffer.from(await (await h.app.request(new URL(body.data.imageUrl).pathname)).arrayBuffer()));
    expect([png.width, png.height]).toEqual([1229, 1536]);
    expect(bboxOf(png, MAGENTA, 40)!.x).toBeLessThan(80);

    const id = [...replicate.predictions.keys()][0]!;
    const raw = await h.services.storage.get(`photo/raw/${id}.png`);
    expect(raw?.contentType).toBe("image/png");

    const rows = await h.db.select().from(generations).where(eq(generations.userId, h.userId));
    expect(rows.map((r) => [r.provider, r.model, r.resolution])).toEqual([["replicate", "pro", "2K"]]);

    for (const r of replicate.requests) expect(r.body).not.toContain(replicate.token);
    expect(logLines.join("\n")).not.toContain(replicate.token);
  });

  it("a failed prediction is 502 GENERATION_FAILED, charges nothing and frees the key", async () => {
    replicate.script("*", { polls: 0, outcome: "failed", error: "CUDA out of memory" });
    const body = { productImages: [{ dataUrl: product }], scenePrompt: "on a beach", model: "standard" };
    const res = await h.post(body, { "Idempotency-Key": "rep-1" });
    const json = (await res.json()) as { error: { code: string; message: string } };
    expect(res.status).toBe(502);
    expect(json.error.code).toBe("GENERATION_FAILED");
    replicate.script("*", { polls: 0 });
    expect((await h.post(body, { "Idempotency-Key": "rep-1" })).status).toBe(200);
  });

  it("without PUBLIC_BASE_URL an async job's prediction has no webhook: the runner polls it, with its id stored first", async () => {
    replicate.script("*", { polls: 2 });
    const res = await h.post(
      { productImages: [{ dataUrl: product }], scenePrompt: "on a beach", model: "standard", outputResult: "url" },
      { Prefer: "respond-async" },
    );
    expect(res.status).toBe(202);
    const { data } = (await res.json()) as { data: { id: string } };
    let status = "running";
    for (let i = 0; i < 600 && status === "running"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const job = await h.app.request(`/api/image/product-photography/jobs/${data.id}`, { headers: h.auth(h.apiKey) });
      status = ((await job.json()) as { data: { status: string } }).data.status;
    }
    expect(status).toBe("succeeded");
    const create = replicate.requests.find((r) => r.method === "POST" && r.path.endsWith("/predictions"))!;
    expect(JSON.parse(create.body).webhook).toBeUndefined();
    expect(replicate.requests.filter((r) => r.method === "GET" && r.path.startsWith("/v1/predictions/")).length).toBeGreaterThanOrEqual(2);
    const [item] = await h.db.select().from(photoJobItems).where(eq(photoJobItems.jobId, data.id));
    expect(item).toMatchObject({ predictionId: [...replicate.predictions.keys()][0], status: "succeeded" });
  }, 90_000);

  it("a safety refusal is 422 GENERATION_REFUSED", async () => {
    replicate.script("*", { polls: 0, outcome: "refused" });
    const res = await h.post({ productImages: [{ dataUrl: product }], scenePrompt: "on a beach", model: "flash", resolution: "1K" });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("GENERATION_REFUSED");
  });
});
