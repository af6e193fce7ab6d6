/**
 * A synchronous photo request holds its job, and the credits it reserved, for as long as it runs, including
 * while its inputs load (each image may take up to its fetch timeout): its lock is renewed from the claim
 * on. Here the logo and the product come from a slow https host (6 s, 9 s), and the service's clock is moved
 * past the claim's first lock while the product loads; the sweep then finds the request alive, a retry with
 * the same Idempotency-Key is told 409 REQUEST_IN_PROGRESS, and the one image is charged once.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { resumePhotoJobs } from "../../src/photo/async-jobs";
import { SYNC_LOCK_MS } from "../../src/photo/jobs";
import { startImageServer, type ImageServer } from "../helpers/image-server";
import { logoDataUrl, photoHarness, productJpeg, type PhotoHarness } from "./fixtures";

/** The logo's answer takes this long, the product's PRODUCT_MS (each under the 10 s fetch timeout). */
const LOGO_MS = 6_000;
const PRODUCT_MS = 9_000;

let server: ImageServer;
let h: PhotoHarness;
/** Added to the service's clock: the test moves time on without waiting for it. */
let offset = 0;
const productRequested: Array<() => void> = [];

beforeAll(async () => {
  server = await startImageServer();
  const logo = Buffer.from((await logoDataUrl()).split(",")[1]!, "base64");
  const product = await productJpeg();
  server.route("/logo.png", (_req, res) => void setTimeout(() => res.writeHead(200, { "content-type": "image/png" }).end(logo), LOGO_MS));
  server.route("/product.jpg", (_req, res) => {
    for (const told of productRequested.splice(0)) told();
    setTimeout(() => res.writeHead(200, { "content-type": "image/jpeg" }).end(product), PRODUCT_MS);
  });
  h = await photoHarness({
    env: { PHOTO_SIGNUP_CREDITS: "100" },
    fetcherTestAllow: { origins: [server.origin], ca: server.ca },
    overrides: { clock: { now: () => new Date(Date.now() + offset) } },
  });
});

afterAll(async () => {
  await h?.close();
  await server?.close();
});

async function balance(): Promise<{ balance: number; reserved?: number }> {
  const res = await h.app.request("/api/image/credits", { headers: h.auth(h.apiKey) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { balance: number; reserved?: number } }).data;
}

it("a synchronous request keeps its job and its credits while its inputs load slowly; a retry meanwhile is 409", { timeout: 60_000 }, async () => {
  const before = (await balance()).balance;
  const body = {
    productImages: [{ url: server.url("/product.jpg") }],
    logoImage: server.url("/logo.png"),
    promptId: "studio-white-sweep",
    model: "standard",
    outputResult: "url",
  };
  const productAsked = new Promise<void>((resolve) => productRequested.push(resolve));
  const first = Promise.resolve(h.post(body, { "Idempotency-Key": "slow-inputs" }));
  const early = await Promise.race([productAsked.then(() => null), first.then(async (r) => `${r.status} ${await r.clone().text()}`)]);
  expect(early, "the request ended before its product was asked for").toBeNull();
  // The lock's first renewal comes a third of SYNC_LOCK_MS after the claim; then time moves past the lock the
  // claim set, but not past the renewed one.
  await new Promise((r) => setTimeout(r, SYNC_LOCK_MS / 3 + 1_000 - LOGO_MS));
  offset = SYNC_LOCK_MS - 5_000;

  await resumePhotoJobs(h.services); // the sweep: a request whose lock ran out would lose its held credits here
  const retry = await h.post(body, { "Idempotency-Key": "slow-inputs" });
  expect(retry.status).toBe(409);
  expect(((await retry.json()) as { error: { code: string } }).error.code).toBe("REQUEST_IN_PROGRESS");

  const answer = await first;
  expect(answer.status, await answer.clone().text()).toBe(200);
  const data = ((await answer.json()) as { data: { cost: { credits: number }; balance: number } }).data;
  expect(data.cost.credits).toBe(4);
  expect(data.balance).toBe(before - 4);
  expect((await balance()).balance).toBe(before - 4);

  const replay = await h.post(body, { "Idempotency-Key": "slow-inputs" });
  expect(replay.status).toBe(200);
  expect(replay.headers.get("idempotency-replayed")).toBe("true");
  expect((await balance()).balance).toBe(before - 4);
});
