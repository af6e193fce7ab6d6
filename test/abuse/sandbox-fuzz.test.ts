/**
 * Sandbox input validation (issue 14): NUL bytes, over-long strings and wrong types are refused like the
 * API refuses them (control routes: 422 in the error envelope; Graph routes: Graph's own error body), never
 * a 500. A bounded, deterministic fuzz pass: every field of every sandbox route gets each hostile value.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { socialAccounts } from "../../db/schema";
import { createSession, loadSession, SESSION_COOKIE } from "../../src/hub/session";
import { createTestApp, type TestApp } from "../helpers/harness";

let h: TestApp;
let user: { userId: string; apiKey: string };
let pageToken: string;
let photoToken: string;

beforeAll(async () => {
  h = await createTestApp({ env: { RATE_LIMIT_SOCIAL_WRITE: "100000" } });
  user = await h.createUser();
  for (const [platform, id] of [
    ["pageplatform", "4242"],
    ["photoplatform", "4343"],
  ] as const) {
    const res = await h.app.request("/sandbox/accounts", {
      method: "POST",
      headers: h.json(user.apiKey),
      body: JSON.stringify({ platform, name: "Fuzz", platformAccountId: id }),
    });
    expect(res.status).toBe(201);
  }
  const token = async (id: string) => {
    const [row] = await h.db
      .select()
      .from(socialAccounts)
      .where(and(eq(socialAccounts.userId, user.userId), eq(socialAccounts.id, id)));
    return h.services.tokens.decrypt(row!.tokenCiphertext);
  };
  pageToken = await token("pageplatform:4242");
  photoToken = await token("photoplatform:4343");
});
afterAll(() => h.close());

const HOSTILE_STRINGS = [
  "",
  " ",
  "a\u0000b",
  "\u0000",
  "%00",
  "a\u0001b",
  "\r\n",
  "x".repeat(5000),
  "\u202e\u{1F600}",
  "'; drop table users; --",
  "../../etc/passwd",
  "null",
  "-1",
  "1e400",
  '{"media_fbid":"a\\u0000b"}',
];
const HOSTILE_JSON: unknown[] = [...HOSTILE_STRINGS, null, 0, -1, 1.5, 1e308, true, [], {}, ["a\u0000"], { $gt: "" }];

const errorEnvelope = (body: any) => typeof body?.error?.code === "string" && typeof body?.error?.message === "string";

async function expectNo5xx(res: Response, what: string) {
  const text = await res.text().catch(() => "");
  expect(res.status, `${what} -> ${res.status} ${text.slice(0, 200)}`).toBeLessThan(500);
  return { status: res.status, body: text.startsWith("{") ? JSON.parse(text) : text };
}

describe("control routes", () => {
  const valid = {
    "/sandbox/accounts": { platform: "pageplatform", name: "Shop", platformAccountId: "4242" },
    "/sandbox/faults": { accountId: "pageplatform:4242", kind: "transient", times: 0 },
  } as const;

  it("every field of POST /sandbox/accounts and /sandbox/faults: each hostile value is a 4xx, NUL and wrong types a 422 envelope", async () => {
    for (const [path, base] of Object.entries(valid)) {
      for (const field of [...Object.keys(base), "unknownField"]) {
        for (const value of HOSTILE_JSON) {
          const body = { ...base, [field]: value };
          const res = await h.app.request(path, { method: "POST", headers: h.json(user.apiKey), body: JSON.stringify(body) });
          const { status, body: out } = await expectNo5xx(res, `${path} ${field}=${JSON.stringify(value)?.slice(0, 40)}`);
          if (status >= 400) expect(errorEnvelope(out), `${path} ${field}`).toBe(true);
          if (typeof value === "string" && value.includes("\u0000")) expect(status, `${path} ${field} NUL`).toBe(422);
        }
      }
      for (const whole of HOSTILE_JSON) {
        const res = await h.app.request(path, { method: "POST", headers: h.json(user.apiKey), body: JSON.stringify(whole) });
        expect((await expectNo5xx(res, `${path} body=${JSON.stringify(whole)?.slice(0, 40)}`)).status).toBe(422);
      }
    }
  });

  it('the issue\'s cases: {"name":"a\\u0000b"} and accountId=a%00b are 422 envelopes', async () => {
    const named = await h.app.request("/sandbox/accounts", {
      method: "POST",
      headers: h.json(user.apiKey),
      body: JSON.stringify({ platform: "pageplatform", name: "a\u0000b" }),
    });
    expect(named.status).toBe(422);
    expect(((await named.json()) as any).error).toMatchObject({ code: "VALIDATION_FAILED", details: [{ path: "name" }] });
    const listed = await h.app.request("/sandbox/posts?accountId=a%00b", { headers: h.auth(user.apiKey) });
    expect(listed.status).toBe(422);
    expect(((await listed.json()) as any).error).toMatchObject({ code: "VALIDATION_FAILED", details: [{ path: "accountId" }] });
  });

  it("GET /sandbox/posts: hostile accountId values and repeated or unknown query fields", async () => {
    for (const value of HOSTILE_STRINGS) {
      const res = await h.app.request(`/sandbox/posts?accountId=${encodeURIComponent(value)}`, { headers: h.auth(user.apiKey) });
      const { status, body } = await expectNo5xx(res, `posts accountId=${value.slice(0, 20)}`);
      expect([404, 422]).toContain(status);
      expect(errorEnvelope(body)).toBe(true);
    }
    for (const query of ["", "accountId=a&accountId=b", "accountId=pageplatform:4242&x=1", "accountId%00=1"]) {
      const res = await h.app.request(`/sandbox/posts?${query}`, { headers: h.auth(user.apiKey) });
      expect((await expectNo5xx(res, `posts ?${query}`)).status).toBe(422);
    }
  });
});

describe("Graph and OAuth routes", () => {
  const form = (params: Record<string, string>, headers: Record<string, string> = {}) => ({
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(params).toString(),
  });

  it("every parameter of the Graph edges, nodes and token routes: no 5xx for any hostile value", async () => {
    const cases: Array<{ path: string; method: "GET" | "POST"; params: Record<string, string> }> = [
      { path: "4242/feed", method: "POST", params: { access_token: pageToken, message: "hi", "attached_media[0]": '{"media_fbid":"1"}' } },
      { path: "4242/photos", method: "POST", params: { access_token: pageToken, url: "http://127.0.0.1:1/x.jpg", caption: "c", published: "false" } },
      { path: "4242/feed", method: "GET", params: { access_token: pageToken, since: "0", limit: "5" } },
      { path: "4343/media", method: "POST", params: { access_token: photoToken, image_url: "http://127.0.0.1:1/x.jpg", caption: "c" } },
      { path: "4343/media_publish", method: "POST", params: { access_token: photoToken, creation_id: "1" } },
      { path: "4343/media", method: "GET", params: { access_token: photoToken, limit: "5" } },
      { path: "4343/content_publishing_limit", method: "GET", params: { access_token: photoToken } },
      { path: "123", method: "GET", params: { access_token: photoToken } },
      {
        path: "oauth/access_token",
        method: "GET",
        params: { client_id: "sandbox-app", client_secret: "x", code: "c", redirect_uri: "http://x/", grant_type: "fb_exchange_token", fb_exchange_token: "t" },
      },
      { path: "me/accounts", method: "GET", params: { access_token: "sandbox-user-00" } },
      { path: "me/permissions", method: "GET", params: { access_token: "sandbox-user-00" } },
    ];
    for (const { path, method, params } of cases) {
      for (const field of Object.keys(params)) {
        for (const value of HOSTILE_STRINGS) {
          const p = { ...params, [field]: value };
          const res =
            method === "GET"
              ? await h.app.request(`/sandbox/graph/v23.0/${path}?${new URLSearchParams(p)}`)
              : await h.app.request(`/sandbox/graph/v23.0/${path}`, form(p));
          await expectNo5xx(res, `${method} ${path} ${field}=${value.slice(0, 20)}`);
        }
      }
    }
    for (const value of HOSTILE_STRINGS) {
      const segment = encodeURIComponent(value) || "%20";
      for (const path of [`${segment}/feed`, `4242/${segment}`, segment, `${segment}/x/y`]) {
        const res = await h.app.request(`/sandbox/graph/v23.0/${path}?access_token=${encodeURIComponent(pageToken)}`);
        await expectNo5xx(res, `GET ${path.slice(0, 30)}`);
      }
      const asJson = await h.app.request("/sandbox/graph/v23.0/4242/feed", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ access_token: pageToken, message: value }),
      });
      await expectNo5xx(asJson, `json message=${value.slice(0, 20)}`);
    }
  });

  it("NUL in a Graph parameter or path is Graph's invalid-parameter error (400, code 100); a body over 1 MB is 413", async () => {
    const nul = await h.app.request("/sandbox/graph/v23.0/4242/feed", form({ access_token: pageToken, message: "a\u0000b" }));
    expect(nul.status).toBe(400);
    expect(((await nul.json()) as any).error).toMatchObject({ type: "OAuthException", code: 100 });
    const path = await h.app.request(`/sandbox/graph/v23.0/a%00b?access_token=${pageToken}`);
    expect(((await path.json()) as any).error.code).toBe(100);
    const big = await h.app.request("/sandbox/accounts", {
      method: "POST",
      headers: h.json(user.apiKey),
      body: JSON.stringify({ platform: "pageplatform", name: "x".repeat(1_100_000) }),
    });
    expect(big.status).toBe(413);
  });

  it("the consent dialog: no 5xx for any hostile value", async () => {
    // Signed in to the hub, as the dialog requires, so every value reaches the dialog's own checks.
    const { cookie } = await createSession(h.services, user.userId);
    const headers = { cookie: `${SESSION_COOKIE}=${cookie}` };
    const csrf = (await loadSession(h.services, cookie))!.csrfToken;
    const base = { client_id: "sandbox-app", redirect_uri: `${h.services.config.publicBaseUrl}/hub/x`, state: "s", decision: "allow", page: "1", _csrf: csrf };
    expect((await h.app.request("/sandbox/v23.0/dialog/oauth", form(base, headers))).status).toBe(302);
    for (const field of Object.keys(base)) {
      for (const value of HOSTILE_STRINGS) {
        const p = { ...base, [field]: value };
        await expectNo5xx(
          await h.app.request(`/sandbox/v23.0/dialog/oauth?${new URLSearchParams({ ...p, scope: value })}`, { headers }),
          `dialog GET ${field}`,
        );
        await expectNo5xx(await h.app.request("/sandbox/v23.0/dialog/oauth", form(p, headers)), `dialog POST ${field}`);
        // Past the allowed prefix: the redirect_uri is stored with the code, so its tail must be safe too.
        const tail = { ...base, redirect_uri: `${base.redirect_uri}${value}` };
        await expectNo5xx(await h.app.request("/sandbox/v23.0/dialog/oauth", form(tail, headers)), `dialog POST redirect tail`);
      }
    }
  });
});
