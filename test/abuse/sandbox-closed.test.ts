/**
 * The platform sandbox is closed to strangers: its consent dialog wants a hub session; its
 * app's secret belongs to the deployment; the images it is asked to publish are read from the service's own
 * storage or fetched by the safe fetcher (never loopback, in any spelling, nor through a redirect); its expired
 * rows are purged by the sweep; its unauthenticated routes are limited per client address; and a sandbox
 * account's name must be Unicode.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { and, eq, inArray, sql } from "drizzle-orm";
import { sandboxAccountFaults, sandboxGrants, sandboxItems, sandboxTokens, socialAccounts } from "../../db/schema";
import { parseConfig } from "../../src/config";
import { runSweep } from "../../src/social/delivery/sweep";
import { withSandboxApp } from "../../src/social/sandbox/app-secret";
import { SANDBOX_REQUESTS_PER_MINUTE } from "../../src/social/sandbox/limits";
import type { TestApp } from "../helpers/harness";
import { startImageServer, type ImageServer } from "../helpers/image-server";
import { haveSystemTool } from "../helpers/system-tools";
import { makeJpeg } from "../helpers/images";
import { createHubTest, decodeHtml, type HubBrowser, type HubTest } from "../hub/hub-client";

const DIALOG = "/sandbox/v23.0/dialog/oauth";
const GRAPH = "/sandbox/graph/v23.0";
const OLD_SECRET = "sandbox-app-secret";

let jpeg: Buffer;
/** An HTTP server on loopback that answers every request with a JPEG and counts them. */
let local: { server: Server; port: number; hits: string[] };
/** An HTTPS server the test app's safe fetcher may reach (its test allowance), standing in for a public host. */
let remote: ImageServer;
let t: HubTest;
let h: TestApp;

// The loopback HTTPS image server's certificate is made by openssl: without it every case is skipped.
const haveOpenssl = haveSystemTool("abuse/sandbox-closed", "openssl");
beforeEach(({ skip }) => skip(!haveOpenssl));

beforeAll(async () => {
  if (!haveOpenssl) return;
  jpeg = await makeJpeg(400, 500);
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.headers.host}${req.url}`);
    res.writeHead(200, { "content-type": "image/jpeg", "content-length": String(jpeg.length) }).end(jpeg);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  local = { server, port: (server.address() as AddressInfo).port, hits };
  remote = await startImageServer();
  remote.route("/photo.jpg", (_req, res) => res.writeHead(200, { "content-type": "image/jpeg" }).end(jpeg));
  t = await createHubTest({ fetcherTestAllow: { origins: [remote.origin], ca: remote.ca } });
  h = t.h;
});
afterAll(async () => {
  await h?.close();
  await remote?.close();
  await new Promise((resolve) => local?.server.close(resolve));
});

const form = (params: Record<string, string>, headers: Record<string, string> = {}) => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
  body: new URLSearchParams(params).toString(),
});
const graph = (path: string, params: Record<string, string>) => h.app.request(`${GRAPH}/${path}`, form(params));
const graphGet = (path: string, params: Record<string, string>) => h.app.request(`${GRAPH}/${path}?${new URLSearchParams(params)}`);
const callback = () => `${h.services.config.publicBaseUrl}/hub/accounts/callback`;
const dialogQuery = () => new URLSearchParams({ client_id: "sandbox-app", redirect_uri: callback(), state: "s", scope: "pages_manage_posts" }).toString();

/** The consent page's hidden fields, as the signed-in browser received them. */
async function consent(b: HubBrowser): Promise<Record<string, string>> {
  const page = await b.page(`${DIALOG}?${dialogQuery()}`);
  expect(page.res.status).toBe(200);
  return Object.fromEntries([...page.html.matchAll(/type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, decodeHtml(m[2]!)]));
}

/** A code from the dialog, granted by a signed-in user. */
async function codeFromDialog(): Promise<string> {
  const b = t.browser();
  await b.signIn((await h.createUser()).userId);
  const granted = await b.post(DIALOG, { ...(await consent(b)), page: "1010000000000001", decision: "allow" }, { csrf: null });
  expect(granted.res.status).toBe(302);
  return new URL(granted.res.headers.get("location")!).searchParams.get("code")!;
}

/** A user's sandbox account connected through the control route, and the token the delivery would use. */
async function connected(platform: "pageplatform" | "photoplatform", platformAccountId: string) {
  const user = await h.createUser();
  const res = await h.app.request("/sandbox/accounts", {
    method: "POST",
    headers: h.json(user.apiKey),
    body: JSON.stringify({ platform, name: "Shop", platformAccountId }),
  });
  expect(res.status).toBe(201);
  const [row] = await h.db
    .select()
    .from(socialAccounts)
    .where(and(eq(socialAccounts.userId, user.userId), eq(socialAccounts.id, `${platform}:${platformAccountId}`)));
  return { user, token: await h.services.tokens.decrypt(row!.tokenCiphertext) };
}

const grantCount = async () => (await h.db.select({ n: sql<number>`count(*)::int` }).from(sandboxGrants))[0]!.n;

describe("the consent dialog wants a hub session", () => {
  it("signed out: the page sends to sign-in and shows no form; a posted consent is refused and makes no code", async () => {
    const page = await h.app.request(`${DIALOG}?${dialogQuery()}`);
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/hub/signin");
    expect(await page.text()).not.toContain("<form");

    const before = await grantCount();
    const posted = await h.app.request(
      DIALOG,
      form({ client_id: "sandbox-app", redirect_uri: callback(), state: "s", page: "1010000000000001", decision: "allow" }),
    );
    expect(posted.status).toBe(401);
    expect(posted.headers.get("location")).toBeNull();
    expect(await grantCount()).toBe(before);
  });

  it("signed in: a consent without the session's token, or from another site, is refused; with both it gives a code", async () => {
    const b = t.browser();
    await b.signIn((await h.createUser()).userId);
    const hidden = await consent(b);
    expect(hidden._csrf).toBe(b.csrf);
    const { _csrf, ...withoutToken } = hidden;
    const grant = { page: "1010000000000001", decision: "allow" };
    expect((await b.post(DIALOG, { ...withoutToken, ...grant }, { csrf: null })).res.status).toBe(403);
    expect((await b.post(DIALOG, { ...withoutToken, ...grant, _csrf: "x".repeat(_csrf!.length) }, { csrf: null })).res.status).toBe(403);
    expect((await b.post(DIALOG, { ...hidden, ...grant }, { csrf: null, origin: "https://evil.example" })).res.status).toBe(403);
    const granted = await b.post(DIALOG, { ...hidden, ...grant }, { csrf: null });
    expect(granted.res.status).toBe(302);
    expect(new URL(granted.res.headers.get("location")!).searchParams.get("code")).toMatch(/^sandbox-code-/);
  });

  it("a session cookie that is not a live session is no session", async () => {
    const headers = { cookie: `hub_session=${"A".repeat(43)}` };
    expect((await h.app.request(`${DIALOG}?${dialogQuery()}`, { headers })).status).toBe(303);
    expect((await h.app.request(DIALOG, form({ client_id: "sandbox-app", redirect_uri: callback(), decision: "allow" }, headers))).status).toBe(401);
  });
});

describe("the sandbox app's secret belongs to the deployment", () => {
  it("the old constant secret is refused at the token exchange; this deployment's is taken", async () => {
    const code = await codeFromDialog();
    const exchange = (secret: string) => graphGet("oauth/access_token", { client_id: "sandbox-app", client_secret: secret, redirect_uri: callback(), code });
    const refused = await exchange(OLD_SECRET);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as any).error).toMatchObject({ type: "OAuthException", code: 1 });
    const secret = h.services.config.graph.appSecret!;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const taken = await exchange(secret);
    expect(taken.status).toBe(200);
    expect(((await taken.json()) as any).access_token).toMatch(/^sandbox-user-/);
  });

  it("is derived from the deployment's key: the same for every process that shares it, another for another key", async () => {
    const on = parseConfig({ PLATFORM_SANDBOX: "on" });
    const key = Buffer.alloc(32, 7).toString("base64");
    const [a, b, other, off] = await Promise.all([
      withSandboxApp(on, key),
      withSandboxApp(on, key),
      withSandboxApp(on, Buffer.alloc(32, 8).toString("base64")),
      withSandboxApp(parseConfig({}), key),
    ]);
    expect(a.graph).toMatchObject({ appId: "sandbox-app", appSecret: b.graph.appSecret });
    expect(other.graph.appSecret).not.toBe(a.graph.appSecret);
    expect([a.graph.appSecret, other.graph.appSecret]).not.toContain(OLD_SECRET);
    expect(a.graph.appSecret).not.toContain(key.replace(/=+$/, ""));
    // Without the sandbox nothing is added: the real platforms' app comes from META_APP_ID and META_APP_SECRET.
    expect(off.graph.appSecret).toBeUndefined();
  });
});

describe("images the sandbox is asked to publish", () => {
  let page: string;
  let photo: string;
  beforeAll(async () => {
    page = (await connected("pageplatform", "5151")).token;
    photo = (await connected("photoplatform", "5252")).token;
  });

  const publishPage = (url: string) => graph("5151/photos", { url, caption: "c", access_token: page });
  const publishPhoto = (url: string) => graph("5252/media", { image_url: url, caption: "c", access_token: photo });

  it("loopback in every spelling, and a redirect to it from an allowed host, is refused and never requested", async () => {
    const port = local.port;
    const urls = [
      `http://127.0.0.1:${port}/a.jpg`,
      `http://2130706433:${port}/a.jpg`,
      `http://0x7f000001:${port}/a.jpg`,
      `http://[::ffff:127.0.0.1]:${port}/a.jpg`,
      `http://localhost:${port}/a.jpg`,
      `http://127.1:${port}/a.jpg`,
      `https://127.0.0.1:${port}/a.jpg`,
      "http://localhost/a.jpg",
      remote.url(`/redirect?to=${encodeURIComponent(`http://127.0.0.1:${port}/a.jpg`)}`),
    ];
    for (const url of urls) {
      const onPage = await publishPage(url);
      expect(onPage.status, url).toBe(400);
      expect(((await onPage.json()) as any).error.code, url).toBe(324);
      const onPhoto = await publishPhoto(url);
      expect(onPhoto.status, url).toBe(400);
      expect(((await onPhoto.json()) as any).error, url).toMatchObject({ code: 9004, error_subcode: 2207052 });
    }
    expect(local.hits).toEqual([]);
    // The allowed host was asked and answered with the redirect, which was not followed.
    expect(remote.requests.filter((r) => r.path.startsWith("/redirect")).length).toBe(2);
  });

  it("an image larger than a stored post image is refused", async () => {
    const big = await publishPage(remote.url(`/big?bytes=${9 * 1024 * 1024}`));
    expect(((await big.json()) as any).error.code).toBe(324);
  });

  it("the service's own stored image publishes (read from storage), and so does a public host's", async () => {
    const { apiKey } = await h.createUser();
    const media = await h.app.request("/api/v1/social/media", {
      method: "POST",
      headers: h.json(apiKey),
      body: JSON.stringify({ base64: jpeg.toString("base64") }),
    });
    expect(media.status).toBe(201);
    const own = ((await media.json()) as any).data.url as string;
    expect(own.startsWith(`${h.services.config.publicBaseUrl}/files/`)).toBe(true);
    for (const url of [own, remote.url("/photo.jpg")]) {
      const onPage = await publishPage(url);
      expect(onPage.status, url).toBe(200);
      expect(((await onPage.json()) as any).post_id).toMatch(/^5151_\d+$/);
      expect((await publishPhoto(url)).status, url).toBe(200);
    }
    // A URL under the service's files that names no stored object is refused without a request.
    const missing = await publishPage(`${h.services.config.publicBaseUrl}/files/media/${crypto.randomUUID()}.jpg`);
    expect(((await missing.json()) as any).error.code).toBe(324);
    expect(local.hits).toEqual([]);
  });
});

describe("expired sandbox rows", () => {
  it("the sweep purges expired and used codes, expired user tokens, dead items and spent faults, and keeps the rest", async () => {
    const now = Date.now();
    const ago = (days: number) => new Date(now - days * 86_400_000);
    const soon = new Date(now + 600_000);
    const tag = crypto.randomUUID().slice(0, 8);
    const grant = (value: string, kind: "code" | "user_token", expiresAt: Date, usedAt: Date | null = null) => ({
      value: `${value}-${tag}`,
      kind,
      owner: `o-${tag}`,
      pageIds: [],
      redirectUri: null,
      expiresAt,
      usedAt,
    });
    await h.db
      .insert(sandboxGrants)
      .values([
        grant("code-expired", "code", ago(0.01)),
        grant("code-used", "code", soon, ago(0.001)),
        grant("code-live", "code", soon),
        grant("user-expired", "user_token", ago(1)),
        grant("user-live", "user_token", soon),
      ]);
    const retention = h.services.config.retentionDays;
    const item = (id: string, kind: string, state: string, createdAt: Date) => ({
      id: `${id}-${tag}`,
      owner: `o-${tag}`,
      platform: "photoplatform",
      platformAccountId: "1",
      kind,
      state,
      createdAt,
    });
    await h.db
      .insert(sandboxItems)
      .values([
        item("container-stale", "container", "IN_PROGRESS", ago(3)),
        item("container-finished-stale", "container", "FINISHED", ago(3)),
        item("photo-unpublished-stale", "photo", "unpublished", ago(3)),
        item("container-published", "container", "PUBLISHED", ago(3)),
        item("container-fresh", "container", "IN_PROGRESS", ago(0.5)),
        item("media-past-retention", "media", "published", ago(retention + 1)),
        item("media-recent", "media", "published", ago(retention - 1)),
      ]);
    await h.db.insert(sandboxAccountFaults).values([
      { owner: `o-${tag}`, platformAccountId: "spent", kind: "transient", remaining: 0 },
      { owner: `o-${tag}`, platformAccountId: "pending", kind: "transient", remaining: 2 },
    ]);

    const result = await runSweep(h.services, { publishDue: false });
    expect(result.purgedSandbox).toBeGreaterThanOrEqual(8);

    const grants = await h.db
      .select({ value: sandboxGrants.value })
      .from(sandboxGrants)
      .where(eq(sandboxGrants.owner, `o-${tag}`));
    expect(grants.map((g) => g.value).sort()).toEqual([`code-live-${tag}`, `user-live-${tag}`]);
    const items = await h.db
      .select({ id: sandboxItems.id })
      .from(sandboxItems)
      .where(eq(sandboxItems.owner, `o-${tag}`));
    expect(items.map((i) => i.id).sort()).toEqual([`container-fresh-${tag}`, `container-published-${tag}`, `media-recent-${tag}`]);
    const faults = await h.db
      .select({ id: sandboxAccountFaults.platformAccountId })
      .from(sandboxAccountFaults)
      .where(eq(sandboxAccountFaults.owner, `o-${tag}`));
    expect(faults.map((f) => f.id)).toEqual(["pending"]);
  });

  it("listing a consent's pages again hands out the same page tokens, so the token table does not grow per call", async () => {
    const code = await codeFromDialog();
    const exchanged = await graphGet("oauth/access_token", {
      client_id: "sandbox-app",
      client_secret: h.services.config.graph.appSecret!,
      redirect_uri: callback(),
      code,
    });
    const userToken = ((await exchanged.json()) as any).access_token as string;
    const list = async () =>
      (((await (await graphGet("me/accounts", { access_token: userToken })).json()) as any).data as Array<{ access_token: string }>).map((p) => p.access_token);
    const first = await list();
    const count = async () => (await h.db.select({ n: sql<number>`count(*)::int` }).from(sandboxTokens).where(inArray(sandboxTokens.token, first)))[0]!.n;
    const total = async () => (await h.db.select({ n: sql<number>`count(*)::int` }).from(sandboxTokens))[0]!.n;
    const before = await total();
    for (let i = 0; i < 5; i++) expect(await list()).toEqual(first);
    expect(await total()).toBe(before);
    expect(await count()).toBe(first.length);
  });
});

describe("unauthenticated sandbox routes are limited per client", () => {
  let server: ServerType;
  let base: string;
  beforeAll(async () => {
    server = serve({ fetch: h.app.fetch, port: 0, hostname: "127.0.0.1" });
    await new Promise((resolve) => server.once("listening", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it("a burst from one address gets 429 with Retry-After, on the Graph routes and the dialog; other clients and in-process calls go on", async () => {
    const exchange = `${base}${GRAPH}/oauth/access_token?client_id=x&client_secret=y&code=z`;
    const statuses: number[] = [];
    for (let sent = 0; sent < SANDBOX_REQUESTS_PER_MINUTE + 20; sent += 20) {
      const batch = await Promise.all(Array.from({ length: 20 }, () => fetch(exchange).then(async (res) => (await res.arrayBuffer(), res.status))));
      statuses.push(...batch);
    }
    expect(statuses.filter((s) => s === 400).length).toBe(SANDBOX_REQUESTS_PER_MINUTE);
    expect(statuses.filter((s) => s === 429).length).toBe(20);

    const limited = await fetch(exchange);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await limited.json()) as any).error).toMatchObject({ type: "OAuthException", code: 4 });
    // A header naming another client does not count on Node, where the socket says who is calling.
    const forged = await fetch(exchange, { headers: { "cf-connecting-ip": "198.51.100.23" } });
    expect(forged.status).toBe(429);
    const dialog = await fetch(`${base}${DIALOG}?${dialogQuery()}`, { redirect: "manual" });
    expect(dialog.status).toBe(429);
    expect(dialog.headers.get("retry-after")).not.toBeNull();
    const consented = await fetch(`${base}${DIALOG}`, { ...form({ decision: "allow" }), redirect: "manual" });
    expect(consented.status).toBe(429);
    const feed = await fetch(`${base}${GRAPH}/5151/feed?access_token=nope`);
    expect(feed.status).toBe(429);

    // Another client's address (on Workers, Cloudflare's header), and this process's own calls, are not limited.
    expect((await h.app.request(exchange.slice(base.length), { headers: { "cf-connecting-ip": "203.0.113.9" } })).status).toBe(400);
    expect((await h.app.request(exchange.slice(base.length))).status).toBe(400);
  });
});

describe("sandbox account names are Unicode", () => {
  it("a lone UTF-16 surrogate in a connected account's name or an account id is 422; in a Graph parameter, Graph's invalid parameter", async () => {
    const user = await h.createUser();
    for (const name of ["\ud800", "Shop \udc00", "a\ud83d"]) {
      const body = JSON.stringify({ platform: "pageplatform", name, platformAccountId: "6161" });
      expect(body).toContain("\\ud");
      const res = await h.app.request("/sandbox/accounts", { method: "POST", headers: h.json(user.apiKey), body });
      expect(res.status, JSON.stringify(name)).toBe(422);
      expect(((await res.json()) as any).error).toMatchObject({ code: "VALIDATION_FAILED", details: [{ path: "name" }] });
    }
    const fault = await h.app.request("/sandbox/faults", {
      method: "POST",
      headers: h.json(user.apiKey),
      body: JSON.stringify({ accountId: "pageplatform:\ud800", kind: "transient", times: 1 }),
    });
    expect(fault.status).toBe(422);
    // A well-formed astral character is fine.
    const ok = await h.app.request("/sandbox/accounts", {
      method: "POST",
      headers: h.json(user.apiKey),
      body: JSON.stringify({ platform: "pageplatform", name: "Shop \u{1F600}", platformAccountId: "6161" }),
    });
    expect(ok.status).toBe(201);

    const { token } = await connected("pageplatform", "6262");
    const posted = await h.app.request(`${GRAPH}/6262/feed`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ access_token: token, message: "sale \ud800" }),
    });
    expect(posted.status).toBe(400);
    expect(((await posted.json()) as any).error).toMatchObject({ type: "OAuthException", code: 100 });
  });
});
