/**
 * Webhook endpoints through the API (the app in process) with the embedded sender sending to a real receiver
 * on 127.0.0.1 (WEBHOOK_ALLOW_LOOPBACK=on): the secret shown once, the URL rules, the limit, another user's
 * endpoint and delivery not found, and a message's life: signed and verified by the `standardwebhooks`
 * package, retried with the same webhook-id, 410 disabling the endpoint, two signatures during a rotation's
 * overlap and one after, the delivery log and replay. Retry delays and the overlap are shortened by config.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness";
import { startReceiver, verified, waitUntil, type Answer, type Receiver } from "../helpers/webhook-receiver";
import { startWebhookSender, type WebhookSender } from "../../functions/node/webhook-sender";
import { documentSchemas } from "../helpers/openapi";
import { WEBHOOK_EVENT_TYPES } from "../../src/webhooks/events";

let h: TestApp;
let sender: WebhookSender;
const receivers: Receiver[] = [];
let key: string;
let other: string;

beforeAll(async () => {
  h = await createTestApp({
    env: {
      WEBHOOK_ALLOW_LOOPBACK: "on",
      WEBHOOK_RETRY_SCHEDULE: "0,0.05,0.05,0.05,0.05",
      WEBHOOK_ROTATION_OVERLAP_SECONDS: "1",
      RATE_LIMIT_SOCIAL_WRITE: "100000",
      RATE_LIMIT_SOCIAL_READ: "100000",
    },
  });
  sender = startWebhookSender(h.services, { pollMs: 100 });
  key = (await h.createUser()).apiKey;
  other = (await h.createUser()).apiKey;
});
afterAll(async () => {
  await sender?.stop();
  await Promise.all(receivers.map((r) => r.close()));
  await h?.close();
});

async function receiver(respond?: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(respond);
  receivers.push(r);
  return r;
}

async function call(method: string, path: string, apiKey = key, body?: unknown) {
  const res = await h.app.request(`/api/v1/webhooks${path}`, {
    method,
    headers: body === undefined ? h.auth(apiKey) : h.json(apiKey),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

async function endpoint(url: string, extra: Record<string, unknown> = {}, apiKey = key) {
  const res = await call("POST", "", apiKey, { url, ...extra });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; secret: string; url: string };
}

const deliveries = async (id: string, apiKey = key) => (await call("GET", `/${id}/deliveries`, apiKey)).body.data.items as Array<Record<string, unknown>>;

describe("endpoints", () => {
  it("are created with a secret shown once, listed, read, changed and deleted", async () => {
    const r = await receiver();
    const res = await call("POST", "", key, { url: r.url, events: ["post.published", "post.failed"], description: "orders" });
    expect(res.status).toBe(201);
    const created = res.body.data;
    expect(res.headers.get("location")).toBe(`/api/v1/webhooks/${created.id}`);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(created.secret.slice(6), "base64").length).toBe(32);
    expect(created).toMatchObject({ url: r.url, events: ["post.published", "post.failed"], description: "orders", enabled: true, disabledReason: null });

    const listed = await call("GET", "");
    expect(listed.body.data.items.map((e: { id: string }) => e.id)).toContain(created.id);
    expect(JSON.stringify(listed.body)).not.toContain(created.secret);
    const got = await call("GET", `/${created.id}`);
    expect(got.body.data.secret).toBeUndefined();

    const changed = await call("PATCH", `/${created.id}`, key, { events: null, description: "everything" });
    expect(changed.body.data).toMatchObject({ events: null, description: "everything" });
    const paused = await call("PATCH", `/${created.id}`, key, { enabled: false });
    expect(paused.body.data).toMatchObject({ enabled: false, disabledReason: "manual" });

    expect((await call("DELETE", `/${created.id}`)).status).toBe(204);
    expect((await call("GET", `/${created.id}`)).status).toBe(404);
  });

  it("refuse URLs on private addresses, local names, other ports and plain http to public hosts, with a 422 naming url", async () => {
    for (const url of [
      "https://10.0.0.5/hooks",
      "https://192.168.1.20/hooks",
      "https://169.254.169.254/latest",
      "https://[::1]/h",
      "https://intranet.corp/h",
      "https://shop.example.com:8443/h",
      "http://shop.example.com/h",
      "ftp://shop.example.com/h",
      "not a url",
      "https://a..b.example.com/h",
      "https://-shop.example.com/h",
      "http://127.0.0.1:9123/h#frag",
      "https://shop.example.com/h#",
      "http://127.0.0.1:0/h",
      "http://[::1]:9123/h",
    ]) {
      const res = await call("POST", "", key, { url });
      expect(res.status, url).toBe(422);
      expect(res.body.error.code).toBe("VALIDATION_FAILED");
      expect(res.body.error.details[0].path).toBe("url");
    }
    const res = await call("POST", "", key, { url: "https://10.0.0.5/hooks" });
    expect(res.body.error.message).toMatch(/private network address/);
    const messages = async (body: unknown) => (await call("POST", "", key, body)).body.error.message as string;
    expect(await messages({ url: "https://-shop.example.com/h" })).toMatch(/not a valid domain name/);
    expect(await messages({ url: "http://[::1]:9123/h" })).toMatch(/use http:\/\/127\.0\.0\.1:<port>/);
    expect(await messages({ url: "http://127.0.0.1:9123/h#frag" })).toMatch(/fragment/);
    expect(await messages({ url: `https://shop.example.com/${"a".repeat(2100)}` })).toBe("url: must be at most 2048 characters");
    expect(await messages({ url: "https://shop.example.com/h", description: "d".repeat(501) })).toBe("description: must be at most 500 characters");
    // Bytes that are not UTF-8 are refused, as everywhere, rather than stored as U+FFFD.
    const utf8 = await endpoint("https://shop.example.com/h/utf8");
    for (const [method, path] of [
      ["POST", ""],
      ["PATCH", `/${utf8.id}`],
    ] as const) {
      const bytes = new Uint8Array([...new TextEncoder().encode('{"url":"https://shop.example.com/h","description":"caf'), 0xe9, 0x22, 0x7d]);
      const raw = await h.app.request(`/api/v1/webhooks${path}`, { method, headers: h.json(key), body: bytes });
      expect(raw.status, method).toBe(400);
      expect(((await raw.json()) as { error: { code: string } }).error.code).toBe("INVALID_JSON");
    }
    expect((await call("DELETE", `/${utf8.id}`)).status).toBe(204);
    // Without a key, the key is asked for first: the body is not read.
    const bytes = new Uint8Array([0x7b, 0x22, 0xe9, 0x22, 0x7d]);
    const keyless = await h.app.request("/api/v1/webhooks", { method: "POST", headers: { "content-type": "application/json" }, body: bytes });
    expect(keyless.status).toBe(401);
    expect((await call("POST", "", key, { url: "https://shop.example.com/h", events: ["post.exploded"] })).status).toBe(422);
    expect((await call("POST", "", key, { url: "https://shop.example.com/h", events: [] })).status).toBe(422);
    expect((await call("POST", "", key, { url: "https://shop.example.com/h", secret: "mine" })).status).toBe(422);
    // A control character in the description (PostgreSQL cannot even store NUL) is the client's mistake, not a 500.
    for (const description of ["Order\u0000system", "Order\nsystem"]) {
      const created = await call("POST", "", key, { url: "https://shop.example.com/h", description });
      expect(created.status, JSON.stringify(description)).toBe(422);
      expect(created.body.error.details[0]).toMatchObject({ path: "description", message: "must not contain control characters" });
    }
    const ep = await endpoint("https://shop.example.com/h/described", { description: "Order system" });
    const changed = await call("PATCH", `/${ep.id}`, key, { description: "x\u0000" });
    expect(changed.status).toBe(422);
    expect(changed.body.error.details[0].path).toBe("description");
    expect((await call("DELETE", `/${ep.id}`)).status).toBe(204);
  });

  it("are at most 10 per user", async () => {
    const user = (await h.createUser()).apiKey;
    for (let i = 0; i < 10; i++) await endpoint(`https://shop.example.com/h/${i}`, {}, user);
    const res = await call("POST", "", user, { url: "https://shop.example.com/h/11" });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("WEBHOOK_LIMIT_REACHED");
  });

  it("of another user, and their deliveries, are not found", async () => {
    const r = await receiver();
    const mine = await endpoint(r.url);
    const test = await call("POST", `/${mine.id}/test`);
    expect(test.status).toBe(202);
    for (const [method, path] of [
      ["GET", `/${mine.id}`],
      ["PATCH", `/${mine.id}`],
      ["DELETE", `/${mine.id}`],
      ["POST", `/${mine.id}/test`],
      ["POST", `/${mine.id}/rotate-secret`],
      ["GET", `/${mine.id}/deliveries`],
      ["POST", `/${mine.id}/deliveries/${test.body.data.id}/replay`],
    ] as const) {
      const res = await call(method, path, other, method === "PATCH" ? { description: "x" } : undefined);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe("WEBHOOK_NOT_FOUND");
    }
    // The other user's own endpoint with this user's delivery id.
    const theirs = await endpoint("https://shop.example.com/theirs", {}, other);
    const res = await call("POST", `/${theirs.id}/deliveries/${test.body.data.id}/replay`, other);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("WEBHOOK_DELIVERY_NOT_FOUND");
    expect((await call("GET", "/not-a-uuid")).status).toBe(404);
  });
});

describe("messages", () => {
  it("a test message arrives once, signed and verified, valid against the document's webhooks section, and logged", async () => {
    const r = await receiver();
    const ep = await endpoint(r.url, { events: ["post.published"] });
    const test = await call("POST", `/${ep.id}/test`);
    expect(test.status).toBe(202);
    expect(test.body.data).toMatchObject({ eventType: "webhook.test", status: "pending" });
    await waitUntil("the test message", () => r.received.length >= 1);
    const message = verified(r.received[0]!, ep.secret);
    expect(message).toMatchObject({ type: "webhook.test", data: { endpointId: ep.id } });
    expect(r.received[0]!.headers["webhook-id"]).toBe(test.body.data.webhookId);
    expect(r.received[0]!.headers["content-type"]).toBe("application/json");

    const doc = await (await h.app.request("/openapi.json")).json();
    expect(Object.keys(doc.webhooks).sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
    const schemas = documentSchemas(doc);
    expect(schemas.errors(["webhooks", "webhook.test", "post", "requestBody", "content", "application/json", "schema"], message)).toEqual([]);
    expect(schemas.errors(["webhooks", "post.published", "post", "requestBody", "content", "application/json", "schema"], message)).not.toEqual([]);

    const [logged] = await waitUntil("the delivery logged", async () => {
      const items = await deliveries(ep.id);
      return items[0]?.status === "delivered" && items;
    });
    expect(logged).toMatchObject({ id: test.body.data.id, status: "delivered", nextAttemptAt: null });
    expect(logged!.attempts).toEqual([expect.objectContaining({ status: 200, error: null })]);
    await new Promise((res) => setTimeout(res, 200));
    expect(r.received).toHaveLength(1);
  });

  it("a receiver answering 500 three times then 200 gets the same webhook-id four times, each signed", async () => {
    const r = await receiver((n) => (n <= 3 ? 500 : 200));
    const ep = await endpoint(r.url);
    await call("POST", `/${ep.id}/test`);
    await waitUntil("four attempts", () => r.received.length >= 4);
    const ids = new Set(r.received.map((m) => m.headers["webhook-id"]));
    expect(ids.size).toBe(1);
    expect(new Set(r.received.map((m) => m.body)).size).toBe(1);
    for (const m of r.received) verified(m, ep.secret);
    const [logged] = await waitUntil("delivered", async () => {
      const items = await deliveries(ep.id);
      return items[0]?.status === "delivered" && items;
    });
    expect((logged!.attempts as Array<{ status: number }>).map((a) => a.status)).toEqual([500, 500, 500, 200]);
    const after = await call("GET", `/${ep.id}`);
    expect(after.body.data.failingSince).toBeNull();
    await new Promise((res) => setTimeout(res, 300));
    expect(r.received).toHaveLength(4);
  });

  it("a receiver that never answers 2xx gets every attempt of the schedule, then the delivery fails", async () => {
    const r = await receiver(() => ({ status: 503, headers: { "Retry-After": "0" } }));
    const ep = await endpoint(r.url);
    await call("POST", `/${ep.id}/test`);
    const [logged] = await waitUntil("failed", async () => {
      const items = await deliveries(ep.id);
      return items[0]?.status === "failed" && items;
    });
    expect(logged!.attempts).toHaveLength(5);
    expect(r.received).toHaveLength(5);
    expect((await call("GET", `/${ep.id}`)).body.data.failingSince).not.toBeNull();
  });

  it("a redirect is not followed, a long Retry-After is honoured, and a large answer body is read no further than needed", async () => {
    const elsewhere = await receiver();
    const answers: Answer[] = [
      { status: 307, headers: { Location: elsewhere.url } },
      { status: 200, body: "x".repeat(4 * 1024 * 1024) },
      { status: 429, headers: { "Retry-After": "7200" } },
    ];
    const r = await receiver((n) => answers[n - 1] ?? 500);
    const ep = await endpoint(r.url);
    await call("POST", `/${ep.id}/test`);
    const [redirected] = await waitUntil("delivered", async () => {
      const items = await deliveries(ep.id);
      return items[0]?.status === "delivered" && items;
    });
    expect((redirected!.attempts as Array<{ status: number }>).map((a) => a.status)).toEqual([307, 200]);
    expect(elsewhere.received).toHaveLength(0);

    const before = Date.now();
    await call("POST", `/${ep.id}/test`);
    const [limited] = await waitUntil("the 429 logged", async () => {
      const items = await deliveries(ep.id);
      return (items[0]?.attempts as unknown[] | undefined)?.length === 1 ? items : undefined;
    });
    expect((limited!.attempts as Array<{ status: number }>)[0]!.status).toBe(429);
    expect(limited!.status).toBe("pending");
    expect(Date.parse(String(limited!.nextAttemptAt)) - before).toBeGreaterThanOrEqual(7_190_000);
    expect(r.received).toHaveLength(3);
  });

  it("an unreachable endpoint is logged with why no answer came", async () => {
    const r = await receiver();
    const url = r.url;
    await r.close();
    const ep = await endpoint(url);
    await call("POST", `/${ep.id}/test`);
    const [logged] = await waitUntil("failed", async () => {
      const items = await deliveries(ep.id);
      return items[0]?.status === "failed" && items;
    });
    expect((logged!.attempts as Array<{ status: null; error: string }>)[0]).toMatchObject({ status: null, error: expect.stringMatching(/refused/) });
  });

  it("410 Gone disables the endpoint at once; a test to it is then refused until it is enabled again", async () => {
    const r = await receiver((n) => (n === 1 ? 410 : 200));
    const ep = await endpoint(r.url);
    await call("POST", `/${ep.id}/test`);
    const disabled = await waitUntil("disabled", async () => {
      const got = await call("GET", `/${ep.id}`);
      return got.body.data.enabled === false && got.body.data;
    });
    expect(disabled.disabledReason).toBe("gone");
    expect(r.received).toHaveLength(1);
    const refused = await call("POST", `/${ep.id}/test`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("WEBHOOK_DISABLED");
    // The message that met the 410 waits with the endpoint, not failed: enabling it sends the message again.
    const waiting = await waitUntil("the 410 recorded", async () => {
      const [delivery] = await deliveries(ep.id);
      return (delivery?.attempts as unknown[] | undefined)?.length === 1 && delivery;
    });
    expect(waiting).toMatchObject({ status: "pending", nextAttemptAt: null });
    const enabled = await call("PATCH", `/${ep.id}`, key, { enabled: true });
    expect(enabled.body.data).toMatchObject({ enabled: true, disabledReason: null });
    await waitUntil("the parked message after enabling", () => r.received.length >= 2);
    expect(r.received[1]!.headers["webhook-id"]).toBe(r.received[0]!.headers["webhook-id"]);
    await call("POST", `/${ep.id}/test`);
    await waitUntil("the test after enabling", () => r.received.length >= 3);
  });

  it("after a rotation both secrets sign until the overlap ends, then only the new one", async () => {
    const r = await receiver();
    const ep = await endpoint(r.url);
    const rotated = await call("POST", `/${ep.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const secret = rotated.body.data.secret as string;
    expect(secret).not.toBe(ep.secret);
    await call("POST", `/${ep.id}/test`);
    await waitUntil("the first test", () => r.received.length >= 1);
    const during = r.received[0]!;
    expect(String(during.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    verified(during, secret);
    verified(during, ep.secret);

    await new Promise((res) => setTimeout(res, Date.parse(rotated.body.data.previousSecretExpiresAt) - Date.now() + 50));
    await call("POST", `/${ep.id}/test`);
    await waitUntil("the second test", () => r.received.length >= 2);
    const after = r.received[1]!;
    expect(String(after.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    verified(after, secret);
    expect(() => verified(after, ep.secret)).toThrow();
  });

  it("rotating twice within the overlap (a retried call) keeps every secret a receiver may hold signing", async () => {
    const r = await receiver();
    const ep = await endpoint(r.url);
    try {
      // At once, as a call and its retry may be: each keeps the other's secret.
      const [first, second] = await Promise.all([call("POST", `/${ep.id}/rotate-secret`), call("POST", `/${ep.id}/rotate-secret`)]);
      await call("POST", `/${ep.id}/test`);
      await waitUntil("the test", () => r.received.length >= 1);
      const during = r.received[0]!;
      expect(String(during.headers["webhook-signature"]).split(" ")).toHaveLength(3);
      for (const secret of [ep.secret, first.body.data.secret, second.body.data.secret]) verified(during, secret);

      // After both overlaps only the secret of the rotation that took the endpoint last signs: either call's,
      // as the two ran at once.
      const overlapEnd = Math.max(Date.parse(first.body.data.previousSecretExpiresAt), Date.parse(second.body.data.previousSecretExpiresAt));
      await new Promise((res) => setTimeout(res, overlapEnd - Date.now() + 50));
      await call("POST", `/${ep.id}/test`);
      await waitUntil("the test after the overlap", () => r.received.length >= 2);
      const after = r.received[1]!;
      expect(String(after.headers["webhook-signature"]).split(" ")).toHaveLength(1);
      const signing = [ep.secret, first.body.data.secret, second.body.data.secret].filter((secret) => {
        try {
          verified(after, secret);
          return true;
        } catch {
          return false;
        }
      });
      expect(signing).toHaveLength(1);
      expect([first.body.data.secret, second.body.data.secret]).toContain(signing[0]);
    } finally {
      expect((await call("DELETE", `/${ep.id}`)).status).toBe(204);
    }
  });

  it("a replay sends the same message again with the same webhook-id and body", async () => {
    const r = await receiver();
    const ep = await endpoint(r.url);
    const test = await call("POST", `/${ep.id}/test`);
    await waitUntil("the test", () => r.received.length >= 1);
    await waitUntil("delivered", async () => (await deliveries(ep.id))[0]?.status === "delivered");
    const replay = await call("POST", `/${ep.id}/deliveries/${test.body.data.id}/replay`);
    expect(replay.status).toBe(202);
    expect(replay.body.data).toMatchObject({ id: test.body.data.id, webhookId: test.body.data.webhookId, status: "pending" });
    await waitUntil("the replay", () => r.received.length >= 2);
    expect(r.received[1]!.headers["webhook-id"]).toBe(r.received[0]!.headers["webhook-id"]);
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
    verified(r.received[1]!, ep.secret);
    const [logged] = await waitUntil("logged twice", async () => {
      const items = await deliveries(ep.id);
      return items[0]?.status === "delivered" && (items[0]!.attempts as unknown[]).length === 2 && items;
    });
    expect(logged!.attempts).toHaveLength(2);
  });

  it("a slow endpoint holds up no other endpoint: another user's message arrives while the slow one's are still unanswered", async () => {
    let answered = 0;
    const slow = await receiver(() => ({ status: 200, delayMs: 3000 }));
    const fast = await receiver();
    const slowEndpoint = await endpoint(slow.url);
    const fastEndpoint = await endpoint(fast.url, {}, other);
    for (let i = 0; i < 20; i++) await call("POST", `/${slowEndpoint.id}/test`);
    await waitUntil("the slow endpoint's messages on the wire", () => slow.received.length >= 20);
    await call("POST", `/${fastEndpoint.id}/test`, other);
    await waitUntil("the other user's message", () => fast.received.length >= 1);
    // None of the slow endpoint's messages has been answered yet, so none is recorded as delivered.
    answered = (await deliveries(slowEndpoint.id)).filter((d) => d.status === "delivered").length;
    expect(answered).toBe(0);
    verified(fast.received[0]!, fastEndpoint.secret);
    await waitUntil(
      "the slow endpoint's answers recorded",
      async () => (await deliveries(slowEndpoint.id)).every((d) => d.status === "delivered"),
      20_000,
      100,
    );
  });
});
