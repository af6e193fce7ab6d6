/**
 * How soon an async photo job on Replicate ends after its prediction does: the time from the prediction's
 * end (the Replicate stand-in's clock moved past a 90 s prediction) to the job reading `succeeded`, for a
 * job of 1 and of 4 items (standard, 1K, url output). Ours: finished by the signed webhook, on Node (the app
 * behind a listener at PUBLIC_BASE_URL) and in workerd (the Worker as deployed on dev:edge's stand-ins). The
 * peer: the same Node app without PUBLIC_BASE_URL, whose runner polls the prediction (1 s growing to 4 s),
 * as every job ran before callbacks. Each prediction runs RUNNING_MS of wall time before it ends. Medians
 * of RUNS jobs each, after one warm-up job.
 *
 * Run alone: `npx tsx bench/photo-callback.ts`; or with the others: `npm run bench -- photo-callback`.
 */
import { serve } from "@hono/node-server";
import { openNodeDb } from "../db/node";
import { startLocalEdge } from "../dev/edge-worker";
import { createScratchDatabase } from "../dev/postgres";
import { createApiKey, createUser } from "../src/http/api-keys";
import { productDataUrl } from "../test/photo/fixtures";
import { createTestApp } from "../test/helpers/harness";
import { startReplicateFake, type ReplicateFake } from "../test/helpers/replicate-fake";
import { freePort } from "../test/helpers/server-process";
import { middle } from "./timing";

const RUNS = 3;
const PREDICTION_MS = 90_000;
/**
 * Wall time a prediction runs before the test ends it: long enough for the polling runner to reach its
 * steady interval (1 s growing by half to 4 s), as it has by the end of a real 90 s prediction.
 */
const RUNNING_MS = 10_000;

type Api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; json: any }>;

/** One job: posted, its predictions left running, then ended; answers ms from the end to `succeeded`. */
async function oneJob(api: Api, replicate: ReplicateFake, product: string, items: number): Promise<number> {
  const before = replicate.predictions.size;
  const { status, json } = await api(
    "POST",
    "/api/image/product-photography",
    {
      productImages: Array.from({ length: items }, () => ({ dataUrl: product })),
      scenePrompt: "on a marble counter",
      model: "standard",
      resolution: "1K",
      outputResult: "url",
    },
    { prefer: "respond-async" },
  );
  if (status !== 202) throw new Error(`POST answered ${status}: ${JSON.stringify(json)}`);
  while (replicate.predictions.size < before + items) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, RUNNING_MS));
  const ended = performance.now();
  await replicate.clock.advance(PREDICTION_MS);
  for (;;) {
    const job = (await api("GET", `/api/image/product-photography/jobs/${json.data.id}`)).json.data;
    if (job.status === "succeeded") return performance.now() - ended;
    if (job.status === "failed") throw new Error(JSON.stringify(job.error));
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function measure(label: string, api: Api, replicate: ReplicateFake, product: string): Promise<Record<number, number>> {
  const out: Record<number, number> = {};
  for (const items of [1, 4]) {
    await oneJob(api, replicate, product, items); // warm-up
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) times.push(await oneJob(api, replicate, product, items));
    out[items] = middle(times);
    console.log(`${label.padEnd(40)} ${items} item(s): median ${out[items]!.toFixed(0)} ms from the prediction's end to the job's end`);
  }
  return out;
}

async function nodeApp(replicate: ReplicateFake, callbacks: boolean): Promise<{ api: Api; close(): Promise<void> }> {
  const port = await freePort();
  const h = await createTestApp({
    env: {
      REPLICATE_API_TOKEN: replicate.token,
      REPLICATE_API_BASE: replicate.url,
      RATE_LIMIT_PHOTO: "100000",
      RATE_LIMIT_PHOTO_READ: "1000000",
      PHOTO_SIGNUP_CREDITS: "1000000",
      ...(callbacks ? { PUBLIC_BASE_URL: `http://127.0.0.1:${port}` } : {}),
    },
  });
  const { apiKey } = await h.createUser();
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: h.app.fetch, port, hostname: "127.0.0.1" }, () => resolve(s));
  });
  const api: Api = async (method, path, body, headers = {}) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  };
  return {
    api,
    async close() {
      await new Promise<void>((r) => server.close(() => r()));
      await h.close();
    },
  };
}

export async function benchPhotoCallback(): Promise<void> {
  const product = await productDataUrl();
  const replicate = await startReplicateFake();
  replicate.script("*", { durationMs: PREDICTION_MS });
  try {
    const node = await nodeApp(replicate, true);
    const ours = await measure("ours: webhook, Node", node.api, replicate, product);
    await node.close();

    const scratch = await createScratchDatabase();
    const handle = await openNodeDb({ url: scratch.url, poolSize: 1 });
    const { userId } = await createUser(handle.db, "bench@example.test");
    const key = (await createApiKey(handle.db, userId)).key;
    const port = await freePort();
    const edge = await startLocalEdge({
      databaseUrl: scratch.url,
      port,
      vars: {
        PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
        REPLICATE_API_TOKEN: replicate.token,
        REPLICATE_API_BASE: replicate.url,
        RATE_LIMIT_PHOTO: "100000",
        RATE_LIMIT_PHOTO_READ: "1000000",
        PHOTO_SIGNUP_CREDITS: "1000000",
        LOG_LEVEL: "warn",
      },
    });
    const edgeApi: Api = async (method, path, body, headers = {}) => {
      const res = await fetch(`${edge.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, json: await res.json() };
    };
    const worker = await measure("ours: webhook, workerd", edgeApi, replicate, product);
    await edge.dispose();
    await handle.close();
    await scratch.drop();

    const polling = await nodeApp(replicate, false);
    const peer = await measure("peer: the runner polling, Node", polling.api, replicate, product);
    await polling.close();

    for (const items of [1, 4]) {
      console.log(
        `${items} item(s): Node ${(peer[items]! / ours[items]!).toFixed(1)}x sooner than polling; workerd ${(peer[items]! / worker[items]!).toFixed(1)}x`,
      );
    }
  } finally {
    await replicate.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchPhotoCallback();
