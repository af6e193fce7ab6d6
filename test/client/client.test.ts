/**
 * The typed client (packages/client) against the real app in process: its requests reach `app.request` through
 * the client's `fetch` option, where a test may lose an answer (a 503 in its place, after the app did the
 * work) or answer a 429 itself, to show what the client does about them: a post creation carries one
 * `Idempotency-Key` over all its attempts, so a retried creation posts once; retries stop at the bound; a
 * `Retry-After` longer than the client waits is handed back at once; errors arrive as the typed envelope.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type RetryOptions, type ShopkitClient } from "../../packages/client/src/index";
import { createSocialTestApp, type SocialTestApp } from "../helpers/social";

let h: SocialTestApp;
beforeAll(async () => {
  h = await createSocialTestApp({ env: { RATE_LIMIT_QR: "2" } });
});
afterAll(async () => {
  await h?.close();
});

interface Sent {
  method: string;
  path: string;
  idempotencyKey: string | null;
}

const unavailable = (status: 429 | 503) =>
  Response.json(
    { error: { code: status === 429 ? "RATE_LIMITED" : "SERVICE_UNAVAILABLE", message: "Try again shortly." } },
    { status, headers: { "Retry-After": "0" } },
  );

/**
 * A client of a new user, with what it sent; `interfere(request, attempt)` may answer in the app's place
 * (before it sees the request) or replace the app's answer (after it did the work).
 */
async function clientOf(
  interfere: { before?: (path: string, n: number) => Response | undefined; after?: (path: string, n: number) => Response | undefined } = {},
  retry?: RetryOptions,
) {
  const { userId, apiKey } = await h.createUser();
  const sent: Sent[] = [];
  const api: ShopkitClient = createClient({
    baseUrl: "http://127.0.0.1:8787",
    apiKey,
    retry,
    fetch: async (request) => {
      const path = new URL(request.url).pathname;
      sent.push({ method: request.method, path, idempotencyKey: request.headers.get("Idempotency-Key") });
      const n = sent.filter((s) => s.path === path).length;
      const early = interfere.before?.(path, n);
      if (early) return early;
      const res = await h.app.request(request);
      return interfere.after?.(path, n) ?? res;
    },
  });
  return { api, sent, userId, apiKey };
}

describe("the typed client", () => {
  it("sends a post creation whose answer was lost again with the same Idempotency-Key, and the post exists once", async () => {
    const { api, sent, userId } = await clientOf({ after: (path, n) => (path.endsWith("/posts") && n === 1 ? unavailable(503) : undefined) });
    const page = await h.seedAccount(userId, "pageplatform");
    const { data, error, response } = await api.POST("/api/v1/social/posts", { body: { accountIds: [page], caption: "New in store" } });
    expect(error).toBeUndefined();
    expect(response.headers.get("Idempotency-Replayed")).toBe("true");
    const creations = sent.filter((s) => s.method === "POST");
    expect(creations).toHaveLength(2);
    expect(creations[0]!.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(creations[1]!.idempotencyKey).toBe(creations[0]!.idempotencyKey);
    const list = await api.GET("/api/v1/social/posts");
    expect(list.data?.data.items.map((p) => p.id)).toEqual([data!.data.id]);
  });

  it("gives each creation a key of its own and keeps a key the caller gives", async () => {
    const { api, sent, userId } = await clientOf();
    const page = await h.seedAccount(userId, "pageplatform");
    await api.POST("/api/v1/social/posts", { body: { accountIds: page, caption: "one" } });
    await api.POST("/api/v1/social/posts", { body: { accountIds: page, caption: "two" } });
    const mine = await api.POST("/api/v1/social/posts", {
      body: { accountIds: page, caption: "three" },
      params: { header: { "Idempotency-Key": "launch-001" } },
    });
    const again = await api.POST("/api/v1/social/posts", {
      body: { accountIds: page, caption: "three" },
      params: { header: { "Idempotency-Key": "launch-001" } },
    });
    const keys = sent.filter((s) => s.method === "POST").map((s) => s.idempotencyKey);
    expect(new Set(keys.slice(0, 2)).size).toBe(2);
    expect(keys.slice(2)).toEqual(["launch-001", "launch-001"]);
    expect(again.data?.data.id).toBe(mine.data?.data.id);
    expect((await api.GET("/api/v1/social/posts")).data?.data.items).toHaveLength(3);
    // Reads and other operations carry no key.
    expect(sent.filter((s) => s.method === "GET").every((s) => s.idempotencyKey === null)).toBe(true);
  });

  it("retries a 429 that asks for a wait it accepts, and takes a QR request with only type and value", async () => {
    const { api, sent } = await clientOf({ before: (path, n) => (path === "/api/qr-code/generate" && n === 1 ? unavailable(429) : undefined) });
    const { data, error } = await api.POST("/api/qr-code/generate", { body: { type: "url", value: "https://example.com/menu" } });
    expect(error).toBeUndefined();
    expect(data?.data.qrCodeDataUrl).toMatch(/^data:image\/png;base64,/);
    expect(sent).toHaveLength(2);
  });

  it("stops after the bounded number of retries and hands back the last answer as the typed envelope", async () => {
    const { api, sent } = await clientOf({ before: () => unavailable(503) });
    const { data, error, response } = await api.GET("/api/v1/social/accounts");
    expect(data).toBeUndefined();
    expect(response.status).toBe(503);
    expect(error?.error.code).toBe("SERVICE_UNAVAILABLE");
    expect(sent).toHaveLength(3); // the first attempt and two retries
  });

  it("hands back the API's own 429 at once when its Retry-After is longer than the client waits", async () => {
    // The API's Retry-After is whole seconds, at least 1; this client waits at most half a second.
    const { api, sent } = await clientOf({}, { maxDelayMs: 500 });
    const body = { type: "text", value: "hello" } as const;
    await api.POST("/api/qr-code/generate", { body });
    await api.POST("/api/qr-code/generate", { body });
    const { error, response } = await api.POST("/api/qr-code/generate", { body });
    expect(response.status).toBe(429);
    expect(Number(response.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(error?.error.code).toBe("RATE_LIMITED");
    expect(sent).toHaveLength(3);
  });

  it("answers a bad key with the typed 401", async () => {
    const api = createClient({ baseUrl: "http://127.0.0.1:8787", apiKey: "sk_not_a_key", fetch: async (request) => h.app.request(request) });
    const { error, response } = await api.GET("/api/v1/social/accounts");
    expect(response.status).toBe(401);
    expect(error?.error.code).toBe("UNAUTHORIZED");
  });
});
