/**
 * The Replicate generator, driven through the real `replicate` client against the HTTP fake. Waits go
 * through an injected sleep that records what was asked for, so the tests check behaviour (what was waited,
 * what was sent) without waiting.
 */
import { PhotonImage } from "@cf-wasm/photon/others";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import sharp from "sharp";
import { EDGE_DECODE_LIMITS } from "../../src/edge-services";
import { JsonLogger } from "../../src/adapters/logger";
import { MemoryStorage } from "../../src/adapters/storage/memory";
import { ReplicateGenerator, type ReplicateGeneratorOptions } from "../../src/photo/providers/replicate";
import { retryAfterMs } from "../../src/photo/providers/replicate-fetch";
import { GenerationError, type ModelOption, type SceneRequest } from "../../src/photo/types";
import type { Storage } from "../../src/services";
import { ROOT, startTestWorker, type TestWorker } from "../helpers/workerd";
import { startReplicateFake, type RecordedRequest, type ReplicateFake } from "../helpers/replicate-fake";

const STORE = "https://media.example.test";
const VERSION = "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa";

const model = (overrides: Partial<ModelOption> = {}): ModelOption => ({
  model: "standard",
  modelId: "google/nano-banana",
  name: "Standard",
  provider: "Replicate",
  description: "fast",
  badge: "",
  supportedResolutions: ["1K"],
  maxBatchSize: 10,
  defaultResolution: "1K",
  pricing: {},
  ...overrides,
});

const PRO = model({
  model: "pro",
  modelId: "google/nano-banana-pro",
  supportedResolutions: ["1K", "2K", "4K"],
  providerResolution: { "1K": "1K", "2K": "2K", "4K": "2K" },
});

const image = (name: string) => ({
  bytes: new Uint8Array([1]),
  mimeType: "image/png" as const,
  width: 1,
  height: 1,
  url: `${STORE}/files/photo/in/${name}.png`,
});

const scene = (overrides: Partial<SceneRequest> = {}): SceneRequest => ({
  product: image("product"),
  prompt: "A bottle of olive oil on a marble counter, soft window light.",
  model: model(),
  resolution: "1K",
  aspectRatio: "1:1",
  width: 1024,
  height: 1024,
  ...overrides,
});

let fake: ReplicateFake;
const logLines: string[] = [];
const everyRequest: RecordedRequest[] = [];

interface Rig {
  storage: Storage;
  sleeps: number[];
  generate(request?: Partial<SceneRequest>): Promise<Awaited<ReturnType<ReturnType<typeof ReplicateGenerator>["generateScene"]>>>;
}

/** A generator on the fake whose sleep records the waits; `onSleep` may act on the n-th wait. */
function rig(options: Partial<ReplicateGeneratorOptions> = {}, onSleep?: (count: number) => void): Rig {
  const storage = MemoryStorage(STORE);
  const sleeps: number[] = [];
  const generator = ReplicateGenerator({
    token: fake.token,
    baseUrl: fake.url,
    storage,
    log: JsonLogger("debug", (line) => logLines.push(line)),
    sleep: async (ms) => {
      sleeps.push(ms);
      onSleep?.(sleeps.length);
    },
    ...options,
  });
  return { storage, sleeps, generate: (request) => generator.generateScene(scene(request)) };
}

async function failure(promise: Promise<unknown>): Promise<GenerationError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GenerationError);
  return error as GenerationError;
}

const creates = () => fake.requests.filter((r) => r.method === "POST" && r.path.endsWith("/predictions"));
const polls = () => fake.requests.filter((r) => r.method === "GET" && r.path.startsWith("/v1/predictions/"));
const cancels = () => fake.requests.filter((r) => r.path.endsWith("/cancel"));
const inputOf = (r: RecordedRequest) => (JSON.parse(r.body) as { input: Record<string, unknown> }).input;

beforeAll(async () => {
  fake = await startReplicateFake();
});
beforeEach(() => {
  everyRequest.push(...fake.requests);
  fake.reset();
});
afterAll(async () => {
  await fake.close();
});

describe("replicate generator: happy paths", () => {
  it("polls a slow prediction with growing waits, copies the raw output into storage and decodes it", async () => {
    fake.script("*", { polls: 4 });
    const { storage, sleeps, generate } = rig();
    const result = await generate();
    expect([result.width, result.height]).toEqual([1024, 1024]);
    expect(result.data.length).toBe(1024 * 1024 * 4);

    expect(creates().map((r) => r.path)).toEqual(["/v1/models/google/nano-banana/predictions"]);
    expect(polls()).toHaveLength(5);
    expect(sleeps).toHaveLength(5);
    expect(sleeps[0]).toBeGreaterThanOrEqual(800);
    expect(sleeps[0]).toBeLessThanOrEqual(1200);
    expect(Math.max(...sleeps)).toBeLessThanOrEqual(4800);
    expect(sleeps[4]).toBeGreaterThan(sleeps[0]!);

    const [id] = [...fake.predictions.keys()];
    const stored = await storage.get(`photo/raw/${id}.png`);
    expect(stored?.contentType).toBe("image/png");
    const download = fake.requests.find((r) => r.path === `/files/${id}.png`);
    expect(download?.headers.authorization).toBeUndefined();
    const served = await fetch(`${fake.url.replace(/\/v1$/, "")}/files/${id}.png`).then((r) => r.arrayBuffer());
    expect(Buffer.from(stored!.bytes).equals(Buffer.from(served))).toBe(true);
  });

  it("decodes the output with the deployment's decoders: photon on Node for a 1 MP PNG, never with the edge's limits", async () => {
    const photon = vi.spyOn(PhotonImage, "new_from_byteslice");
    try {
      const node = await rig().generate();
      expect(photon).toHaveBeenCalledTimes(1);
      const edge = await rig({ imageLimits: EDGE_DECODE_LIMITS }).generate();
      expect(photon).toHaveBeenCalledTimes(1);
      expect([edge.width, edge.height]).toEqual([1024, 1024]);
      expect(Buffer.from(edge.data).equals(Buffer.from(node.data))).toBe(true);
    } finally {
      photon.mockRestore();
    }
  });

  it("sends the product then the reference as storage URLs, says which is which, and asks for png without text", async () => {
    fake.script("*", { polls: 0 });
    await rig().generate({ reference: image("reference"), aspectRatio: "4:5" });
    const input = inputOf(creates()[0]!);
    expect(input.image_input).toEqual([`${STORE}/files/photo/in/product.png`, `${STORE}/files/photo/in/reference.png`]);
    expect(input.aspect_ratio).toBe("4:5");
    expect(input.output_format).toBe("png");
    expect(input).not.toHaveProperty("resolution");
    expect(input.prompt).toMatch(/olive oil/);
    expect(input.prompt).toMatch(/Image 1 is the product/);
    expect(input.prompt).toMatch(/Image 2 is a style reference/);
    expect(input.prompt).toMatch(/no[t]? add any text.*logos/i);
    expect(creates()[0]!.headers["cancel-after"]).toMatch(/^\d+s$/);
  });

  it("maps our resolution to the model's own (4K = 2048 px is the model's 2K) and keeps the aspect ratio", async () => {
    fake.script("*", { polls: 0 });
    const result = await rig().generate({ model: PRO, resolution: "4K", aspectRatio: "16:9", width: 2048, height: 1152 });
    expect(inputOf(creates()[0]!).resolution).toBe("2K");
    expect([result.width, result.height]).toEqual([2048, 1152]);
  });

  it("reads an output given as an array of URLs", async () => {
    fake.script("*", {
      polls: 1,
      outputAsArray: true,
      image: await sharp({ create: { width: 300, height: 200, channels: 3, background: "#c83" } })
        .jpeg()
        .toBuffer(),
    });
    const { storage, generate } = rig();
    const result = await generate();
    expect([result.width, result.height]).toEqual([300, 200]);
    const [id] = [...fake.predictions.keys()];
    expect((await storage.get(`photo/raw/${id}.jpg`))?.contentType).toBe("image/jpeg");
  });

  it("creates on the versioned route for an owner/name:version model id", async () => {
    fake.script(VERSION, { polls: 1 });
    await rig().generate({ model: model({ modelId: `acme/product-shot:${VERSION}` }) });
    const [create] = creates();
    expect(create!.path).toBe("/v1/predictions");
    expect(JSON.parse(create!.body).version).toBe(VERSION);
  });
});

describe("replicate generator: inputs as Replicate loads them", () => {
  it("fails the prediction when an input URL does not load, and succeeds when it does", async () => {
    fake.script("*", { polls: 0 });
    await rig().generate();
    const [first] = [...fake.predictions.keys()];
    const origin = fake.url.replace(/\/v1$/, "");
    fake.script("*", { polls: 0, fetchInputs: true });

    const missing = await failure(rig().generate({ product: { ...image("product"), url: `${origin}/files/nothing.png` } }));
    expect(missing.code).toBe("GENERATION_FAILED");
    await rig().generate({ product: { ...image("product"), url: `${origin}/files/${first}.png` } });
    expect(fake.inputFetches.map((f) => f.status)).toEqual([404, 200]);
  });
});

describe("replicate generator: rate limits and flaky upstream", () => {
  it("waits exactly Retry-After after each 429, then succeeds", async () => {
    fake.script("*", { rateLimitCreates: 2, retryAfterSeconds: 3, polls: 1 });
    const { sleeps, generate } = rig();
    await generate();
    expect(creates().map((r) => r.status)).toEqual([429, 429, 201]);
    expect(sleeps.slice(0, 2)).toEqual([3000, 3000]);
  });

  it("gives up with UPSTREAM_RATE_LIMITED after a bounded number of 429s, without the client's back-to-back retries", async () => {
    fake.script("*", { rateLimitCreates: 100, retryAfterSeconds: 1 });
    const { sleeps, generate } = rig();
    const error = await failure(generate());
    expect(error.code).toBe("UPSTREAM_RATE_LIMITED");
    expect(error.retryable).toBe(true);
    expect(creates()).toHaveLength(6);
    expect(sleeps).toEqual([1000, 1000, 1000, 1000, 1000]);
  });

  it("does not wait for a Retry-After longer than its cap", async () => {
    fake.script("*", { rateLimitCreates: 1, retryAfterSeconds: 120 });
    const { sleeps, generate } = rig({ maxRateLimitWaitMs: 30_000 });
    expect((await failure(generate())).code).toBe("UPSTREAM_RATE_LIMITED");
    expect(creates()).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it("retries polls that meet a 503 and still succeeds", async () => {
    fake.script("*", { serverErrors: 2, polls: 1 });
    await rig().generate();
    expect(polls().map((r) => r.status)).toEqual([503, 503, 200, 200]);
  });

  it("gives up on an API that keeps failing with UPSTREAM_UNAVAILABLE and cancels the running prediction", async () => {
    fake.script("*", { serverErrors: 100 });
    const error = await failure(rig().generate());
    expect(error.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(error.retryable).toBe(true);
    expect(polls()).toHaveLength(4);
    expect(cancels()).toHaveLength(1);
  });

  it("reads Retry-After as seconds or a date, else the body's hint", () => {
    expect(retryAfterMs("2", "")).toBe(2000);
    expect(retryAfterMs("Mon, 23 Nov 2026 12:00:05 GMT", "", Date.parse("Mon, 23 Nov 2026 12:00:00 GMT"))).toBe(5000);
    expect(retryAfterMs(null, '{"detail":"Request was throttled. Your rate limit resets in ~7s."}')).toBe(7000);
    expect(retryAfterMs(null, "")).toBeNull();
  });

  it("answers a rejected token with UPSTREAM_UNAVAILABLE, not retryable", async () => {
    const error = await failure(rig({ token: "r8_wrong" }).generate());
    expect(error.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(error.retryable).toBe(false);
    expect(fake.requests.map((r) => r.status)).toEqual([401]);
  });
});

describe("replicate generator: failures, refusals, timeouts", () => {
  it("maps a failed prediction to GENERATION_FAILED without provider internals", async () => {
    fake.script("*", { polls: 1, outcome: "failed", error: "CUDA error: device-side assert triggered at /src/predict.py:88" });
    const error = await failure(rig().generate());
    expect(error.code).toBe("GENERATION_FAILED");
    expect(error.message).not.toMatch(/CUDA|predict\.py/);
  });

  it("maps a safety-filter failure to GENERATION_REFUSED", async () => {
    fake.script("*", { polls: 1, outcome: "refused" });
    expect((await failure(rig().generate())).code).toBe("GENERATION_REFUSED");
  });

  it("maps a prediction canceled on Replicate's side to GENERATION_FAILED, without canceling it again", async () => {
    fake.script("*", { polls: 1, outcome: "canceled" });
    const error = await failure(rig().generate());
    expect(error.code).toBe("GENERATION_FAILED");
    expect(cancels()).toHaveLength(0);
  });

  it("cancels a prediction that outlives the timeout and answers GENERATION_TIMEOUT", async () => {
    fake.script("*", { outcome: "never" });
    const { sleeps, generate } = rig({ timeoutMs: 20_000 });
    const error = await failure(generate());
    expect(error.code).toBe("GENERATION_TIMEOUT");
    expect(creates()[0]!.headers["cancel-after"]).toBe("20s");
    expect(cancels()).toHaveLength(1);
    const [prediction] = [...fake.predictions.values()];
    expect(prediction!.canceled).toBe(true);
    expect(cancels()[0]!.path).toBe(`/v1/predictions/${prediction!.id}/cancel`);
    expect(sleeps.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(20_000);
  });

  it("cancels when the caller's signal aborts", async () => {
    fake.script("*", { outcome: "never" });
    const controller = new AbortController();
    const { generate } = rig({}, (n) => n === 3 && controller.abort());
    const error = await failure(generate({ signal: controller.signal }));
    expect(error.code).toBe("GENERATION_TIMEOUT");
    expect(cancels()).toHaveLength(1);
    expect(polls().length).toBeLessThanOrEqual(3);
  });
});

/** The same generator bundled by wrangler and run in workerd (Miniflare), against the same fake. */
const WORKER_ENTRY = (root: string) => `
import { ReplicateGenerator } from "${root}/src/photo/providers/replicate";
import { MemoryStorage } from "${root}/src/adapters/storage/memory";
import { JsonLogger } from "${root}/src/adapters/logger";
export default {
  async fetch(request) {
    const { baseUrl, token, model } = await request.json();
    const lines = [];
    const storage = MemoryStorage("https://media.example.test");
    const generator = ReplicateGenerator({ token, baseUrl, storage, log: JsonLogger("debug", (l) => lines.push(l)), pollIntervalMs: { initial: 5, max: 20 } });
    const product = { bytes: new Uint8Array([1]), mimeType: "image/png", width: 1, height: 1, url: "https://media.example.test/files/p.png" };
    try {
      const image = await generator.generateScene({ product, prompt: "a mug", model, resolution: "1K", aspectRatio: "3:2", width: 1024, height: 683 });
      return Response.json({ width: image.width, height: image.height, lines });
    } catch (error) {
      return Response.json({ code: error.code, message: String(error.message), lines });
    }
  },
};
`;

describe("replicate generator in workerd", () => {
  let worker: TestWorker | undefined;
  beforeAll(async () => {
    worker = await startTestWorker({ name: "replicate-workerd-test", main: { source: WORKER_ENTRY(ROOT) } });
  }, 120_000);
  afterAll(() => worker?.dispose());

  it("creates, polls, honours a 429, downloads and decodes inside workerd", async () => {
    fake.script("*", { polls: 2, rateLimitCreates: 1, retryAfterSeconds: 1 });
    const res = await worker!.mf.dispatchFetch("http://worker.test/", {
      method: "POST",
      body: JSON.stringify({ baseUrl: fake.url, token: fake.token, model: PRO }),
    });
    const body = (await res.json()) as { width?: number; height?: number; code?: string; message?: string; lines: string[] };
    expect(body).toMatchObject({ width: 1024, height: 683 });
    expect(creates().map((r) => r.status)).toEqual([429, 201]);
    expect(body.lines.join("\n")).not.toContain(fake.token);
    logLines.push(...body.lines);
  }, 30_000);
});

// Runs last: it checks everything the tests above sent and logged.
describe("replicate generator: the token stays secret", () => {
  it("never puts the token in a request body, a non-API request or a log line", () => {
    everyRequest.push(...fake.requests);
    expect(everyRequest.length).toBeGreaterThan(30);
    for (const r of everyRequest) {
      expect(r.body).not.toContain(fake.token);
      if (!r.path.startsWith("/v1/")) expect(JSON.stringify(r.headers)).not.toContain(fake.token);
    }
    expect(logLines.length).toBeGreaterThan(10);
    for (const line of logLines) expect(line).not.toContain(fake.token);
    expect(logLines.some((l) => /"predictionId":"\w+"/.test(l))).toBe(true);
  });
});
