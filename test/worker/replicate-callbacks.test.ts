/**
 * Replicate-backed async photo jobs in workerd (the Worker built as deployed, on dev:edge's stand-ins:
 * PostgreSQL through the Neon bridge, the S3 fake), with the Replicate stand-in, driven by the real
 * `replicate` client inside the Worker, calling back to PUBLIC_BASE_URL. The stand-in's clock is moved by
 * the test, so a 90 s prediction takes no wall time.
 *
 * Shown: the POST's waitUntil only creates the predictions (no poll of Replicate ever comes from the
 * Worker) and the signed callback finishes the job, for one item and for four; a refused callback (bad
 * signature, stale timestamp) changes nothing; a lost callback is finished by the cron sweep reading the
 * prediction; the Worker stopped three times while 10 async jobs run: every job ends, one prediction per
 * item, one charge per image.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { count, eq, inArray } from "drizzle-orm";
import { Miniflare } from "miniflare";
import { openNodeDb } from "../../db/node";
import type { DbHandle } from "../../db/client";
import { generations, photoJobItems } from "../../db/schema";
import { createApiKey, createUser } from "../../src/http/api-keys";
import { PREDICTION_CALLBACK_PATH, RECHECK_MS } from "../../src/photo/items";
import { startLocalEdge, type LocalEdge } from "../../dev/edge-worker";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { expectOneChargePerItem } from "../helpers/charges";
import { startReplicateFake, type ReplicateFake } from "../helpers/replicate-fake";
import { freePort } from "../helpers/server-process";
import { productJpeg } from "../photo/fixtures";

let edge: LocalEdge;
/** The Worker's runtime now: the first one, or the one started after a stop. */
let mf: Miniflare;
let scratch: ScratchDatabase;
let handle: DbHandle;
let replicate: ReplicateFake;
let base: string;
let key: string;
let product: string;

beforeAll(async () => {
  scratch = await createScratchDatabase();
  handle = await openNodeDb({ url: scratch.url, poolSize: 2 });
  const { userId } = await createUser(handle.db, `callbacks-${crypto.randomUUID()}@example.test`);
  key = (await createApiKey(handle.db, userId)).key;
  replicate = await startReplicateFake();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  edge = await startLocalEdge({
    databaseUrl: scratch.url,
    port,
    vars: {
      PUBLIC_BASE_URL: base,
      REPLICATE_API_TOKEN: replicate.token,
      REPLICATE_API_BASE: replicate.url,
      RATE_LIMIT_PHOTO: "10000",
      RATE_LIMIT_PHOTO_READ: "100000",
      PHOTO_SIGNUP_CREDITS: "100000",
      LOG_LEVEL: "warn",
    },
  });
  mf = edge.mf;
  product = `data:image/jpeg;base64,${(await productJpeg(300, 400)).toString("base64")}`;
}, 240_000);

afterAll(async () => {
  const steps: Array<() => unknown> = [
    () => mf !== edge?.mf && mf?.dispose(),
    () => edge?.dispose(),
    () => replicate?.close(),
    () => handle?.close(),
    () => scratch?.drop(),
  ];
  for (const step of steps)
    await Promise.resolve()
      .then(step)
      .catch(() => {});
});

type Data = Record<string, any>;

const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json().catch(() => ({}))) as { data: Data } };
};
const postAsync = async (items: number, label: string) => {
  const { status, json } = await api(
    "POST",
    "/api/image/product-photography",
    {
      productImages: Array.from({ length: items }, (_, i) => ({ dataUrl: product, label: `${label}-${i}` })),
      scenePrompt: "on a marble counter",
      model: "standard",
      outputResult: "url",
    },
    { prefer: "respond-async" },
  );
  expect(status, JSON.stringify(json)).toBe(202);
  return json.data.id as string;
};
const jobOf = async (id: string) => (await api("GET", `/api/image/product-photography/jobs/${id}`)).json.data;
const itemsOf = (jobId: string) => handle.db.select().from(photoJobItems).where(eq(photoJobItems.jobId, jobId));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const polls = (ids: string[]) => replicate.requests.filter((r) => r.method === "GET" && ids.some((id) => r.path === `/v1/predictions/${id}`));

/** Waits until every item of the job has its prediction stored (the POST's waitUntil has done its part). */
async function dispatched(jobId: string, items: number): Promise<string[]> {
  for (let i = 0; i < 600; i++) {
    const rows = await itemsOf(jobId);
    if (rows.length === items && rows.every((r) => r.predictionId)) return rows.map((r) => r.predictionId!);
    await sleep(50);
  }
  throw new Error(`job ${jobId} was not dispatched`);
}

describe("async photo jobs in workerd, finished by Replicate's webhooks", () => {
  it("a 90 s prediction, then a job of 4 items: created from the POST's waitUntil, finished by the callbacks, never polled", async () => {
    replicate.script("*", { durationMs: 90_000 });
    for (const items of [1, 4]) {
      replicate.webhooks.length = 0;
      const id = await postAsync(items, `cb${items}`);
      const predictions = await dispatched(id, items);
      await sleep(500);
      expect((await jobOf(id)).status).toBe("running");
      const created = replicate.requests.filter((r) => r.method === "POST" && r.status === 201).slice(-items);
      for (const r of created)
        expect(JSON.parse(r.body)).toMatchObject({ webhook: `${base}${PREDICTION_CALLBACK_PATH}`, webhook_events_filter: ["completed"] });

      await replicate.clock.advance(90_000);
      expect(replicate.webhooks.map((w) => w.status)).toEqual(predictions.map(() => 200));
      expect(replicate.webhooks.filter((w) => JSON.parse(w.body).data.outcome === "finished")).toHaveLength(items);
      const done = await jobOf(id);
      expect(done.status).toBe("succeeded");
      expect(polls(predictions)).toHaveLength(0);
      const [charged] = await handle.db.select({ n: count() }).from(generations).where(eq(generations.jobId, id));
      expect(charged!.n).toBe(items);
    }
  });

  it("refuses a bad signature and a stale timestamp (401, nothing changes); a replay of the good one does nothing", async () => {
    replicate.script("*", { durationMs: 10_000, webhook: { drop: true } });
    const id = await postAsync(1, "sig");
    const [predictionId] = await dispatched(id, 1);
    await replicate.clock.advance(10_000);
    expect(await replicate.sendWebhook(predictionId!, { badSignature: true })).toBe(401);
    expect(await replicate.sendWebhook(predictionId!, { timestampOffsetSeconds: -400 })).toBe(401);
    expect((await jobOf(id)).status).toBe("running");
    expect(await replicate.sendWebhook(predictionId!, { webhookId: "msg_edge_1" })).toBe(200);
    expect(await replicate.sendWebhook(predictionId!, { webhookId: "msg_edge_1" })).toBe(200);
    expect(replicate.webhooks.slice(-2).map((w) => JSON.parse(w.body).data.outcome)).toEqual(["finished", "duplicate"]);
    expect((await jobOf(id)).status).toBe("succeeded");
    const [charged] = await handle.db.select({ n: count() }).from(generations).where(eq(generations.jobId, id));
    expect(charged!.n).toBe(1);
  });

  it("a lost callback: the cron sweep after RECHECK_MS reads the prediction and finishes the job", async () => {
    replicate.script("*", { durationMs: 10_000, webhook: { drop: true } });
    const id = await postAsync(1, "lost");
    const [predictionId] = await dispatched(id, 1);
    await replicate.clock.advance(10_000);
    expect(replicate.webhooks.filter((w) => w.predictionId === predictionId)).toHaveLength(0);
    // The item is looked at again RECHECK_MS after its prediction was made; until then a sweep leaves it.
    const [item] = await itemsOf(id);
    expect(item!.checkAfter!.getTime() - Date.now()).toBeGreaterThan(RECHECK_MS - 10_000);
    expect(await edge.scheduled()).toBe("ok");
    expect(polls([predictionId!])).toHaveLength(0);
    // Its time is moved into the past rather than waited for (the Worker's clock is the machine's).
    await handle.db
      .update(photoJobItems)
      .set({ checkAfter: new Date(Date.now() - 1000) })
      .where(eq(photoJobItems.jobId, id));
    expect(await edge.scheduled()).toBe("ok");
    for (let i = 0; i < 100 && (await jobOf(id)).status !== "succeeded"; i++) await sleep(100);
    expect((await jobOf(id)).status).toBe("succeeded");
    expect(polls([predictionId!])).toHaveLength(1);
  });

  it("the Worker stopped three times while 10 async jobs run: every job ends, one prediction per item, each image charged once", async () => {
    replicate.script("*", { durationMs: 90_000 });
    const before = new Set(replicate.predictions.keys());
    const jobs: Array<{ id: string; items: number }> = [];
    for (let round = 0; round < 3; round++) {
      const these: Array<{ id: string; items: number }> = [];
      for (let j = 0; j < 10; j++) {
        const items = (j % 2) + 1;
        these.push({ id: await postAsync(items, `kill${round}-${j}`), items });
      }
      jobs.push(...these);
      // Stopped with the runners part-way (round 0) or after they dispatched, while the models run.
      if (round > 0) for (const job of these) await dispatched(job.id, job.items);
      await mf.dispose();
      await replicate.clock.advance(90_000); // the callbacks meet a stopped Worker and are retried
      mf = new Miniflare(edge.miniflareOptions);
      await mf.ready;
      const deadline = Date.now() + 240_000;
      for (;;) {
        await replicate.clock.advance(90_000);
        const states = await Promise.all(these.map((j) => jobOf(j.id)));
        if (states.every((s) => s.status === "succeeded" || s.status === "failed")) {
          expect(states.map((s) => s.status)).toEqual(these.map(() => "succeeded"));
          break;
        }
        if (Date.now() > deadline) throw new Error(`round ${round}: ${JSON.stringify(states.map((s) => s.status))}`);
        // The cron trigger, as Cloudflare runs it every minute.
        await (await mf.getWorker()).scheduled({ cron: "* * * * *", scheduledTime: new Date() });
        await sleep(2000);
      }
    }
    const expected = jobs.reduce((n, j) => n + j.items, 0);
    const made = [...replicate.predictions.keys()].filter((id) => !before.has(id));
    expect(made).toHaveLength(expected);
    const ids = jobs.map((j) => j.id);
    const items = await handle.db.select().from(photoJobItems).where(inArray(photoJobItems.jobId, ids));
    expect(new Set(items.map((r) => r.predictionId))).toEqual(new Set(made));
    await expectOneChargePerItem(handle.db, ids, expected);
  }, 1_200_000);
});
