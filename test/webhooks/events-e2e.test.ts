/**
 * Every event type end to end on `npm start` (PGlite, the platform sandbox, WEBHOOK_ALLOW_LOOPBACK turned on
 * by the embedded defaults) with a real receiver on 127.0.0.1: posts published, partly published, failed and
 * cancelled, targets published and failed, an account needing a reconnect, asynchronous photo jobs (on a
 * Replicate stand-in, one of whose predictions fails), a test
 * message. Each state change arrives once, signed (verified by the `standardwebhooks` package), valid against
 * its schema in the document's `webhooks` section, with the resource as the API answers it; nothing else
 * arrives.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFile } from "node:fs/promises";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";
import { startReceiver, verified, waitUntil, type Receiver } from "../helpers/webhook-receiver";
import { documentSchemas } from "../helpers/openapi";
import { e2eClient, settled, type E2eClient } from "../social/delivery/e2e-client";
import { startReplicateFake, type ReplicateFake } from "../helpers/replicate-fake";

let server: ServerProcess;
let api: E2eClient;
let receiver: Receiver;
let replicate: ReplicateFake;

beforeAll(async () => {
  receiver = await startReceiver();
  // Photo jobs on a Replicate stand-in, whose predictions fail when the prompt asks for it.
  replicate = await startReplicateFake();
  replicate.script("*", { failPromptContaining: "FAIL-THIS-ONE" });
  server = await startServerProcess({
    env: {
      RATE_LIMIT_SOCIAL_READ: "100000",
      RATE_LIMIT_SOCIAL_WRITE: "100000",
      RATE_LIMIT_PHOTO: "1000",
      REPLICATE_API_TOKEN: replicate.token,
      REPLICATE_API_BASE: replicate.url,
      PHOTO_SIGNUP_CREDITS: "100000",
    },
  });
  api = e2eClient(server.baseUrl, server.apiKey);
}, 90_000);
afterAll(async () => {
  await server?.dispose();
  await receiver?.close();
  await replicate?.close();
});

const json = (apiKey: string) => ({ authorization: `Bearer ${apiKey}`, "content-type": "application/json" });

describe("events on npm start", () => {
  it("every state change arrives once, signed, valid against its schema, carrying the resource", async () => {
    const created = await fetch(`${server.baseUrl}/api/v1/webhooks`, {
      method: "POST",
      headers: json(server.apiKey),
      body: JSON.stringify({ url: receiver.url }),
    });
    expect(created.status).toBe(201);
    const endpoint = ((await created.json()) as { data: { id: string; secret: string } }).data;

    const [page, photo, refusing, expired] = await Promise.all([
      api.connect("pageplatform", "events page"),
      api.connect("photoplatform", "events photo"),
      api.connect("pageplatform", "events refusing"),
      api.connect("pageplatform", "events expired"),
    ]);
    await api.fault(refusing.id, "invalid", 2);
    await api.fault(expired.id, "auth");
    const image = await api.image();

    const published = await api.createPost({ accountIds: [page.id, photo.id], caption: "all out", images: [image] });
    const partly = await api.createPost({ accountIds: [page.id, refusing.id], caption: "half out" });
    const failed = await api.createPost({ accountIds: refusing.id, caption: "none out" });
    const reconnect = await api.createPost({ accountIds: expired.id, caption: "token gone" });
    const later = await api.createPost({ accountIds: page.id, caption: "never", scheduledFor: new Date(Date.now() + 3_600_000).toISOString() });
    await api.cancelPost(later.id);
    await Promise.all([published, partly, failed, reconnect].map((p) => settled(api, p.id, 30_000)));

    const product = (await readFile(new URL("../../docs/photo/product.jpg", import.meta.url))).toString("base64");
    const photoJob = async (extra: Record<string, unknown>) => {
      const job = await fetch(`${server.baseUrl}/api/image/product-photography`, {
        method: "POST",
        headers: { ...json(server.apiKey), prefer: "respond-async" },
        body: JSON.stringify({ productImages: [{ dataUrl: `data:image/jpeg;base64,${product}` }], resolution: "1K", outputResult: "url", ...extra }),
      });
      expect(job.status).toBe(202);
      return ((await job.json()) as { data: { id: string } }).data.id;
    };
    const jobId = await photoJob({ promptId: "studio-white-sweep" });
    const failedJobId = await photoJob({ scenePrompt: "FAIL-THIS-ONE on a marble counter" });

    const test = await fetch(`${server.baseUrl}/api/v1/webhooks/${endpoint.id}/test`, { method: "POST", headers: json(server.apiKey) });
    expect(test.status).toBe(202);

    const expected = [
      ["post.target.published", published.id, page.id],
      ["post.target.published", published.id, photo.id],
      ["post.published", published.id, null],
      ["post.target.published", partly.id, page.id],
      ["post.target.failed", partly.id, refusing.id],
      ["post.partially_published", partly.id, null],
      ["post.target.failed", failed.id, refusing.id],
      ["post.failed", failed.id, null],
      ["post.target.failed", reconnect.id, expired.id],
      ["post.failed", reconnect.id, null],
      ["account.reconnect_required", expired.id, null],
      ["post.cancelled", later.id, null],
      ["photo.job.succeeded", jobId, null],
      ["photo.job.failed", failedJobId, null],
      ["webhook.test", endpoint.id, null],
    ].map((e) => e.filter(Boolean).join(" "));

    const doc = await (await fetch(`${server.baseUrl}/openapi.json`)).json();
    const schemas = documentSchemas(doc);
    const seen = () =>
      receiver.received.map((r) => {
        const m = verified(r, endpoint.secret);
        const subject = m.type.startsWith("post.target.")
          ? [(m.data.post as { id: string }).id, (m.data.target as { accountId: string }).accountId]
          : [m.type === "webhook.test" ? m.data.endpointId : m.data.id];
        return { key: [m.type, ...subject].join(" "), id: String(r.headers["webhook-id"]), message: m };
      });
    await waitUntil("every event", () => seen().length >= expected.length, 60_000, 200);
    await new Promise((r) => setTimeout(r, 1500));
    const messages = seen();
    expect(messages.map((m) => m.key).sort()).toEqual([...expected].sort());
    expect(new Set(messages.map((m) => m.id)).size).toBe(messages.length);

    for (const { message } of messages) {
      expect(schemas.errors(["webhooks", message.type, "post", "requestBody", "content", "application/json", "schema"], message), message.type).toEqual([]);
    }
    const one = (key: string) => messages.find((m) => m.key === key)!.message;
    expect(one(`post.published ${published.id}`).data).toMatchObject({ id: published.id, status: "published" });
    expect(one(`post.partially_published ${partly.id}`).data).toMatchObject({ status: "partially_published" });
    expect(one(`post.cancelled ${later.id}`).data).toMatchObject({ status: "cancelled" });
    const targetFailed = one(`post.target.failed ${failed.id} ${refusing.id}`).data as { target: { status: string; error: { code: string; message: string } } };
    expect(targetFailed.target.status).toBe("failed");
    expect(targetFailed.target.error.code).toBeTruthy();
    expect(targetFailed.target.error.message).toBeTruthy();
    expect(one(`account.reconnect_required ${expired.id}`).data).toMatchObject({ id: expired.id, canPublish: false });
    expect(one(`photo.job.succeeded ${jobId}`).data).toMatchObject({ id: jobId, status: "succeeded", result: { imageUrl: expect.any(String) } });
    expect(one(`photo.job.failed ${failedJobId}`).data).toMatchObject({ id: failedJobId, status: "failed", error: { code: expect.any(String) } });
    // The message's target is the one whose change it reports, as the post record shows it.
    const targetPublished = one(`post.target.published ${published.id} ${photo.id}`).data as {
      target: { accountId: string; status: string; providerPostId: string };
    };
    expect(targetPublished.target).toMatchObject({ accountId: photo.id, status: "published", providerPostId: expect.any(String) });

    // A post event's body is the post as GET answers it, key for key in the same order (PostgreSQL makes these
    // bodies, the sender the others; stored arrays may be written with jsonb's spaces).
    const asApi = async (id: string) =>
      ((await (await fetch(`${server.baseUrl}/api/v1/social/posts/${id}`, { headers: json(server.apiKey) })).json()) as { data: unknown }).data;
    const bodyOf = (key: string) => receiver.received.find((r) => messages.find((m) => m.key === key)!.id === r.headers["webhook-id"])!.body;
    for (const [key, id] of [
      [`post.published ${published.id}`, published.id],
      [`post.failed ${failed.id}`, failed.id],
    ] as const) {
      const body = bodyOf(key);
      const parsed = JSON.parse(body) as { type: string; timestamp: string; data: unknown };
      expect(JSON.stringify(parsed)).toBe(JSON.stringify({ type: parsed.type, timestamp: new Date(parsed.timestamp).toISOString(), data: await asApi(id) }));
    }
    const targetBody = JSON.parse(bodyOf(`post.target.published ${published.id} ${photo.id}`)) as { data: { target: unknown; post: unknown } };
    const post = (await asApi(published.id)) as { accounts: Array<{ accountId: string }> };
    expect(JSON.stringify(targetBody.data)).toBe(JSON.stringify({ target: post.accounts.find((a) => a.accountId === photo.id), post }));
  }, 150_000);
});
