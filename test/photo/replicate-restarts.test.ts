/**
 * Replicate-backed photo jobs across kill -9 of the real Node server (`npm start` on PostgreSQL), with the
 * Replicate stand-in calling back to PUBLIC_BASE_URL and its clock moved by the test.
 *
 * Shown: three times, the server killed while 10 async jobs run (once before the runners could dispatch,
 * once part-way, once after), then started again: every job ends, the stand-in counts exactly one
 * prediction per item, and the ledger charges each delivered image once. And a synchronous request whose
 * server died, retried with the same Idempotency-Key: the retry continues the one prediction.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, inArray } from "drizzle-orm";
import { generations, photoJobItems } from "../../db/schema";
import { openNodeDb } from "../../db/node";
import type { DbHandle } from "../../db/client";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { expectOneChargePerItem } from "../helpers/charges";
import { startReplicateFake, type ReplicateFake } from "../helpers/replicate-fake";
import { freePort, startServerProcess, type ServerProcess } from "../helpers/server-process";
import { productDataUrl } from "./fixtures";

let scratch: ScratchDatabase;
let handle: DbHandle;
let replicate: ReplicateFake;
let server: ServerProcess;
let product: string;

beforeAll(async () => {
  scratch = await createScratchDatabase();
  replicate = await startReplicateFake();
  replicate.script("*", { durationMs: 90_000 });
  const port = await freePort();
  server = await startServerProcess({
    port,
    env: {
      DATABASE_URL: scratch.url,
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      REPLICATE_API_TOKEN: replicate.token,
      REPLICATE_API_BASE: replicate.url,
      RATE_LIMIT_PHOTO: "10000",
      RATE_LIMIT_PHOTO_READ: "100000",
      PHOTO_SIGNUP_CREDITS: "100000",
    },
    startTimeoutMs: 180_000,
  });
  handle = await openNodeDb({ url: scratch.url, poolSize: 2 });
  product = await productDataUrl();
}, 240_000);

afterAll(async () => {
  for (const step of [() => server?.dispose(), () => replicate?.close(), () => handle?.close(), () => scratch?.drop()])
    await Promise.resolve()
      .then(step)
      .catch(() => {});
});

type Data = Record<string, any>;

const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, json: (await res.json().catch(() => ({}))) as { data: Data } };
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Creates jobs 1..3 items each; answers their ids and item counts. */
async function startJobs(round: number): Promise<Array<{ id: string; items: number }>> {
  const jobs = [];
  for (let i = 0; i < 10; i++) {
    const items = (i % 3) + 1;
    const { status, json } = await api(
      "POST",
      "/api/image/product-photography",
      {
        productImages: Array.from({ length: items }, (_, k) => ({ dataUrl: product, label: `r${round}-j${i}-p${k}` })),
        scenePrompt: "on a marble counter",
        model: "standard",
        outputResult: "url",
      },
      { prefer: "respond-async" },
    );
    expect(status, JSON.stringify(json)).toBe(202);
    jobs.push({ id: json.data.id as string, items });
  }
  return jobs;
}

/** Waits for every job to end, moving the stand-in's clock so predictions made after a restart end too. */
async function waitForJobs(jobs: Array<{ id: string }>, timeoutMs: number): Promise<Data[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await replicate.clock.advance(90_000);
    const states = await Promise.all(jobs.map(async (j) => (await api("GET", `/api/image/product-photography/jobs/${j.id}`)).json.data));
    if (states.every((s) => s?.status === "succeeded" || s?.status === "failed")) return states;
    if (Date.now() > deadline) throw new Error(`jobs still running: ${JSON.stringify(states.filter((s) => s?.status !== "succeeded").map((s) => s?.status))}`);
    await sleep(1000);
  }
}

describe("Replicate-backed photo jobs across kill -9 of the Node server", () => {
  it("three times: 10 async jobs, the server killed and started again; every job ends, one prediction per item, each image charged once", async () => {
    const all: Array<{ id: string; items: number }> = [];
    // Killed: as soon as the jobs are accepted; part-way through their predictions; once all exist.
    const killWhen = [0, 0.5, 1];
    for (const [round, share] of killWhen.entries()) {
      const before = replicate.predictions.size;
      const jobs = await startJobs(round);
      all.push(...jobs);
      const items = jobs.reduce((n, j) => n + j.items, 0);
      while (replicate.predictions.size - before < Math.floor(items * share)) await sleep(20);
      await server.kill("SIGKILL");
      // The predictions end while the server is down: their callbacks fail and are retried.
      await replicate.clock.advance(90_000);
      await server.restart();
      const states = await waitForJobs(jobs, 240_000);
      expect(
        states.map((s) => s.status),
        JSON.stringify(states.filter((s) => s.status !== "succeeded")),
      ).toEqual(jobs.map(() => "succeeded"));
    }

    const expected = all.reduce((n, j) => n + j.items, 0);
    expect(replicate.predictions.size).toBe(expected);
    const creates = replicate.requests.filter((r) => r.method === "POST" && r.path.endsWith("/predictions") && r.status === 201);
    expect(creates).toHaveLength(expected);

    const ids = all.map((j) => j.id);
    const items = await handle.db.select().from(photoJobItems).where(inArray(photoJobItems.jobId, ids));
    expect(items).toHaveLength(expected);
    expect(new Set(items.map((r) => r.predictionId))).toEqual(new Set(replicate.predictions.keys()));
    expect(items.every((r) => r.status === "succeeded")).toBe(true);

    await expectOneChargePerItem(handle.db, ids, expected);
  }, 1_200_000);

  it("a synchronous request whose server died: the retry with the same Idempotency-Key continues the one prediction, one charge", async () => {
    const before = replicate.predictions.size;
    const body = { productImages: [{ dataUrl: product }], scenePrompt: "on a shelf", model: "standard", outputResult: "url" };
    const controller = new AbortController();
    const first = fetch(`${server.baseUrl}/api/image/product-photography`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json", "idempotency-key": "sync-after-kill" },
      body: JSON.stringify(body),
      signal: controller.signal,
    }).catch(() => null);
    while (replicate.predictions.size === before) await sleep(20);
    controller.abort(); // the client goes away
    await server.kill("SIGKILL"); // and the request's runner dies with the server
    await first;
    await server.restart();

    let answer: Awaited<ReturnType<typeof api>> | undefined;
    const deadline = Date.now() + 180_000;
    while (Date.now() < deadline) {
      await replicate.clock.advance(90_000);
      answer = await api("POST", "/api/image/product-photography", body, { "idempotency-key": "sync-after-kill" });
      if (answer.status !== 409) break;
      expect(answer.json).toMatchObject({ error: { code: "REQUEST_IN_PROGRESS" } });
      await sleep(2000);
    }
    expect(answer!.status, JSON.stringify(answer!.json)).toBe(200);
    expect(replicate.predictions.size - before).toBe(1);
    const replay = await api("POST", "/api/image/product-photography", body, { "idempotency-key": "sync-after-kill" });
    expect(replay.status).toBe(200);
    expect(replay.json.data.imageUrl).toBe(answer!.json.data.imageUrl);
    const jobId = /photo\/out\/([0-9a-f-]{36})\//.exec(answer!.json.data.imageUrl)![1]!;
    expect(await handle.db.select().from(generations).where(eq(generations.jobId, jobId))).toHaveLength(1);
    expect((await fetch(answer!.json.data.imageUrl)).headers.get("content-type")).toBe("image/png");
  }, 300_000);
});
