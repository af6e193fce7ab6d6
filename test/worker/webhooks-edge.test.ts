/**
 * Webhooks in workerd: `npm run dev:edge` (the Worker as deployed, Neon over the local bridge, the QStash
 * stand-in calling the Worker back, the platform sandbox, WEBHOOK_ALLOW_LOOPBACK on) with a real receiver on
 * 127.0.0.1. A post's events, a test message and a retried one all go out as QStash messages to
 * /api/internal/webhooks/send, signed and verified by the `standardwebhooks` package; a receiver answering
 * 500 twice gets the same webhook-id three times; the delivery log and a replay work as on Node; after a
 * rotation (a transaction on the WebSocket path) both secrets sign.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";
import { startReceiver, verified, waitUntil, type Receiver } from "../helpers/webhook-receiver";

let server: ServerProcess;
let scratch: ScratchDatabase;
let receiver: Receiver;
let flaky: Receiver;

beforeAll(async () => {
  scratch = await createScratchDatabase();
  [receiver, flaky] = await Promise.all([startReceiver(), startReceiver((n) => (n <= 2 ? 500 : 200))]);
  server = await startServerProcess({
    entry: "dev/edge.ts",
    env: { DATABASE_URL: scratch.url, WEBHOOK_RETRY_SCHEDULE: "0,1,1,1", RATE_LIMIT_SOCIAL_READ: "100000", RATE_LIMIT_SOCIAL_WRITE: "100000" },
    startTimeoutMs: 120_000,
  });
}, 150_000);
afterAll(async () => {
  for (const step of [() => server?.dispose(), () => scratch?.drop(), () => receiver?.close(), () => flaky?.close()]) await step()?.catch(() => {});
});

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${server.apiKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json", "idempotency-key": crypto.randomUUID() }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as { data: Record<string, any> } };
};

describe("webhooks in workerd through the QStash stand-in", () => {
  it("a post's events and a test message arrive signed; a failing receiver gets retries with the same webhook-id; replay works", {
    timeout: 120_000,
  }, async () => {
    const created = await api("POST", "/api/v1/webhooks", { url: receiver.url });
    expect(created.status).toBe(201);
    const endpoint = created.body.data as { id: string; secret: string };
    const account = (await api("POST", "/sandbox/accounts", { platform: "pageplatform", name: "edge hooks" })).body.data as { id: string };
    const post = (await api("POST", "/api/v1/social/posts", { accountIds: account.id, caption: "from the edge" })).body.data as { id: string };
    expect((await api("POST", `/api/v1/webhooks/${endpoint.id}/test`)).status).toBe(202);

    await waitUntil("three messages", () => receiver.received.length >= 3, 60_000, 100);
    const messages = receiver.received.map((r) => verified(r, endpoint.secret));
    expect(messages.map((m) => m.type).sort()).toEqual(["post.published", "post.target.published", "webhook.test"]);
    expect(messages.find((m) => m.type === "post.published")!.data).toMatchObject({ id: post.id, status: "published" });

    const other = await api("POST", "/api/v1/webhooks", { url: flaky.url, events: ["post.published"] });
    const flakyEndpoint = other.body.data as { id: string; secret: string };
    const test = await api("POST", `/api/v1/webhooks/${flakyEndpoint.id}/test`);
    await waitUntil("three attempts", () => flaky.received.length >= 3, 60_000, 100);
    expect(new Set(flaky.received.map((r) => r.headers["webhook-id"]))).toEqual(new Set([test.body.data.webhookId]));
    for (const r of flaky.received) verified(r, flakyEndpoint.secret);
    const log = await waitUntil(
      "the log",
      async () => {
        const items = (await api("GET", `/api/v1/webhooks/${flakyEndpoint.id}/deliveries`)).body.data.items as Array<{
          status: string;
          attempts: Array<{ status: number }>;
        }>;
        return items[0]?.status === "delivered" && items[0];
      },
      30_000,
      200,
    );
    expect(log.attempts.map((a) => a.status)).toEqual([500, 500, 200]);

    const replay = await api("POST", `/api/v1/webhooks/${flakyEndpoint.id}/deliveries/${test.body.data.id}/replay`);
    expect(replay.status).toBe(202);
    await waitUntil("the replay", () => flaky.received.length >= 4, 30_000, 100);
    expect(flaky.received[3]!.headers["webhook-id"]).toBe(test.body.data.webhookId);
    expect(flaky.received[3]!.body).toBe(flaky.received[0]!.body);

    // A rotation (a transaction on Neon's WebSocket path): both secrets sign the next message.
    const rotated = await api("POST", `/api/v1/webhooks/${endpoint.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    await api("POST", `/api/v1/webhooks/${endpoint.id}/test`);
    await waitUntil("the test after rotating", () => receiver.received.length >= 4, 30_000, 100);
    const signed = receiver.received[3]!;
    expect(String(signed.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    for (const secret of [endpoint.secret, rotated.body.data.secret]) verified(signed, secret);
  });
});
