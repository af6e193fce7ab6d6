/**
 * A photo request holds its job, and the credits it reserved, while it loads its inputs (each image may take
 * up to its fetch timeout), whether it answers with the image or with a 202 for an async job: its lock is
 * renewed from the claim on. Here the logo and the reference come from a slow https host (7 s each), and the
 * service's clock is moved past the claim's first lock while the reference loads. The sweep then finds the
 * request alive: a synchronous one keeps its held credits and a retry with the same Idempotency-Key is told
 * 409 REQUEST_IN_PROGRESS; an async one is not taken (and failed) by the sweep. Each image is charged once.
 */
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { resumePhotoJobs } from "../../src/photo/async-jobs";
import { SYNC_LOCK_MS } from "../../src/photo/jobs";
import { startImageServer, type ImageServer } from "../helpers/image-server";
import { logoDataUrl, photoHarness, productJpeg, type PhotoHarness } from "./fixtures";

/** Each slow answer takes this long: well under the 10 s fetch timeout, and two of them outlast a lock renewal. */
const SLOW_MS = 7_000;

let server: ImageServer;
let h: PhotoHarness;
/** Added to the service's clock: the test moves time on without waiting for it. */
let offset = 0;
const referenceRequested: Array<() => void> = [];

beforeAll(async () => {
  server = await startImageServer();
  const logo = Buffer.from((await logoDataUrl()).split(",")[1]!, "base64");
  const product = await productJpeg();
  server.route("/logo.png", (_req, res) => void setTimeout(() => res.writeHead(200, { "content-type": "image/png" }).end(logo), SLOW_MS));
  server.route("/reference.jpg", (_req, res) => {
    for (const told of referenceRequested.splice(0)) told();
    setTimeout(() => res.writeHead(200, { "content-type": "image/jpeg" }).end(product), SLOW_MS);
  });
  server.route("/product.jpg", (_req, res) => res.writeHead(200, { "content-type": "image/jpeg" }).end(product));
  h = await photoHarness({
    env: { PHOTO_SIGNUP_CREDITS: "100" },
    fetcherTestAllow: { origins: [server.origin], ca: server.ca },
    overrides: { clock: { now: () => new Date(Date.now() + offset) } },
  });
});
beforeEach(() => {
  offset = 0;
});
afterAll(async () => {
  await h?.close();
  await server?.close();
});

type Json = Record<string, any>;

const body = () => ({
  productImages: [{ url: server.url("/product.jpg") }],
  logoImage: server.url("/logo.png"),
  referenceImage: server.url("/reference.jpg"),
  promptId: "studio-white-sweep",
  model: "standard",
  outputResult: "url",
});

/**
 * Sends the request and returns once the service's clock has been moved past the lock the claim set (but not
 * past its first renewal), while the reference is still loading; the request's answer is returned to await
 * (in an object: an async function's returned promise would be awaited with it).
 */
async function pastTheFirstLock(headers: Record<string, string>): Promise<{ answer: Promise<Response> }> {
  const referenceAsked = new Promise<void>((resolve) => referenceRequested.push(resolve));
  const sent = Date.now();
  const answer = Promise.resolve(h.post(body(), headers));
  const early = await Promise.race([referenceAsked.then(() => null), answer.then(async (r) => `${r.status} ${await r.clone().text()}`)]);
  expect(early, "the request ended before its reference was asked for").toBeNull();
  // The first renewal comes a third of SYNC_LOCK_MS after the claim; then time moves past the claim's lock.
  await new Promise((r) => setTimeout(r, sent + SYNC_LOCK_MS / 3 + 1_500 - Date.now()));
  offset = SYNC_LOCK_MS - 5_000;
  return { answer };
}

it("a synchronous request keeps its job and its credits while its inputs load slowly; a retry meanwhile is 409", { timeout: 60_000 }, async () => {
  const before = (await h.get("/api/image/credits")).balance as number;
  const { answer: first } = await pastTheFirstLock({ "Idempotency-Key": "slow-inputs" });

  await resumePhotoJobs(h.services); // the sweep: a request whose lock ran out would lose its held credits here
  const retry = await h.post(body(), { "Idempotency-Key": "slow-inputs" });
  expect(retry.status, await retry.clone().text()).toBe(409);
  expect(((await retry.json()) as { error: { code: string } }).error.code).toBe("REQUEST_IN_PROGRESS");

  const answer = await first;
  expect(answer.status, await answer.clone().text()).toBe(200);
  const data = ((await answer.json()) as { data: { cost: { credits: number }; balance: number } }).data;
  expect(data.cost.credits).toBe(4);
  expect(data.balance).toBe(before - 4);
  const replay = await h.post(body(), { "Idempotency-Key": "slow-inputs" });
  expect(replay.status).toBe(200);
  expect(replay.headers.get("idempotency-replayed")).toBe("true");
  expect((await h.get("/api/image/credits")).balance).toBe(before - 4);
});

it("an async request whose inputs load slowly is not taken by the sweep meanwhile; its job succeeds", { timeout: 60_000 }, async () => {
  const before = (await h.get("/api/image/credits")).balance as number;
  const { answer } = await pastTheFirstLock({ Prefer: "respond-async" });
  await resumePhotoJobs(h.services); // a sweep that took the job now would fail it: its inputs are not stored yet

  const accepted = await answer;
  expect(accepted.status, await accepted.clone().text()).toBe(202);
  const id = ((await accepted.json()) as { data: Json }).data.id as string;
  let job: Json = {};
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    job = await h.get(`/api/image/product-photography/jobs/${id}`);
    if (job.status === "succeeded" || job.status === "failed") break;
  }
  expect(job.status, JSON.stringify(job)).toBe("succeeded");
  expect((await h.get("/api/image/credits")).balance).toBe(before - 4);
});
