/**
 * The sandbox's own contract, in process: control routes only for the key's owner, Graph routes that check
 * tokens and answer with Graph error bodies, containers that finish after a short delay, and the whole
 * sandbox off (404) unless PLATFORM_SANDBOX=on. Publishes stored together (one statement) still take each
 * pending fault exactly once, the earliest first, and fail only for themselves, on PGlite and PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../../helpers/harness";
import { getItems, insertUnlessFault, newGraphId, newSandboxToken, saveToken, setFault } from "../../../src/social/sandbox/store";
import { createHubTest } from "../../hub/hub-client";
import { createScratchDatabase, type ScratchDatabase } from "../../../dev/postgres";

let h: TestApp;
let owner: { apiKey: string };
let other: { apiKey: string };

beforeAll(async () => {
  h = await createTestApp();
  owner = await h.createUser();
  other = await h.createUser();
});
afterAll(() => h.close());

const post = (path: string, apiKey: string | null, body: unknown) =>
  h.app.request(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
    body: JSON.stringify(body),
  });
const get = (path: string, apiKey: string) => h.app.request(path, { headers: { authorization: `Bearer ${apiKey}` } });
const json = async (res: Response) => (await res.json()) as any;

describe("control routes", () => {
  it("connects an account for the key's owner and returns the account record with 201", async () => {
    const res = await post("/sandbox/accounts", owner.apiKey, { platform: "pageplatform", name: "Shop page", platformAccountId: "424242" });
    expect(res.status).toBe(201);
    expect((await json(res)).data).toEqual({
      id: "pageplatform:424242",
      platform: "pageplatform",
      platformAccountId: "424242",
      name: "Shop page",
      selected: true,
      canPublish: true,
      tokenStatus: "active",
      capabilities: { text: true, maxImages: 10, maxCaptionLength: 63206 },
    });
    const listed = (await json(await get("/api/v1/social/accounts", owner.apiKey))).data.accounts;
    expect(listed.map((a: { id: string }) => a.id)).toContain("pageplatform:424242");
    const generated = (await json(await post("/sandbox/accounts", owner.apiKey, { platform: "photoplatform", name: "Shop photos" }))).data;
    expect(generated.platformAccountId).toMatch(/^\d{16}$/);
  });

  it("needs a key, validates the body, and keeps other owners out", async () => {
    expect((await post("/sandbox/accounts", null, { platform: "pageplatform", name: "x" })).status).toBe(401);
    expect((await post("/sandbox/accounts", owner.apiKey, { platform: "myspace", name: "x" })).status).toBe(422);
    expect((await post("/sandbox/faults", owner.apiKey, { accountId: "pageplatform:424242", kind: "meteor", times: 1 })).status).toBe(422);
    expect((await post("/sandbox/faults", other.apiKey, { accountId: "pageplatform:424242", kind: "transient", times: 1 })).status).toBe(404);
    expect((await get("/sandbox/posts?accountId=pageplatform:424242", other.apiKey)).status).toBe(404);
    expect((await post("/sandbox/faults", owner.apiKey, { accountId: "pageplatform:424242", kind: "transient", times: 2 })).status).toBe(201);
    expect((await json(await get("/sandbox/posts?accountId=pageplatform:424242", owner.apiKey))).data.items).toEqual([]);
  });
});

describe("Graph routes", () => {
  const graph = (path: string, params: Record<string, string>, method = "POST") =>
    method === "GET"
      ? h.app.request(`/sandbox/graph/v23.0/${path}?${new URLSearchParams(params)}`)
      : h.app.request(`/sandbox/graph/v23.0/${path}`, {
          method,
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams(params).toString(),
        });

  it("checks the access token: unknown is 190, another account's object is 200", async () => {
    const bad = await graph("777/feed", { message: "hi", access_token: "nope" });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error).toMatchObject({ type: "OAuthException", code: 190, fbtrace_id: expect.any(String) });
    const token = newSandboxToken("pageplatform");
    await saveToken(h.db, token, { owner: "test", platformAccountId: "777" });
    const foreign = await graph("888/feed", { message: "hi", access_token: token });
    expect((await json(foreign)).error.code).toBe(200);
    const wrongEdge = await graph("777/media", { image_url: "x", access_token: token });
    expect((await json(wrongEdge)).error.code).toBe(100);
  });

  it("does not remember a token it did not know: saved afterwards, the same token works", async () => {
    const token = newSandboxToken("pageplatform");
    expect((await json(await graph("778/feed", { message: "too early", access_token: token }))).error.code).toBe(190);
    await saveToken(h.db, token, { owner: "test", platformAccountId: "778" });
    expect((await json(await graph("778/feed", { message: "now", access_token: token }))).id).toMatch(/^778_\d+$/);
  });

  it("publishes a text post, lists it in the feed with Graph timestamps, and applies faults with real codes", async () => {
    const token = newSandboxToken("pageplatform");
    await saveToken(h.db, token, { owner: "test", platformAccountId: "999" });
    const created = await json(await graph("999/feed", { message: "Hello #world", access_token: token }));
    expect(created.id).toMatch(/^999_\d+$/);
    const feed = await json(await graph("999/feed", { fields: "id,message,created_time", access_token: token }, "GET"));
    expect(feed.data).toEqual([{ id: created.id, message: "Hello #world", created_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000$/) }]);

    await setFault(h.db, { owner: "test", platformAccountId: "999" }, "rate_limit", 1);
    const limited = await graph("999/feed", { message: "again", access_token: token });
    expect(limited.status).toBe(400);
    expect((await json(limited)).error).toMatchObject({ code: 32, message: "Page request limit reached" });
    await setFault(h.db, { owner: "test", platformAccountId: "999" }, "ambiguous", 1);
    const lost = await graph("999/feed", { message: "lost answer", access_token: token });
    expect(lost.status).toBe(200);
    await expect(lost.text()).rejects.toThrow();
    const after = await json(await graph("999/feed", { access_token: token }, "GET"));
    expect(after.data.map((d: { message: string }) => d.message)).toEqual(["lost answer", "Hello #world"]);
  });

  it("a burst of publishes to two accounts: all stored, and a pending fault taken by exactly as many as it has left", () => burstWithFault(h));

  it("publishes stored together: a pending fault goes to the earliest, and an item the batch cannot take fails only for itself", () => storedTogether(h));

  it("reports the publishing quota from what the account published", async () => {
    const token = newSandboxToken("photoplatform");
    await saveToken(h.db, token, { owner: "test", platformAccountId: "555" });
    const limit = await json(await graph("555/content_publishing_limit", { fields: "config,quota_usage", access_token: token }, "GET"));
    expect(limit).toEqual({ data: [{ quota_usage: 0, config: { quota_total: 50, quota_duration: 86400 } }] });
  });
});

describe("on PostgreSQL", () => {
  let scratch: ScratchDatabase;
  let pgApp: TestApp;
  beforeAll(async () => {
    scratch = await createScratchDatabase();
    pgApp = await createTestApp({ env: { DATABASE_URL: scratch.url } });
  });
  afterAll(async () => {
    await pgApp?.close();
    await scratch?.drop();
  });

  it("a burst of publishes to two accounts: all stored, and a pending fault taken by exactly as many as it has left", () => burstWithFault(pgApp));

  it("publishes stored together: a pending fault goes to the earliest, and an item the batch cannot take fails only for itself", () => storedTogether(pgApp));
});

describe("switched off", () => {
  it("answers 404 on every sandbox path unless PLATFORM_SANDBOX=on, and the hub says connecting is not set up", async () => {
    const hub = await createHubTest({ env: { PLATFORM_SANDBOX: "off" } });
    const off = hub.h;
    try {
      const { apiKey } = await off.createUser();
      const paths: Array<[string, RequestInit]> = [
        ["/sandbox/accounts", { method: "POST", headers: off.json(apiKey), body: JSON.stringify({ platform: "pageplatform", name: "x" }) }],
        ["/sandbox/posts?accountId=pageplatform:1", { headers: off.auth(apiKey) }],
        ["/sandbox/faults", { method: "POST", headers: off.json(apiKey), body: JSON.stringify({ accountId: "pageplatform:1", kind: "transient", times: 1 }) }],
        ["/sandbox/v23.0/dialog/oauth?client_id=sandbox-app", {}],
        ["/sandbox/graph/v23.0/oauth/access_token?client_id=sandbox-app", {}],
      ];
      for (const [path, init] of paths) {
        const res = await off.app.request(path, init);
        expect(res.status, path).toBe(404);
        expect(((await res.json()) as any).error.code).toBe("NOT_FOUND");
      }
      const b = hub.browser();
      await b.signIn((await off.createUser()).userId);
      const connect = await b.follow(await b.post("/hub/accounts/connect", {}));
      expect(connect.hops).toEqual([{ status: 303, location: "/hub/accounts" }]);
      expect(connect.html).toContain("META_APP_ID");
    } finally {
      await off.close();
    }
  });

  it("answers 404 when the real platforms are configured, and the QStash route 404 without QStash", async () => {
    const real = await createTestApp({ env: { GRAPH_API_BASE: "https://graph.example.test", META_APP_ID: "a", META_APP_SECRET: "b" } });
    try {
      const { apiKey } = await real.createUser();
      const res = await real.app.request("/sandbox/accounts", {
        method: "POST",
        headers: real.json(apiKey),
        body: JSON.stringify({ platform: "pageplatform", name: "x" }),
      });
      expect(res.status).toBe(404);
      expect((await real.app.request("/sandbox/graph/v23.0/1/feed", { method: "POST" })).status).toBe(404);
    } finally {
      await real.close();
    }
    expect((await h.app.request("/api/internal/deliveries/publish", { method: "POST", body: "{}" })).status).toBe(404);
  });
});

/** 40 concurrent publishes, half to an account with a fault pending 3 times: 3 faults answered, the other 37 stored. */
async function burstWithFault(app: TestApp): Promise<void> {
  const graph = (path: string, params: Record<string, string>, method = "POST") =>
    method === "GET"
      ? app.app.request(`/sandbox/graph/v23.0/${path}?${new URLSearchParams(params)}`)
      : app.app.request(`/sandbox/graph/v23.0/${path}`, {
          method,
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams(params).toString(),
        });
  const [faulty, clean] = [newSandboxToken("pageplatform"), newSandboxToken("pageplatform")];
  await saveToken(app.db, faulty, { owner: "test", platformAccountId: "3131" });
  await saveToken(app.db, clean, { owner: "test", platformAccountId: "3232" });
  await setFault(app.db, { owner: "test", platformAccountId: "3131" }, "rate_limit", 3);
  const burst = await Promise.all(
    Array.from({ length: 40 }, (_, i) => (i % 2 ? ["3131", faulty] : ["3232", clean])).map(async ([account, token], i) => {
      const res = await graph(`${account}/feed`, { message: `burst ${i}`, access_token: token! });
      return { account, message: `burst ${i}`, body: await json(res) };
    }),
  );
  const limited = burst.filter((b) => b.body.error);
  expect(limited.map((b) => [b.account, b.body.error.code])).toEqual([
    ["3131", 32],
    ["3131", 32],
    ["3131", 32],
  ]);
  const created = burst.filter((b) => !b.body.error);
  expect(created).toHaveLength(37);
  for (const [account, token] of [
    ["3131", faulty],
    ["3232", clean],
  ] as const) {
    const feed = await json(await graph(`${account}/feed`, { access_token: token, limit: "100" }, "GET"));
    const mine = created.filter((b) => b.account === account);
    expect(feed.data.map((d: { id: string }) => d.id).sort()).toEqual(mine.map((b) => b.body.id).sort());
    expect(new Set(feed.data.map((d: { message: string }) => d.message))).toEqual(new Set(mine.map((b) => b.message)));
  }
  // The fault is used up: the next publish is stored.
  expect((await json(await graph("3131/feed", { message: "after", access_token: faulty }))).id).toMatch(/^3131_\d+$/);
}

/**
 * Items handed to the store in one tick go out as one batch, in the order given: the account with a fault
 * pending twice has its first two refused, and an item whose caption PostgreSQL's JSON refuses (a lone UTF-16
 * surrogate, which the one-item statement's driver writes as U+FFFD) fails, or is stored, only for itself.
 */
async function storedTogether(app: TestApp): Promise<void> {
  const owner = `together-${crypto.randomUUID()}`;
  await setFault(app.db, { owner, platformAccountId: "4141" }, "transient", 2);
  const item = (account: string, caption: string) => ({
    id: `${account}_${newGraphId()}`,
    owner,
    platform: "pageplatform",
    platformAccountId: account,
    kind: "feed",
    state: "published",
    caption,
  });
  const items = [item("4141", "f1"), item("4242", "c1"), item("4141", "f2"), item("4141", "f3"), item("4242", "c2"), item("4141", "f4")];
  const answers = await Promise.all(items.map((i) => insertUnlessFault(app.db, i)));
  expect(answers).toEqual(["transient", null, "transient", null, null, null]);
  const stored = await getItems(
    app.db,
    items.map((i) => i.id),
  );
  expect(stored.map((i) => i.caption).sort()).toEqual(["c1", "c2", "f3", "f4"]);

  const unpaired = item("4242", "x\ud800");
  const mixed = [item("4242", "m1"), unpaired, item("4242", "m2")];
  const outcomes = await Promise.allSettled(mixed.map((i) => insertUnlessFault(app.db, i)));
  expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", expect.any(String), "fulfilled"]);
  expect((await getItems(app.db, [mixed[0]!.id, mixed[2]!.id])).map((i) => i.caption).sort()).toEqual(["m1", "m2"]);
}
