/**
 * The embedded webhook sender when a message cannot go out as usual: its resource was removed before the
 * first send, it cannot be signed (the endpoint's secret is unreadable), or it belongs to an endpoint that
 * was disabled while one of its messages was being sent. Each ends in the delivery log (never a claim that
 * expires and comes back for ever), and a message the sender cannot claim does not keep it looking.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { createTestApp, type TestApp } from "../helpers/harness";
import { startReceiver, waitUntil, type Receiver } from "../helpers/webhook-receiver";
import { startWebhookSender, type WebhookSender } from "../../functions/node/webhook-sender";
import { productDataUrl } from "../photo/fixtures";

type Json = Record<string, any>;

let h: TestApp;
/** The service's clock runs this far ahead of the wall clock (days pass in a test without waiting for them). */
let skewMs = 0;
let key: string;
const receivers: Receiver[] = [];
const senders: WebhookSender[] = [];

beforeAll(async () => {
  h = await createTestApp({
    env: { WEBHOOK_ALLOW_LOOPBACK: "on", WEBHOOK_RETRY_SCHEDULE: "0,0.05,0.05", RATE_LIMIT_PHOTO: "1000", RATE_LIMIT_SOCIAL_WRITE: "100000" },
    overrides: { clock: { now: () => new Date(Date.now() + skewMs) } },
  });
  key = (await h.createUser()).apiKey;
});
// Each test's senders stop with it, so none sends another test's messages.
afterEach(async () => {
  await Promise.all(senders.splice(0).map((s) => s.stop()));
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await h?.close();
});

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await h.app.request(path, {
    method,
    headers: body === undefined ? h.auth(key) : h.json(key),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function receiver(respond?: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(respond);
  receivers.push(r);
  return r;
}

function sender(options: Parameters<typeof startWebhookSender>[1] = {}, services = h.services) {
  const s = startWebhookSender(services, { pollMs: 100, ...options });
  senders.push(s);
  return s;
}

const deliveries = async (endpointId: string) => (await call("GET", `/api/v1/webhooks/${endpointId}/deliveries`)).body.data.items as Json[];

describe("a message that cannot be sent as it is", () => {
  it("a job's message whose image was deleted from the gallery before the first send fails as gone; nothing is sent", async () => {
    const r = await receiver();
    const ep = (await call("POST", "/api/v1/webhooks", { url: r.url, events: ["photo.job.succeeded"] })).body.data;
    const product = await productDataUrl();
    const res = await h.app.request("/api/image/product-photography", {
      method: "POST",
      headers: h.json(key, { Prefer: "respond-async" }),
      body: JSON.stringify({ productImages: [{ dataUrl: product }], promptId: "studio-white-sweep", model: "standard", resolution: "1K" }),
    });
    expect(res.status).toBe(202);
    const jobId = ((await res.json()) as Json).data.id as string;
    await waitUntil("the job succeeded", async () => (await call("GET", `/api/image/product-photography/jobs/${jobId}`)).body.data.status === "succeeded");
    // The job's PNG answer is made from its gallery image, which the user deletes before any sender runs.
    const gallery = (await call("GET", "/api/image/gallery")).body.data.items as Json[];
    const item = gallery.find((g) => String(g.imageUrl).includes(`/photo/out/${jobId}/`))!;
    expect((await call("DELETE", `/api/image/gallery/${item.id}`)).status).toBe(200);

    sender();
    const [delivery] = await waitUntil("the delivery ended", async () => {
      const items = await deliveries(ep.id);
      return items.length === 1 && items[0]!.status !== "pending" && items;
    });
    expect(delivery).toMatchObject({ eventType: "photo.job.succeeded", status: "failed" });
    expect(delivery!.attempts.at(-1)).toMatchObject({ status: null, error: "the resource no longer exists" });
    expect(r.received).toHaveLength(0);
  });

  it("a message that cannot be signed is logged at each attempt of the schedule, then fails; the endpoint is not held to blame", async () => {
    const r = await receiver();
    const ep = (await call("POST", "/api/v1/webhooks", { url: r.url })).body.data;
    await h.db.execute(sql`update webhook_endpoints set secret_ciphertext = 'not a ciphertext' where id = ${ep.id}`);
    expect((await call("POST", `/api/v1/webhooks/${ep.id}/test`)).status).toBe(202);
    sender();
    const [delivery] = await waitUntil("the delivery failed", async () => {
      const items = await deliveries(ep.id);
      return items[0]?.status === "failed" && items;
    });
    expect(delivery!.attempts).toHaveLength(3);
    for (const attempt of delivery!.attempts) expect(attempt).toMatchObject({ status: null, error: "the message could not be prepared on our side" });
    expect(r.received).toHaveLength(0);
    const endpoint = (await call("GET", `/api/v1/webhooks/${ep.id}`)).body.data;
    expect(endpoint).toMatchObject({ enabled: true });
  });
});

describe("an endpoint disabled while its message is being sent", () => {
  it("leaves that message unsent, and the sender does not look for it again and again", async () => {
    // The answer takes 2 s, so the endpoint is disabled while the attempt is still waiting for it.
    const r = await receiver(() => ({ status: 500, delayMs: 2000 }));
    const ep = (await call("POST", "/api/v1/webhooks", { url: r.url })).body.data;
    // A sender of its own, on a clock that counts its looks (each look at the queue reads the time once).
    let looks = 0;
    const clock = { now: () => (looks++, h.services.clock.now()) };
    const s = startWebhookSender({ ...h.services, clock }, { pollMs: 1000 });
    senders.push(s);
    await call("POST", `/api/v1/webhooks/${ep.id}/test`);
    await waitUntil("the first attempt is under way", () => r.received.length === 1);
    expect((await call("PATCH", `/api/v1/webhooks/${ep.id}`, { enabled: false })).status).toBe(200);
    await waitUntil("the attempt was recorded", async () => (await deliveries(ep.id))[0]?.attempts.length === 1);

    const from = looks;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    // Once a second (its poll) and a few for the attempt's own end; a sender that kept looking at the
    // unclaimable message would have looked hundreds of times.
    expect(looks - from).toBeLessThan(20);
    expect(r.received).toHaveLength(1);
    const [delivery] = await deliveries(ep.id);
    expect(delivery!.status).toBe("pending");
  });
});

describe("an endpoint that keeps failing", () => {
  const DAY = 24 * 60 * 60_000;

  it("is disabled once its failures have run for 5 days; a failure after days without one begins a new run", async () => {
    const r = await receiver(() => 500);
    const ep = (await call("POST", "/api/v1/webhooks", { url: r.url })).body.data;
    sender();
    const endpoint = async () => (await call("GET", `/api/v1/webhooks/${ep.id}`)).body.data as Json;
    /** Sends a test message and waits until its delivery has ended (every attempt failed) or is parked. */
    const test = async (ends: "failed" | "pending") => {
      const before = (await deliveries(ep.id)).length;
      expect((await call("POST", `/api/v1/webhooks/${ep.id}/test`)).status).toBe(202);
      return waitUntil(`the message ${ends}`, async () => {
        const items = await deliveries(ep.id);
        const newest = items.length > before && items[0]!;
        return newest && newest.status === ends && (ends === "failed" || newest.nextAttemptAt === null) && newest;
      });
    };

    await test("failed");
    const firstRun = Date.parse((await endpoint()).failingSince);
    // Six days without a message: the next failure begins a new run instead of disabling the endpoint.
    skewMs += 6 * DAY;
    await test("failed");
    const run = await endpoint();
    expect(run.enabled).toBe(true);
    expect(Date.parse(run.failingSince)).toBeGreaterThan(firstRun + 6 * DAY - 60_000);
    // A failed message every day: on the fifth day the run is 5 days long and its first failure disables the
    // endpoint; that message waits with it.
    for (let day = 1; day <= 4; day++) {
      skewMs += DAY;
      await test("failed");
      expect((await endpoint()).enabled, `day ${day}`).toBe(true);
    }
    skewMs += DAY;
    const parked = await test("pending");
    expect(parked.attempts).toHaveLength(1);
    expect(await endpoint()).toMatchObject({ enabled: false, disabledReason: "failing" });
    skewMs = 0;
  });
});
