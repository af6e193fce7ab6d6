/**
 * The hub in headless Chromium against the real embedded server (`tsx functions/node.ts`, PGlite, the
 * scheduler and the platform sandbox): sign in with the link `npm start` prints; create a key, use it, revoke
 * it; connect a sandbox page and its photo account on the consent page; publish through the API and watch
 * the posts page reach "published"; cancel a scheduled post from its page; sign out; sign in again with a
 * link from `npm run admin -- login-link`. Axe checks the main pages; screenshots go to docs/ with UPDATE_SCREENSHOTS=1.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { promisify } from "node:util";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { makeJpeg } from "../helpers/images";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";
import { haveSystemTool } from "../helpers/system-tools";
import { launchChromium, seriousViolations } from "./chromium";

const haveChromium = haveSystemTool("hub browser tests", "chromium");

const ROOT = new URL("../..", import.meta.url).pathname;
// The screenshots shown in the README: refreshed in docs/ with UPDATE_SCREENSHOTS=1, otherwise taken into a
// scratch directory, so a test run leaves the work tree as it was.
const DOCS = process.env.UPDATE_SCREENSHOTS === "1" ? join(ROOT, "docs") : mkdtempSync(join(tmpdir(), "hub-shots-"));

let server: ServerProcess;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let createdKey = "";
const violations: string[] = [];

beforeAll(async () => {
  if (!haveChromium) return;
  [server, browser] = await Promise.all([startServerProcess(), launchChromium()]);
  context = await browser.newContext({ viewport: { width: 1180, height: 760 } });
  context.setDefaultTimeout(20_000);
  page = await context.newPage();
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await server?.dispose();
});

const api = async (path: string, key: string, init: RequestInit = {}) =>
  fetch(`${server.baseUrl}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers } });

const signInLink = (text: string) => [...text.matchAll(/(http:\/\/127\.0\.0\.1:\d+\/hub\/login\?token=[0-9A-Za-z]+)/g)].map((m) => m[1]!);

async function audit() {
  violations.push(...(await seriousViolations(page)));
}

describe.sequential("the hub in a browser", { timeout: 90_000, skip: !haveChromium }, () => {
  it("signs in with the one-time link printed at start", async () => {
    const [link] = signInLink(server.output());
    expect(link).toBeTruthy();
    await page.goto(link!);
    await audit();
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL("**/hub/keys");
    await expect(page.getByRole("heading", { name: "API keys" }).isVisible()).resolves.toBe(true);
    expect(await page.textContent("header")).toContain("dev@localhost");
  });

  it("creates a key shown once, which the API accepts; revoked, the API refuses it", async () => {
    await page.getByLabel("Name").fill("browser test");
    await page.getByRole("button", { name: "Create key" }).click();
    createdKey = (await page.textContent("#new-key-value"))!.trim();
    expect(createdKey).toMatch(/^sk_[0-9A-Za-z]{38}$/);
    expect(await page.getByRole("button", { name: "Copy the new API key" }).isVisible()).toBe(true);
    expect((await api("/api/v1/social/accounts", createdKey)).status).toBe(200);

    await page.goto(`${server.baseUrl}/hub/keys`);
    expect(await page.content()).not.toContain(createdKey);
    await audit();
    await page.screenshot({ path: join(DOCS, "hub-keys.png"), fullPage: true });
    await page.getByRole("button", { name: `Revoke key browser test (${createdKey.slice(0, 11)})` }).click();
    await page.getByText("is revoked").waitFor();
    expect((await api("/api/v1/social/accounts", createdKey)).status).toBe(401);
  });

  it("connects a sandbox page and its photo account through the consent page; the API lists both", async () => {
    await page.goto(`${server.baseUrl}/hub/accounts`);
    await page.getByRole("button", { name: "Connect pageplatform" }).click();
    await page.waitForURL("**/sandbox/**/dialog/oauth?**");
    await audit();
    await page.getByLabel("Sandbox Bookshop").uncheck();
    await page.getByLabel("Sandbox Garage").uncheck();
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByText("Connected: Sandbox Bakery, @sandbox.bakery.").waitFor();
    await audit();
    await page.screenshot({ path: join(DOCS, "hub-accounts.png"), fullPage: true });
    const accounts = ((await (await api("/api/v1/social/accounts", server.apiKey)).json()) as any).data.accounts;
    expect(accounts.map((a: { id: string }) => a.id).sort()).toEqual(["pageplatform:1010000000000001", "photoplatform:1780000000000001"]);
  });

  it("shows a post published through the API reaching published on the posts page", async () => {
    const jpeg = (await makeJpeg(800, 1000)).toString("base64");
    const res = await api("/api/v1/social/posts", server.apiKey, {
      method: "POST",
      headers: { "Idempotency-Key": crypto.randomUUID() },
      body: JSON.stringify({
        accountIds: ["pageplatform:1010000000000001", "photoplatform:1780000000000001"],
        caption: "Fresh bread at 8",
        hashtags: ["bakery"],
        images: [{ base64: jpeg, mimeType: "image/jpeg" }],
      }),
    });
    expect(res.status).toBe(202);
    const id = ((await res.json()) as any).data.id;
    await page.goto(`${server.baseUrl}/hub/posts`);
    // The page refreshes itself while the post is on its way; this waits across those reloads.
    await page.locator(`tr:has(a[href="/hub/posts/${id}"]) td[data-label="Status"] .badge.published`).waitFor({ timeout: 30_000 });
    expect(await page.locator(`tr:has(a[href="/hub/posts/${id}"]) .badge.published`).count()).toBe(3);
    await audit();
  });

  it("explains a target the platform refused in words", async () => {
    const fault = await api("/sandbox/faults", server.apiKey, {
      method: "POST",
      body: JSON.stringify({ accountId: "photoplatform:1780000000000001", kind: "invalid", times: 1 }),
    });
    expect(fault.status).toBe(201);
    const jpeg = (await makeJpeg(1000, 1000)).toString("base64");
    const res = await api("/api/v1/social/posts", server.apiKey, {
      method: "POST",
      headers: { "Idempotency-Key": crypto.randomUUID() },
      body: JSON.stringify({
        accountIds: ["pageplatform:1010000000000001", "photoplatform:1780000000000001"],
        caption: "Croissant Friday",
        images: [{ base64: jpeg, mimeType: "image/jpeg" }],
      }),
    });
    const id = ((await res.json()) as any).data.id;
    await page.goto(`${server.baseUrl}/hub/posts/${id}`);
    await page.locator("h1 .badge.partially_published").waitFor({ timeout: 30_000 });
    expect(await page.textContent("main")).toContain("The platform refused this post as it is");
  });

  it("cancels a scheduled post from its page", async () => {
    const res = await api("/api/v1/social/posts", server.apiKey, {
      method: "POST",
      headers: { "Idempotency-Key": crypto.randomUUID() },
      body: JSON.stringify({
        accountIds: ["pageplatform:1010000000000001"],
        caption: "Weekend offer",
        scheduledFor: new Date(Date.now() + 2 * 86_400_000).toISOString(),
      }),
    });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as any).data.id;
    await page.goto(`${server.baseUrl}/hub/posts/${id}`);
    await audit();
    await page.getByRole("button", { name: "Cancel post" }).click();
    await page.getByText("Cancelled: the targets").waitFor();
    const post = ((await (await api(`/api/v1/social/posts/${id}`, server.apiKey)).json()) as any).data;
    expect(post.status).toBe("cancelled");
    expect(post.accounts[0].status).toBe("cancelled");
    await page.goto(`${server.baseUrl}/hub/posts`);
    await page.screenshot({ path: join(DOCS, "hub-posts.png"), fullPage: true });
  });

  it("shows the first request with this server's base URL, and links the API reference, /docs", async () => {
    await page.goto(`${server.baseUrl}/hub/start`);
    expect(await page.textContent("#cmd-1")).toContain(`${server.baseUrl}/api/v1/social/accounts`);
    expect(await page.textContent("#cmd-2")).toContain("pageplatform:1010000000000001");
    await audit();
    await page.getByRole("navigation", { name: "Hub" }).getByRole("link", { name: "API reference" }).click();
    await page.waitForURL("**/docs");
    const reference = await page.request.get(`${server.baseUrl}/hub/reference`, { maxRedirects: 0 });
    expect([reference.status(), reference.headers().location]).toEqual([301, "/docs"]);
  });

  it("renders the API reference (/docs) with no network beyond this machine", async () => {
    const offline = await browser.newContext();
    const outside: string[] = [];
    await offline.route("**", (route) => {
      const { hostname } = new URL(route.request().url());
      if (["127.0.0.1", "localhost", "[::1]"].includes(hostname)) return route.continue();
      outside.push(route.request().url());
      return route.abort("internetdisconnected");
    });
    const docs = await offline.newPage();
    await docs.goto(`${server.baseUrl}/docs`, { waitUntil: "load" });
    await docs.getByRole("heading", { name: "Operations" }).waitFor();
    const operation = docs.getByRole("heading", { level: 3, name: /^POST \/api\/v1\/social\/posts$/ });
    await expect(operation.isVisible()).resolves.toBe(true);
    expect(outside).toEqual([]);
    await offline.close();
  });

  it("looks tidy on a phone", async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, storageState: await context.storageState() });
    const small = await phone.newPage();
    await small.goto(`${server.baseUrl}/hub/posts`);
    expect(await small.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
    await small.screenshot({ path: join(DOCS, "hub-posts-phone.png"), fullPage: true });
    await phone.close();
  });

  it("works without JavaScript: create and revoke a key", async () => {
    const noJs = await browser.newContext({ javaScriptEnabled: false, storageState: await context.storageState() });
    noJs.setDefaultTimeout(20_000);
    const plain = await noJs.newPage();
    await plain.goto(`${server.baseUrl}/hub/keys`);
    await plain.getByLabel("Name").fill("no script");
    await plain.getByRole("button", { name: "Create key" }).click();
    const key = (await plain.textContent("#new-key-value"))!.trim();
    expect((await api("/api/v1/social/accounts", key)).status).toBe(200);
    await plain.getByRole("button", { name: `Revoke key no script (${key.slice(0, 11)})` }).click();
    await plain.getByText("is revoked").waitFor();
    expect((await api("/api/v1/social/accounts", key)).status).toBe(401);
    await noJs.close();
  });

  it("shows reconnect when the platform revokes a token; reconnecting makes the account publishable again", async () => {
    const fault = await api("/sandbox/faults", server.apiKey, {
      method: "POST",
      body: JSON.stringify({ accountId: "pageplatform:1010000000000001", kind: "auth", times: 1 }),
    });
    expect(fault.status).toBe(201);
    const res = await api("/api/v1/social/posts", server.apiKey, {
      method: "POST",
      headers: { "Idempotency-Key": crypto.randomUUID() },
      body: JSON.stringify({ accountIds: ["pageplatform:1010000000000001"], caption: "Token test" }),
    });
    const id = ((await res.json()) as any).data.id;
    await page.goto(`${server.baseUrl}/hub/posts/${id}`);
    await page.locator("h1 .badge.failed").waitFor({ timeout: 30_000 });
    expect(await page.textContent("main")).toContain("Reconnect it on the Accounts page");
    await page.goto(`${server.baseUrl}/hub/accounts`);
    expect(await page.locator(".badge.reconnect").count()).toBe(1);
    await page.getByRole("button", { name: "Connect pageplatform" }).click();
    await page.getByLabel("Sandbox Bookshop").uncheck();
    await page.getByLabel("Sandbox Garage").uncheck();
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByText("Connected: Sandbox Bakery").waitFor();
    expect(await page.locator(".badge.reconnect").count()).toBe(0);
    const accounts = ((await (await api("/api/v1/social/accounts", server.apiKey)).json()) as any).data.accounts;
    expect(accounts.map((a: { id: string; canPublish: boolean }) => `${a.id} ${a.canPublish}`).sort()).toEqual([
      "pageplatform:1010000000000001 true",
      "photoplatform:1780000000000001 true",
    ]);
  });

  it("signs out; the session is gone; an admin login link signs in again, once", async () => {
    await page.goto(`${server.baseUrl}/hub/keys`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Signed out" }).waitFor();
    await page.goto(`${server.baseUrl}/hub/keys`);
    expect(new URL(page.url()).pathname).toBe("/hub/signin");
    await audit();

    const { stdout } = await promisify(execFile)(join(ROOT, "node_modules/.bin/tsx"), ["functions/node/admin.ts", "login-link", "--email", "dev@localhost"], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: server.dataDir, PORT: new URL(server.baseUrl).port, HOST: "127.0.0.1" },
    });
    const [link] = signInLink(stdout);
    await page.goto(link!);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL("**/hub/keys");
    await page.goto(link!);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText("This sign-in link is not valid").waitFor();
  });

  it("found no serious accessibility violations and leaked no token or key into the server's log", async () => {
    expect(violations).toEqual([]);
    const log = server.output();
    expect(createdKey).not.toBe("");
    expect(log).not.toContain(createdKey);
    expect(log).not.toMatch(/sandbox-(pageplatform|photoplatform|user|code)-[0-9a-f]{8}/);
  });
});
