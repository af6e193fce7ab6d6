/**
 * Async jobs on Replicate finished by its signed webhooks, on Node: the app behind a real HTTP listener at
 * PUBLIC_BASE_URL (so the stand-in can call it back), the Replicate stand-in driven by the real `replicate`
 * client, its clock moved by the test so a 90 s prediction takes no wall time.
 *
 * Shown: the runner only creates the predictions and ends (no deferred work is left while the model runs);
 * the callback finishes the item and the job, for one item and for four; duplicated, replayed, badly signed
 * and stale callbacks; a lost callback finished by the sweep reading the prediction; a synchronous request
 * retried with the same Idempotency-Key continuing the one prediction.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { serve } from "@hono/node-server";
import { eq } from "drizzle-orm";
import { generations, photoJobItems, photoJobs } from "../../db/schema";
import { resumePhotoJobs } from "../../src/photo/async-jobs";
import { PREDICTION_CALLBACK_PATH, RECHECK_MS } from "../../src/photo/items";
import { SECRET_REFRESH_MS } from "../../src/photo/providers/replicate";
import { startReplicateFake, type ReplicateFake } from "../helpers/replicate-fake";
import { freePort } from "../helpers/server-process";
import { logoDataUrl, photoHarness, productDataUrl, type PhotoHarness } from "./fixtures";

let replicate: ReplicateFake;
let h: PhotoHarness;
let server: ReturnType<typeof serve>;
let base: string;
let product: string;
/** The service's clock runs this far ahead of the wall clock (the sweep's test moves it). */
let skewMs = 0;
const logLines: string[] = [];

beforeAll(async () => {
  replicate = await startReplicateFake();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  h = await photoHarness({
    env: { REPLICATE_API_TOKEN: replicate.token, REPLICATE_API_BASE: replicate.url, PUBLIC_BASE_URL: base, PHOTO_SIGNUP_CREDITS: "100000" },
    overrides: { clock: { now: () => new Date(Date.now() + skewMs) } },
    logLines,
  });
  server = await new Promise((resolve) => {
    const s = serve({ fetch: h.app.fetch, port, hostname: "127.0.0.1" }, () => resolve(s));
  });
  product = await productDataUrl();
}, 60_000);
afterAll(async () => {
  await new Promise<void>((r) => server?.close(() => r()));
  await h?.close();
  await replicate?.close();
});
beforeEach(() => {
  replicate.reset();
  skewMs = 0;
});

type Data = Record<string, any>;

const postAsync = async (body: Data, headers: Record<string, string> = {}) => {
  const res = await h.post(body, { Prefer: "respond-async", ...headers });
  const json = (await res.json()) as { data: Data };
  expect(res.status, JSON.stringify(json)).toBe(202);
  return json.data;
};
const jobOf = async (id: string) => {
  const res = await h.app.request(`/api/image/product-photography/jobs/${id}`, { headers: h.auth(h.apiKey) });
  return ((await res.json()) as { data: Data }).data;
};
const ledger = (jobId: string) => h.db.select().from(generations).where(eq(generations.jobId, jobId));
const polls = (predictionId = "\\w+") => replicate.requests.filter((r) => r.method === "GET" && new RegExp(`^/v1/predictions/${predictionId}$`).test(r.path));
const creates = () => replicate.requests.filter((r) => r.method === "POST" && r.path.endsWith("/predictions"));
const finishedLines = (predictionId: string) =>
  logLines.filter((l) => l.includes('"photo item finished"') && l.includes(predictionId) && l.includes('"recorded":true'));

describe("async jobs finished by Replicate's webhooks (Node)", () => {
  it("a 90 s prediction: the runner creates it with a webhook and ends; the callback finishes the job, with no polling", async () => {
    replicate.script("*", { durationMs: 90_000 });
    const job = await postAsync({
      productImages: [{ dataUrl: product, label: "serum" }],
      scenePrompt: "on a marble counter",
      model: "pro",
      resolution: "1K",
      logoImage: await logoDataUrl(),
      overlayText: "New",
      outputResult: "url",
    });
    await h.drain(); // the runner's deferred work has ended: nothing waits for the model
    expect((await jobOf(job.id)).status).toBe("running");

    const [create] = creates();
    const sent = JSON.parse(create!.body) as Data;
    expect(sent.webhook).toBe(`${base}${PREDICTION_CALLBACK_PATH}`);
    expect(sent.webhook_events_filter).toEqual(["completed"]);
    const predictionId = [...replicate.predictions.keys()][0]!;
    const [item] = await h.db.select().from(photoJobItems).where(eq(photoJobItems.jobId, job.id));
    expect(item).toMatchObject({ predictionId, status: "predicting" });

    await replicate.clock.advance(60_000);
    expect((await jobOf(job.id)).status).toBe("running");
    expect(replicate.webhooks).toHaveLength(0);

    await replicate.clock.advance(30_000); // the prediction ends: its webhook is delivered
    expect(replicate.webhooks.map((w) => [w.status, JSON.parse(w.body).data.outcome])).toEqual([[200, "finished"]]);
    const done = await jobOf(job.id);
    expect(done.status).toBe("succeeded");
    expect(done.result.imageUrl).toMatch(new RegExp(`/files/photo/out/${job.id}/0\\.png$`));
    expect(polls()).toHaveLength(0);
    expect((await ledger(job.id)).length).toBe(1);
    expect(await h.services.storage.get(`photo/raw/${predictionId}.png`)).not.toBeNull();
    expect(logLines.join("\n")).not.toContain(replicate.webhookSecret);
  });

  it("a job of 4 items: one prediction each, every item finished by its callback, the job by the last", async () => {
    replicate.script("*", { durationMs: 90_000 });
    const job = await postAsync({
      productImages: [0, 1, 2, 3].map((i) => ({ dataUrl: product, label: `p${i}` })),
      scenePrompt: "on a wooden table",
      model: "standard",
      outputResult: "url",
    });
    await h.drain();
    expect(creates()).toHaveLength(4);
    expect((await jobOf(job.id)).status).toBe("running");
    await replicate.clock.advance(90_000);
    expect(replicate.webhooks.map((w) => w.status)).toEqual([200, 200, 200, 200]);
    const done = await jobOf(job.id);
    expect(done.status).toBe("succeeded");
    expect(done.result.images.map((i: Data) => [i.label, i.status])).toEqual([0, 1, 2, 3].map((i) => [`p${i}`, "succeeded"]));
    expect(polls()).toHaveLength(0);
    expect((await ledger(job.id)).map((r) => r.itemIndex).sort()).toEqual([0, 1, 2, 3]);
  });

  it("bad signature and stale timestamp are 401 and change nothing; the first good one finishes the item once; replays and duplicates do nothing", async () => {
    replicate.script("*", { durationMs: 90_000, webhook: { drop: true } });
    const job = await postAsync({ productImages: [{ dataUrl: product }], scenePrompt: "on a beach", model: "standard", outputResult: "url" });
    await h.drain();
    await replicate.clock.advance(90_000);
    const predictionId = [...replicate.predictions.keys()][0]!;

    expect(await replicate.sendWebhook(predictionId, { badSignature: true })).toBe(401);
    expect(await replicate.sendWebhook(predictionId, { timestampOffsetSeconds: -600 })).toBe(401);
    expect(await replicate.sendWebhook(predictionId, { timestampOffsetSeconds: 600 })).toBe(401);
    const unsigned = await fetch(`${base}${PREDICTION_CALLBACK_PATH}`, { method: "POST", body: "{}" });
    expect(unsigned.status).toBe(401);
    expect(((await unsigned.json()) as Data).error.code).toBe("UNAUTHORIZED");
    expect((await jobOf(job.id)).status).toBe("running");
    expect(await ledger(job.id)).toHaveLength(0);

    expect(await replicate.sendWebhook(predictionId, { webhookId: "msg_first" })).toBe(200);
    expect(await replicate.sendWebhook(predictionId, { webhookId: "msg_first" })).toBe(200); // replayed
    expect(await replicate.sendWebhook(predictionId, { webhookId: "msg_second" })).toBe(200); // duplicated
    expect(replicate.webhooks.slice(-3).map((w) => JSON.parse(w.body).data.outcome)).toEqual(["finished", "duplicate", "already finished"]);
    expect((await jobOf(job.id)).status).toBe("succeeded");
    expect(await ledger(job.id)).toHaveLength(1);
    expect(finishedLines(predictionId)).toHaveLength(1);
  });

  it("the stand-in's own replays, duplicates and wrongly signed deliveries: one finish, one charge", async () => {
    replicate.script("*", { durationMs: 5_000, webhook: { replay: true, duplicate: true } });
    const job = await postAsync({ productImages: [{ dataUrl: product }], scenePrompt: "on snow", model: "standard", outputResult: "url" });
    await h.drain();
    await replicate.clock.advance(5_000);
    for (let i = 0; i < 200 && replicate.pendingWebhooks() > 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(replicate.webhooks.map((w) => w.status)).toEqual([200, 200, 200]);
    expect((await jobOf(job.id)).status).toBe("succeeded");
    expect(await ledger(job.id)).toHaveLength(1);

    replicate.reset();
    replicate.script("*", { durationMs: 5_000, webhook: { badSignature: true, retries: 0 } });
    const refused = await postAsync({ productImages: [{ dataUrl: product }], scenePrompt: "on sand", model: "standard", outputResult: "url" });
    await h.drain();
    await replicate.clock.advance(5_000);
    expect(replicate.webhooks.map((w) => w.status)).toEqual([401]);
    expect((await jobOf(refused.id)).status).toBe("running");
    expect(await ledger(refused.id)).toHaveLength(0);
  });

  it("a lost callback: the next sweep after RECHECK_MS reads the prediction and finishes the job", async () => {
    replicate.script("*", { durationMs: 90_000, webhook: { drop: true } });
    const job = await postAsync({ productImages: [{ dataUrl: product }], scenePrompt: "in a forest", model: "standard", outputResult: "url" });
    await h.drain();
    const predictionId = [...replicate.predictions.keys()][0]!;
    // A sweep while the prediction runs reads it once and leaves the job running.
    skewMs = RECHECK_MS + 1;
    await resumePhotoJobs(h.services);
    await h.drain();
    expect(polls(predictionId)).toHaveLength(1);
    expect((await jobOf(job.id)).status).toBe("running");

    await replicate.clock.advance(90_000);
    expect(replicate.webhooks).toHaveLength(0);
    // Within one sweep interval of the Node scheduler (30 s) the item is due again.
    skewMs = 2 * RECHECK_MS + 2;
    await resumePhotoJobs(h.services);
    await h.drain();
    expect(polls(predictionId)).toHaveLength(2);
    expect((await jobOf(job.id)).status).toBe("succeeded");
    expect(await ledger(job.id)).toHaveLength(1);
    expect(creates()).toHaveLength(1);
  });
});

describe("a create whose answer is lost", () => {
  it("the prediction it made is found among the account's recent ones and used; no second one is made", async () => {
    replicate.script("*", { durationMs: 5_000, loseCreateAnswers: 1 });
    const job = await postAsync({ productImages: [{ dataUrl: product }], scenePrompt: "on a tray", model: "standard", outputResult: "url" });
    await h.drain();
    expect(replicate.predictions.size).toBe(1);
    const predictionId = [...replicate.predictions.keys()][0]!;
    const [item] = await h.db.select().from(photoJobItems).where(eq(photoJobItems.jobId, job.id));
    expect(item).toMatchObject({ predictionId, status: "predicting" });
    await replicate.clock.advance(5_000);
    expect(replicate.webhooks.map((w) => w.status)).toEqual([200]);
    expect((await jobOf(job.id)).status).toBe("succeeded");
    expect(replicate.predictions.size).toBe(1);
    expect(await ledger(job.id)).toHaveLength(1);
  });
});

describe("a synchronous request retried with the same Idempotency-Key", () => {
  it("continues the stored prediction: one prediction, one charge, the same image", async () => {
    replicate.script("*", { durationMs: 30_000 });
    const body = { productImages: [{ dataUrl: product }], scenePrompt: "on a shelf", model: "standard", outputResult: "url" };
    const first = h.post(body, { "Idempotency-Key": "sync-retry-1" }); // its answer is never read: the client went away
    for (let i = 0; i < 400 && replicate.predictions.size === 0; i++) await new Promise((r) => setTimeout(r, 25));
    const predictionId = [...replicate.predictions.keys()][0]!;
    const [job] = await h.db.select().from(photoJobs).where(eq(photoJobs.idempotencyKey, "sync-retry-1"));
    // The id is stored as soon as the create's answer is read, which may be a moment after the stand-in has it.
    let item: typeof photoJobItems.$inferSelect | undefined;
    for (let i = 0; i < 400 && !item?.predictionId; i++) {
      [item] = await h.db.select().from(photoJobItems).where(eq(photoJobItems.jobId, job!.id));
      if (!item?.predictionId) await new Promise((r) => setTimeout(r, 25));
    }
    expect(item!.predictionId).toBe(predictionId);
    expect(JSON.parse(creates()[0]!.body).webhook).toBeUndefined();

    // While the first request still runs, the retry is told to come back.
    const busy = await h.post(body, { "Idempotency-Key": "sync-retry-1" });
    expect(busy.status).toBe(409);
    expect(busy.headers.get("retry-after")).toBe("10");

    // The first request's runner dies: its hold lapses (no heartbeat renews it), and the retry takes over.
    await h.db
      .update(photoJobs)
      .set({ lockedUntil: new Date(Date.now() - 1000), attempts: 5 })
      .where(eq(photoJobs.id, job!.id));
    await replicate.clock.advance(30_000);
    const retried = await h.post(body, { "Idempotency-Key": "sync-retry-1" });
    const json = (await retried.json()) as { data: Data };
    expect(retried.status, JSON.stringify(json)).toBe(200);
    expect(creates()).toHaveLength(1);
    expect(json.data.imageUrl).toMatch(new RegExp(`/files/photo/out/${job!.id}/0\\.png$`));
    await Promise.resolve(first).catch(() => undefined);

    const replay = await h.post(body, { "Idempotency-Key": "sync-retry-1" });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    expect(((await replay.json()) as { data: Data }).data.imageUrl).toBe(json.data.imageUrl);
    expect(await ledger(job!.id)).toHaveLength(1);
    expect(creates()).toHaveLength(1);
    // The request waited for its prediction itself: its item is closed, nothing is left for the sweep.
    const [closed] = await h.db.select().from(photoJobItems).where(eq(photoJobItems.jobId, job!.id));
    expect(closed).toMatchObject({ predictionId, status: "succeeded", checkAfter: null });
  });

  it("whose runner died before it read the create's answer: the retry finds that prediction by the input URL the create sent; one prediction, one charge", async () => {
    replicate.script("*", { polls: 1, holdCreateAnswers: 1 });
    const body = { productImages: [{ dataUrl: product }], scenePrompt: "on a windowsill", model: "standard", outputResult: "url" };
    const first = h.post(body, { "Idempotency-Key": "sync-retry-2" }); // its create's answer comes only after the retry
    for (let i = 0; i < 400 && replicate.predictions.size === 0; i++) await new Promise((r) => setTimeout(r, 25));
    const predictionId = [...replicate.predictions.keys()][0]!;
    const [job] = await h.db.select().from(photoJobs).where(eq(photoJobs.idempotencyKey, "sync-retry-2"));
    const [pending] = await h.db.select().from(photoJobItems).where(eq(photoJobItems.jobId, job!.id));
    expect(pending).toMatchObject({ predictionId: null, status: "predicting" });

    // The runner dies with the answer unread; the retry takes over with inputs stored again under new URLs.
    await h.db
      .update(photoJobs)
      .set({ lockedUntil: new Date(Date.now() - 1000), attempts: 5 })
      .where(eq(photoJobs.id, job!.id));
    const retried = await h.post(body, { "Idempotency-Key": "sync-retry-2" });
    const json = (await retried.json()) as { data: Data };
    expect(retried.status, JSON.stringify(json)).toBe(200);
    expect(creates()).toHaveLength(1);
    expect(replicate.predictions.size).toBe(1);
    const [item] = await h.db.select().from(photoJobItems).where(eq(photoJobItems.jobId, job!.id));
    expect(item).toMatchObject({ predictionId, status: "succeeded" });

    // The dead runner's answer arrives after all: it continues the stored prediction and charges nothing more.
    expect(replicate.releaseCreateAnswers()).toBe(1);
    await Promise.resolve(first).catch(() => undefined);
    expect(await ledger(job!.id)).toHaveLength(1);
    expect(creates()).toHaveLength(1);
    const replay = await h.post(body, { "Idempotency-Key": "sync-retry-2" });
    expect(replay.status).toBe(200);
    expect(((await replay.json()) as { data: Data }).data.imageUrl).toBe(json.data.imageUrl);
  });
});

describe("the webhook signing secret", () => {
  it("read from Replicate and kept; after Replicate rotates it, a callback signed with the new one is taken", async () => {
    replicate.script("*", { durationMs: 1_000, webhook: { drop: true } });
    const job = await postAsync({ productImages: [{ dataUrl: product }], scenePrompt: "on a rock", model: "standard", outputResult: "url" });
    await h.drain();
    await replicate.clock.advance(1_000);
    const predictionId = [...replicate.predictions.keys()][0]!;
    expect(await replicate.sendWebhook(predictionId, { badSignature: true })).toBe(401); // the secret is read and kept
    const fetched = () => replicate.requests.filter((r) => r.path === "/v1/webhooks/default/secret").length;
    const before = fetched();
    replicate.rotateWebhookSecret();
    await new Promise((r) => setTimeout(r, SECRET_REFRESH_MS + 500));
    expect(await replicate.sendWebhook(predictionId)).toBe(200);
    expect((await jobOf(job.id)).status).toBe("succeeded");
    expect(fetched()).toBe(before + 1);
  }, 60_000);
});

describe("REPLICATE_WEBHOOK_SECRET", () => {
  it("a configured secret is used without asking Replicate for it; a callback signed otherwise is 401", async () => {
    const port = await freePort();
    const other = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64")}`;
    for (const [secret, expected] of [
      [replicate.webhookSecret, 200],
      [other, 401],
    ] as const) {
      replicate.reset();
      replicate.script("*", { durationMs: 1_000, webhook: { retries: 0 } });
      const c = await photoHarness({
        env: {
          REPLICATE_API_TOKEN: replicate.token,
          REPLICATE_API_BASE: replicate.url,
          PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
          REPLICATE_WEBHOOK_SECRET: secret,
          PHOTO_SIGNUP_CREDITS: "1000",
        },
      });
      const listener = await new Promise<ReturnType<typeof serve>>((resolve) => {
        const s = serve({ fetch: c.app.fetch, port, hostname: "127.0.0.1" }, () => resolve(s));
      });
      try {
        const res = await c.post(
          { productImages: [{ dataUrl: product }], scenePrompt: "on a desk", model: "standard", outputResult: "url" },
          { Prefer: "respond-async" },
        );
        expect(res.status).toBe(202);
        await c.drain();
        await replicate.clock.advance(1_000);
        expect(replicate.webhooks.map((w) => w.status)).toEqual([expected]);
        expect(replicate.requests.filter((r) => r.path === "/v1/webhooks/default/secret")).toHaveLength(0);
      } finally {
        await new Promise<void>((r) => listener.close(() => r()));
        await c.close();
      }
    }
  }, 120_000);
});
