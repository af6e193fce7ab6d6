/**
 * The edge path: the real @upstash/qstash Client publishes to a QStash fake, the fake calls the app's
 * publish route back with signed JWTs, and the real Receiver verifies them. The app is served over real
 * HTTP (the sandbox and the files it fetches are reached through PUBLIC_BASE_URL, like on the edge).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { serve, type ServerType } from "@hono/node-server";
import { deliveries, posts } from "../../../db/schema";
import { createTestApp, type TestApp } from "../../helpers/harness";
import { startQStashFake, type QStashFake } from "../../../dev/qstash-fake";
import { freePort } from "../../helpers/server-process";
import { runSweep } from "../../../src/social/delivery/sweep";
import { PUBLISH_CALLBACK_PATH } from "../../../src/adapters/queue/qstash";
import { allSettled, e2eClient, settled, waitFor, type E2eClient } from "./e2e-client";

const KEYS = { token: "qstash-test-token", currentSigningKey: "sig_current_test_key", nextSigningKey: "sig_next_test_key" };
let qstash: QStashFake;
let h: TestApp;
let server: ServerType;
let base: string;
let api: E2eClient;

beforeAll(async () => {
  qstash = await startQStashFake({ ...KEYS, retryDelayMs: 100 });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  h = await createTestApp({
    env: {
      PUBLIC_BASE_URL: base,
      QSTASH_URL: qstash.url,
      QSTASH_TOKEN: KEYS.token,
      QSTASH_CURRENT_SIGNING_KEY: KEYS.currentSigningKey,
      QSTASH_NEXT_SIGNING_KEY: KEYS.nextSigningKey,
      RATE_LIMIT_SOCIAL_READ: "100000",
    },
  });
  server = serve({ fetch: h.app.fetch, port, hostname: "127.0.0.1" });
  const { apiKey } = await h.createUser();
  api = e2eClient(base, apiKey);
});
afterAll(async () => {
  await qstash?.close();
  await new Promise((r) => server?.close(r));
  await h?.close();
});

const deliveryOf = async (postId: string) => (await h.db.select().from(deliveries).where(eq(deliveries.postId, postId)))[0]!;
const callback = (body: string, signature?: string) =>
  fetch(`${base}${PUBLISH_CALLBACK_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(signature ? { "upstash-signature": signature } : {}) },
    body,
  });

describe("QStash delivery", () => {
  it("queues each target as a message, and the signed callback publishes it; the job id is the message id", async () => {
    expect(h.services.queue.kind).toBe("qstash");
    const [page, photo] = await Promise.all([api.connect("pageplatform"), api.connect("photoplatform")]);
    const created = await api.createPost({ accountIds: [page.id, photo.id], caption: "Edge", hashtags: ["q"], images: [await api.image()] });
    const post = await settled(api, created.id, 15_000);
    for (const t of post.accounts) {
      expect(t).toMatchObject({ status: "published", attempts: 1 });
      const message = qstash.messages.get(t.jobId!)!;
      expect(message.destination).toBe(`${base}${PUBLISH_CALLBACK_PATH}`);
      expect(message.deliveries.map((d) => d.status)).toEqual([200]);
    }
    expect(await api.sandboxPosts(page.id)).toHaveLength(1);
    expect(await api.sandboxPosts(photo.id)).toHaveLength(1);
  });

  it("a duplicate delivery of the same message, even concurrent with the first, publishes once", async () => {
    const page = await api.connect("pageplatform");
    const at = Date.now() + 1500;
    const created = await api.createPost({ accountIds: page.id, caption: "Dup", scheduledFor: new Date(at).toISOString() });
    const jobId = created.accounts[0]!.jobId!;
    expect(qstash.messages.get(jobId)!.notBefore).toBeGreaterThanOrEqual(at);
    await new Promise((r) => setTimeout(r, at - Date.now() + 20));
    const statuses = await Promise.all([qstash.redeliver(jobId), qstash.redeliver(jobId), qstash.redeliver(jobId)]);
    expect(statuses).toEqual([200, 200, 200]);
    await qstash.idle();
    expect(await qstash.redeliver(jobId)).toBe(200);
    const post = await settled(api, created.id, 5000);
    expect(post.accounts[0]).toMatchObject({ status: "published", attempts: 1 });
    expect(await api.sandboxPosts(page.id)).toHaveLength(1);
  });

  it("a scheduled message is not delivered before its time; cancelling the post cancels the message", async () => {
    const page = await api.connect("pageplatform");
    const created = await api.createPost({ accountIds: page.id, caption: "Later", scheduledFor: new Date(Date.now() + 1500).toISOString() });
    const message = qstash.messages.get(created.accounts[0]!.jobId!)!;
    expect(message.state).toBe("scheduled");
    await api.cancelPost(created.id);
    expect(message.state).toBe("cancelled");
    await new Promise((r) => setTimeout(r, 2000));
    expect(message.deliveries).toEqual([]);
    expect(await api.sandboxPosts(page.id)).toEqual([]);
  });

  it("a retryable failure queues the retry as a new message at the backoff time", async () => {
    const page = await api.connect("pageplatform");
    await api.fault(page.id, "transient");
    const created = await api.createPost({ accountIds: page.id, caption: "Retry" });
    const first = created.accounts[0]!.jobId!;
    const retrying = await waitFor(
      "the retry to be queued",
      async () => {
        const row = await deliveryOf(created.id);
        return row.jobId !== first && row.status === "failed" ? row : undefined;
      },
      5000,
    );
    expect(qstash.messages.get(retrying.jobId!)!.notBefore).toBeGreaterThanOrEqual(retrying.nextAttemptAt!.getTime());
    const post = await settled(api, created.id, 15_000);
    expect(post.accounts[0]).toMatchObject({ status: "published", attempts: 2, jobId: retrying.jobId });
  }, 30_000);

  it("a target due beyond QStash's 7 days gets its message from the sweep once it is 7 days away", async () => {
    const page = await api.connect("pageplatform");
    const at = new Date(Date.now() + 30 * 86_400_000);
    const created = await api.createPost({ accountIds: page.id, caption: "Next month", scheduledFor: at.toISOString() });
    expect(created.accounts[0]!.jobId).toBeNull();
    const before = new Date(Date.now() - 10 * 60_000);
    await h.db.update(deliveries).set({ updatedAt: before }).where(eq(deliveries.postId, created.id));
    await runSweep(h.services);
    expect((await deliveryOf(created.id)).jobId).toBeNull();
    // A little under 7 days before its time (the clock moved on), the sweep queues it for that time.
    const near = new Date(Date.now() + 7 * 86_400_000 - 60_000);
    await h.db.update(deliveries).set({ nextAttemptAt: near }).where(eq(deliveries.postId, created.id));
    await h.db.update(posts).set({ scheduledFor: near }).where(eq(posts.id, created.id));
    await runSweep(h.services);
    const queued = await deliveryOf(created.id);
    expect(queued.jobId).not.toBeNull();
    const message = qstash.messages.get(queued.jobId!)!;
    expect([message.state, message.notBefore]).toEqual(["scheduled", Math.ceil(near.getTime() / 1000) * 1000]);
    await api.cancelPost(created.id);
    expect(message.state).toBe("cancelled");
  });

  it("the sweep re-queues a due target whose message was lost", async () => {
    const page = await api.connect("pageplatform");
    const created = await api.createPost({ accountIds: page.id, caption: "Lost message", scheduledFor: new Date(Date.now() + 3_600_000).toISOString() });
    const stale = new Date(Date.now() - 10 * 60_000);
    await h.db.update(deliveries).set({ nextAttemptAt: stale, jobId: null, updatedAt: stale }).where(eq(deliveries.postId, created.id));
    expect((await runSweep(h.services)).requeued).toBe(1);
    const [post] = await allSettled(api, [created.id], 10_000);
    expect(post!.accounts[0]).toMatchObject({ status: "published", attempts: 1 });
    expect(post!.accounts[0]!.jobId).not.toBe(created.accounts[0]!.jobId);
  });
});

describe("signature check", () => {
  it("refuses a missing, forged, re-targeted or body-swapped signature with 401 and does nothing", async () => {
    const page = await api.connect("pageplatform");
    const created = await api.createPost({ accountIds: page.id, caption: "Forged", scheduledFor: new Date(Date.now() + 3_600_000).toISOString() });
    const row = await deliveryOf(created.id);
    await h.db.update(deliveries).set({ nextAttemptAt: new Date() }).where(eq(deliveries.id, row.id));
    const body = JSON.stringify({ deliveryId: row.id });
    const url = `${base}${PUBLISH_CALLBACK_PATH}`;
    const attempts = [
      await callback(body),
      await callback(body, await qstash.sign(body, url, "sig_attacker_key")),
      await callback(body, await qstash.sign(body, "https://elsewhere.test/hook")),
      await callback(body, await qstash.sign(JSON.stringify({ deliveryId: crypto.randomUUID() }), url)),
      await callback(body, "not.a.jwt"),
    ];
    for (const res of attempts) {
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED");
    }
    expect(await deliveryOf(created.id)).toMatchObject({ status: "pending", attempts: 0 });
    expect(await api.sandboxPosts(page.id)).toEqual([]);

    // Signed with the next key (during a key rotation): accepted.
    const res = await callback(body, await qstash.sign(body, url, KEYS.nextSigningKey));
    expect(res.status).toBe(200);
    expect(await deliveryOf(created.id)).toMatchObject({ status: "published", attempts: 1 });
  });

  it("a signed message that names no delivery is acknowledged and ignored, so QStash stops retrying it", async () => {
    const body = "{}";
    const res = await callback(body, await qstash.sign(body, `${base}${PUBLISH_CALLBACK_PATH}`));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { outcome: "ignored" } });
  });
});
