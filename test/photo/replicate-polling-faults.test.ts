/**
 * An async job on Replicate without callbacks (Node with no PUBLIC_BASE_URL: its runner polls the
 * predictions) whose storage fails once while one item is being finished. The fault passes: that item is
 * given back and finished by the next sweep (the job is not failed for it), the job succeeds with both images,
 * and each is charged once.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { resumePhotoJobs } from "../../src/photo/async-jobs";
import { RECHECK_MS } from "../../src/photo/items";
import { startReplicateFake, type ReplicateFake } from "../helpers/replicate-fake";
import { photoHarness, productDataUrl, type PhotoHarness } from "./fixtures";

type Json = Record<string, any>;

let replicate: ReplicateFake;
let h: PhotoHarness;
/** The service's clock runs this far ahead of the wall clock (the test moves it to the sweep's next look). */
let skewMs = 0;

beforeAll(async () => {
  replicate = await startReplicateFake();
  h = await photoHarness({
    env: { REPLICATE_API_TOKEN: replicate.token, REPLICATE_API_BASE: replicate.url, PHOTO_SIGNUP_CREDITS: "100" },
    overrides: { clock: { now: () => new Date(Date.now() + skewMs) } },
  });
}, 60_000);
afterAll(async () => {
  await h?.close();
  await replicate?.close();
});

it("a storage fault while finishing one item: the item is finished by the sweep, the job succeeds, each image charged once", { timeout: 60_000 }, async () => {
  replicate.script("*", { polls: 1 });
  // The first write of item 0's image fails, as a storage outage would.
  const storage = h.services.storage;
  const put = storage.put.bind(storage);
  let faults = 0;
  storage.put = async (key, bytes, contentType) => {
    if (faults === 0 && /^photo\/out\/[^/]+\/0\.png$/.test(key)) {
      faults++;
      throw new Error("storage unavailable");
    }
    return put(key, bytes, contentType);
  };

  const before = (await h.get("/api/image/credits")).balance as number;
  const product = await productDataUrl();
  const res = await h.post(
    {
      productImages: [
        { dataUrl: product, label: "a" },
        { dataUrl: product, label: "b" },
      ],
      scenePrompt: "on a beach",
      model: "standard",
      outputResult: "url",
    },
    { Prefer: "respond-async" },
  );
  expect(res.status).toBe(202);
  const id = ((await res.json()) as { data: Json }).data.id as string;

  // The runner finishes item 1 and gives item 0 back; the job stays running.
  let job: Json = {};
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    job = await h.get(`/api/image/product-photography/jobs/${id}`);
    if (faults === 1 && (await h.get("/api/image/credits")).balance === before - 4) break;
  }
  expect(faults).toBe(1);
  job = await h.get(`/api/image/product-photography/jobs/${id}`);
  expect(job.status, JSON.stringify(job)).toBe("running");

  // The sweep's next look at the given-back item finishes it, and the job.
  skewMs += RECHECK_MS + 1_000;
  for (const deadline = Date.now() + 20_000; job.status === "running" && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    await resumePhotoJobs(h.services);
    job = await h.get(`/api/image/product-photography/jobs/${id}`);
  }
  expect(job.status, JSON.stringify(job)).toBe("succeeded");
  expect(job.result.images.map((i: Json) => [i.label, i.status])).toEqual([
    ["a", "succeeded"],
    ["b", "succeeded"],
  ]);
  for (const image of job.result.images) expect((await h.app.request(new URL(image.imageUrl).pathname)).status).toBe(200);
  expect((await h.get("/api/image/credits")).balance).toBe(before - 8);
});
