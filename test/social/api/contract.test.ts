/**
 * Cross-cutting rules of area C: accounts, authentication on every route, owner isolation, no-store on every
 * response, no CORS, the per-user write and read budgets, and the error envelope.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountsResponseSchema } from "../../../src/social/schemas";
import { body, createSocialTestApp, SOCIAL, type SocialTestApp } from "../../helpers/social";

let h: SocialTestApp;
beforeAll(async () => {
  h = await createSocialTestApp();
});
afterAll(async () => h?.close());

const ROUTES: Array<[string, string, unknown?]> = [
  ["GET", "/accounts"],
  ["POST", "/media", { url: "https://cdn.example.com/a.jpg" }],
  ["GET", `/media/${crypto.randomUUID()}`],
  ["POST", "/posts", { accountIds: "pageplatform:1", caption: "x" }],
  ["GET", "/posts"],
  ["GET", `/posts/${crypto.randomUUID()}`],
  ["DELETE", `/posts/${crypto.randomUUID()}`],
];

describe("GET /accounts", () => {
  it("lists the owner's accounts with capabilities and readiness, and only theirs", async () => {
    const u = await h.createUser();
    const other = await h.createUser();
    const page = await h.seedAccount(u.userId, "pageplatform", { platformAccountId: "104238472", name: "Shop page" });
    const photo = await h.seedAccount(u.userId, "photoplatform", { platformAccountId: "17841400000000000", tokenStatus: "invalid" });
    await h.seedAccount(other.userId, "pageplatform");
    const res = await h.get(u.apiKey, "/accounts");
    expect(res.status).toBe(200);
    const json = await body(res);
    expect(AccountsResponseSchema.safeParse(json).success).toBe(true);
    expect(json.data.connectionStatus).toBe("connected");
    expect(json.data.accounts).toEqual([
      {
        id: page,
        platform: "pageplatform",
        platformAccountId: "104238472",
        name: "Shop page",
        selected: true,
        canPublish: true,
        tokenStatus: "active",
        capabilities: { text: true, maxImages: 10, maxCaptionLength: 63_206 },
      },
      expect.objectContaining({
        id: photo,
        platform: "photoplatform",
        canPublish: false,
        tokenStatus: "invalid",
        capabilities: { text: false, maxImages: 1, maxCaptionLength: 2_200 },
      }),
    ]);
    const none = await body(await h.get((await h.createUser()).apiKey, "/accounts"));
    expect(none.data).toEqual({ connectionStatus: "connected", accounts: [] });
  });
});

describe("authentication", () => {
  for (const [method, path, payload] of ROUTES) {
    it(`${method} ${path.replace(/[0-9a-f-]{36}/, "{id}")}: 401 without credentials, with a bad key, a Basic header or a cookie alone`, async () => {
      const variants: Array<Record<string, string>> = [
        {},
        { Authorization: "Bearer sk_live_not_a_real_key" },
        { Authorization: "Basic dXNlcjpwYXNz" },
        { Authorization: "Bearer" },
        { Cookie: "session=abc" },
      ];
      for (const headers of variants) {
        const res = await h.request(path, {
          method,
          headers: { ...headers, "Content-Type": "application/json", "Idempotency-Key": "k1" },
          body: payload === undefined ? undefined : JSON.stringify(payload),
        });
        expect(res.status).toBe(401);
        expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
        expect(res.headers.get("cache-control")).toBe("no-store");
        const err = (await body(res)).error;
        expect(err.code).toBe("UNAUTHORIZED");
        expect(JSON.stringify(err)).not.toContain("sk_live_not_a_real_key");
      }
    });
  }
});

describe("no-store and no CORS on every area C response", () => {
  it("success, 4xx and the docs all carry Cache-Control: no-store and no Access-Control-Allow-Origin", async () => {
    const u = await h.createUser();
    const responses = [
      await h.get(u.apiKey, "/accounts"),
      await h.get(u.apiKey, "/posts"),
      await h.get(u.apiKey, `/posts/${crypto.randomUUID()}`),
      await h.get(u.apiKey, "/posts?bogus=1"),
      await h.createPost(u.apiKey, { accountIds: "pageplatform:0", caption: "x" }),
      await h.request("/openapi.json"),
      await h.request("/docs"),
    ];
    for (const res of responses) {
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
    }
  });

  it("a browser preflight gets no CORS grant", async () => {
    const res = await h.request("/posts", {
      method: "OPTIONS",
      headers: { Origin: "https://evil.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization" },
    });
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(res.headers.get("access-control-allow-headers")).toBeNull();
  });
});

describe("per-user budgets (429 with Retry-After)", () => {
  it("writes and reads have per-user budgets shared by the user's keys; other users are unaffected", async () => {
    const limited = await createSocialTestApp({ env: { RATE_LIMIT_SOCIAL_WRITE: "3", RATE_LIMIT_SOCIAL_READ: "5" } });
    try {
      const u = await limited.createUser();
      const second = await limited.createKey(u.userId, "second");
      const page = await limited.seedAccount(u.userId, "pageplatform");
      const key = crypto.randomUUID();
      const statuses = [];
      for (const apiKey of [u.apiKey, second, u.apiKey]) statuses.push((await limited.createPost(apiKey, { accountIds: page, caption: "x" }, { key })).status);
      expect(statuses).toEqual([202, 200, 200]); // a replay is a write request too
      const over = await limited.createPost(second, { accountIds: page, caption: "x" }, { key });
      expect(over.status).toBe(429);
      expect(over.headers.get("cache-control")).toBe("no-store");
      const retryAfter = Number(over.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect((await body(over)).error.code).toBe("RATE_LIMITED");
      expect((await limited.get(u.apiKey, "/posts")).status).toBe(200);
      const other = await limited.createUser();
      expect((await limited.createMedia(other.apiKey, {})).status).toBe(422);

      for (let i = 0; i < 4; i++) await limited.get(u.apiKey, "/accounts");
      const readOver = await limited.get(u.apiKey, "/accounts");
      expect(readOver.status).toBe(429);
      expect(readOver.headers.get("retry-after")).not.toBeNull();
    } finally {
      await limited.close();
    }
  });
});

describe("the error envelope", () => {
  it("every area C error is {error:{code,message}} with no internals", async () => {
    const u = await h.createUser();
    const cases = [
      await h.request("/posts", { method: "POST", headers: h.json(u.apiKey, { "Idempotency-Key": "k" }), body: "{not json" }),
      await h.request("/posts", { method: "POST", headers: { ...h.auth(u.apiKey), "Idempotency-Key": "k", "Content-Type": "text/plain" }, body: "hello" }),
      await h.createPost(u.apiKey, { accountIds: "x", caption: "x" }, { key: null }),
      await h.createPost(u.apiKey, { accountIds: "pageplatform:0", caption: "x" }),
      await h.get(u.apiKey, "/posts?limit=0"),
      await h.get(u.apiKey, "/nowhere"),
    ];
    expect(cases.map((r) => r.status)).toEqual([400, 415, 400, 404, 422, 404]);
    const codes = [];
    for (const res of cases) {
      const json = await body(res);
      expect(Object.keys(json)).toEqual(["error"]);
      expect(typeof json.error.code).toBe("string");
      expect(json.error.message.length).toBeGreaterThan(5);
      expect(JSON.stringify(json)).not.toMatch(/at \w+ \(|node_modules|\.ts:\d/);
      codes.push(json.error.code);
    }
    expect(codes).toEqual(["INVALID_JSON", "UNSUPPORTED_MEDIA_TYPE", "IDEMPOTENCY_KEY_REQUIRED", "ACCOUNT_NOT_FOUND", "VALIDATION_FAILED", "NOT_FOUND"]);
  });

  it("accepts JSON with a charset parameter", async () => {
    const u = await h.createUser();
    const page = await h.seedAccount(u.userId, "pageplatform");
    const res = await h.createPost(u.apiKey, { accountIds: page, caption: "x" }, { headers: { "Content-Type": "application/json; charset=utf-8" } });
    expect(res.status).toBe(202);
  });

  it("the Location of a created post and media is under /api/v1/social", async () => {
    const u = await h.createUser();
    const page = await h.seedAccount(u.userId, "pageplatform");
    const res = await h.createPost(u.apiKey, { accountIds: page, caption: "x" });
    expect(res.headers.get("location")).toMatch(new RegExp(`^${SOCIAL}/posts/[0-9a-f-]{36}$`));
  });
});
