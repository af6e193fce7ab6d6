/**
 * The hub in headless Chromium against the real embedded server (`npm start`: PGlite, the scheduler and the
 * platform sandbox): sign in with the link `npm start` prints; create a key (a reload creates no second one),
 * use it, revoke it after a confirmation; connect a sandbox page and its photo account on the consent page
 * (the code leaves the address bar); publish through the API and watch the posts page reach "published",
 * with account names and thumbnails; cancel a scheduled post after a confirmation; run the getting-started
 * commands as shown; disconnect after a confirmation; check /docs and the signed-out page at a phone's width;
 * sign out; sign in again with a link from `npm run admin -- login-link`. Axe checks the main pages;
 * screenshots go to docs/ with UPDATE_SCREENSHOTS=1.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
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

async function audit(on: Page = page) {
  violations.push(...(await seriousViolations(on)));
}

/** The page fits its viewport's width: nothing but a table's or a code block's own frame scrolls sideways. */
const fitsWidth = (on: Page) => on.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

/** A phone-sized context (375 CSS pixels wide), signed in like the main one or signed out. */
async function phone(signedIn: boolean): Promise<BrowserContext> {
  return browser.newContext({
    viewport: { width: 375, height: 812 },
    deviceScaleFactor: 2,
    ...(signedIn ? { storageState: await context.storageState() } : {}),
  });
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

  it("creates a key shown once, which the API accepts; a reload shows it no more and makes no second key", async () => {
    await page.getByLabel("Name").fill("browser test");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.waitForURL(`${server.baseUrl}/hub/keys`);
    createdKey = (await page.textContent("#new-key-value"))!.trim();
    expect(createdKey).toMatch(/^sk_[0-9A-Za-z]{38}$/);
    expect(page.url()).not.toContain(createdKey);
    expect(await page.getByRole("button", { name: "Copy the new API key" }).isVisible()).toBe(true);
    await audit();
    await page.screenshot({ path: join(DOCS, "hub-keys-created.png"), fullPage: true });
    expect((await api("/api/v1/social/accounts", createdKey)).status).toBe(200);

    // The browser's own reload: after a POST answered by a redirect it reloads the GET, creating nothing.
    await page.reload();
    expect(await page.content()).not.toContain(createdKey);
    expect(await page.locator('td[data-label="Name"]', { hasText: /^browser test$/ }).count()).toBe(1);
    await page.goBack();
    await page.reload();
    expect(await page.locator('td[data-label="Name"]', { hasText: /^browser test$/ }).count()).toBe(1);
    await page.goto(`${server.baseUrl}/hub/keys`);
    await audit();
    await page.screenshot({ path: join(DOCS, "hub-keys.png"), fullPage: true });
  });

  it("revokes a key only once confirmed: 'keep it' leaves it working, 'revoke' stops it", async () => {
    const revoke = page.getByRole("link", { name: `Revoke key browser test (${createdKey.slice(0, 11)})` });
    await revoke.click();
    await page.getByRole("heading", { name: "Revoke the key “browser test”?" }).waitFor();
    await audit();
    await page.getByRole("link", { name: "No, keep it" }).click();
    await page.waitForURL(`${server.baseUrl}/hub/keys`);
    expect((await api("/api/v1/social/accounts", createdKey)).status).toBe(200);

    await revoke.click();
    await page.getByRole("button", { name: "Yes, revoke it" }).click();
    await page.waitForURL(`${server.baseUrl}/hub/keys`);
    await page.getByText("is revoked").waitFor();
    expect((await api("/api/v1/social/accounts", createdKey)).status).toBe(401);
    await page.reload();
    expect(await page.getByText("is revoked").count()).toBe(0);
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
    // The callback answered with a redirect: the code and state are gone from the address bar and the history entry.
    expect(page.url()).toBe(`${server.baseUrl}/hub/accounts`);
    const history = await page.evaluate(() => location.href);
    expect(history).not.toMatch(/code=|state=/);
    // The photo account is shown under its page.
    await expect(page.getByRole("list", { name: "Linked to Sandbox Bakery" }).getByText("@sandbox.bakery").isVisible()).resolves.toBe(true);
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
    const row = page.locator(`tr:has(a[href="/hub/posts/${id}"])`);
    expect(await row.locator(".badge.published").count()).toBe(3);
    // Targets by their accounts' names, not ids; the image as a loaded thumbnail.
    const targets = (await row.locator('td[data-label="Targets"]').textContent())!;
    expect(targets).toContain("Sandbox Bakery");
    expect(targets).toContain("@sandbox.bakery");
    expect(targets).not.toMatch(/pageplatform:|photoplatform:/);
    const thumb = row.locator(".thumbs img");
    await thumb.waitFor();
    await expect.poll(() => thumb.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBeGreaterThan(0);
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
    // The platform's own words are folded away behind "Details".
    const raw = page.locator("details.raw code");
    expect(await raw.isVisible()).toBe(false);
    await page.getByText("Details").click();
    expect(await raw.isVisible()).toBe(true);
    expect(await raw.textContent()).toContain("PLATFORM_REJECTED");
    await page.screenshot({ path: join(DOCS, "hub-post-refused.png"), fullPage: true });
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
    const status = async () => ((await (await api(`/api/v1/social/posts/${id}`, server.apiKey)).json()) as any).data.status;
    await page.getByRole("link", { name: "Cancel post" }).click();
    await page.getByRole("heading", { name: "Cancel this post?" }).waitFor();
    await audit();
    await page.screenshot({ path: join(DOCS, "hub-confirm.png"), fullPage: true });
    await page.getByRole("link", { name: "No, keep it" }).click();
    await page.waitForURL(`${server.baseUrl}/hub/posts/${id}`);
    expect(await status()).toBe("scheduled");

    await page.getByRole("link", { name: "Cancel post" }).click();
    await page.getByRole("button", { name: "Yes, cancel it" }).click();
    await page.waitForURL(`${server.baseUrl}/hub/posts/${id}`);
    await page.getByText("Cancelled: the targets").waitFor();
    const post = ((await (await api(`/api/v1/social/posts/${id}`, server.apiKey)).json()) as any).data;
    expect(post.status).toBe("cancelled");
    expect(post.accounts[0].status).toBe("cancelled");
    await page.reload();
    expect(await page.getByText("Cancelled: the targets").count()).toBe(0);
    await page.goto(`${server.baseUrl}/hub/posts`);
    await page.screenshot({ path: join(DOCS, "hub-posts.png"), fullPage: true });
  });

  it("getting started: a QR code, a product photo and a post, whose commands run as shown", async () => {
    await page.goto(`${server.baseUrl}/hub/start`);
    expect(await page.textContent("#cmd-1")).toContain(`${server.baseUrl}/api/qr-code/generate/`);
    expect(await page.textContent("#cmd-2")).toContain(`${server.baseUrl}/api/image/product-photography`);
    expect(await page.textContent("#cmd-3")).toContain("pageplatform:1010000000000001");
    const text = (await page.locator("pre").allTextContents()).join("\n");
    expect(text).not.toMatch(/uuidgen|-X DELETE/);
    await audit();
    await page.screenshot({ path: join(DOCS, "hub-start.png"), fullPage: true });

    // Steps 1 to 4 as a person pastes them, in a folder holding their product photo, with their key exported.
    const dir = mkdtempSync(join(tmpdir(), "hub-start-"));
    copyFileSync(join(ROOT, "docs/photo/product.jpg"), join(dir, "product.jpg"));
    const steps = (await page.locator("pre[id^=cmd-]:not(#cmd-0)").allTextContents()).join("\n");
    const { stdout } = await promisify(execFile)("bash", ["-c", `set -euo pipefail\n${steps}`], {
      cwd: dir,
      env: { PATH: process.env.PATH, SHOPKIT_API_KEY: server.apiKey },
      maxBuffer: 64 * 1024 * 1024,
    });
    const png = (name: string) => readFileSync(join(dir, name)).subarray(0, 8).toString("hex");
    expect(png("qr.png")).toBe("89504e470d0a1a0a");
    expect(png("photo.png")).toBe("89504e470d0a1a0a");
    const postId = stdout.split("\n").find((line) => /^[0-9a-f-]{36}$/.test(line))!;
    expect(postId).toBeTruthy();
    await expect
      .poll(async () => ((await (await api(`/api/v1/social/posts/${postId}`, server.apiKey)).json()) as any).data.status, { timeout: 30_000 })
      .toBe("published");
    expect(stdout).toContain(`"id":"${postId}"`);
  });

  it("links the API reference, /docs", async () => {
    await page.goto(`${server.baseUrl}/hub/start`);
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

  it("fits a phone's width: the hub's pages, /docs, and the signed-out page", async () => {
    const signedIn = await phone(true);
    const small = await signedIn.newPage();
    for (const path of ["/hub/posts", "/hub/keys", "/hub/accounts", "/hub/start", "/docs"]) {
      await small.goto(`${server.baseUrl}${path}`);
      expect(await fitsWidth(small), path).toBe(true);
      if (path === "/hub/posts") await small.screenshot({ path: join(DOCS, "hub-posts-phone.png"), fullPage: true });
    }
    await small.screenshot({ path: join(DOCS, "docs-phone.png") });
    await signedIn.close();

    const signedOut = await phone(false);
    const outside = await signedOut.newPage();
    for (const path of ["/hub/signin", "/hub/signin?signed-out", "/hub/login?token=abc"]) {
      await outside.goto(`${server.baseUrl}${path}`);
      expect(await fitsWidth(outside), path).toBe(true);
    }
    await outside.goto(`${server.baseUrl}/hub/signin?signed-out`);
    await audit(outside);
    await outside.screenshot({ path: join(DOCS, "hub-signin-phone.png"), fullPage: true });
    await signedOut.close();
  });

  it("shows a favicon on the hub and on /docs", async () => {
    for (const path of ["/hub/keys", "/docs"]) {
      await page.goto(`${server.baseUrl}${path}`);
      const href = await page.locator('link[rel="icon"]').getAttribute("href");
      const icon = await page.request.get(new URL(href!, page.url()).toString());
      expect([icon.status(), icon.headers()["content-type"]], path).toEqual([200, "image/svg+xml"]);
    }
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
    await plain.getByRole("link", { name: `Revoke key no script (${key.slice(0, 11)})` }).click();
    await plain.getByRole("button", { name: "Yes, revoke it" }).click();
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

  it("disconnects an account only once confirmed", async () => {
    await page.goto(`${server.baseUrl}/hub/accounts`);
    const ids = async () => ((await (await api("/api/v1/social/accounts", server.apiKey)).json()) as any).data.accounts.map((a: { id: string }) => a.id);
    const disconnect = page.getByRole("link", { name: "Disconnect @sandbox.bakery" });
    await disconnect.click();
    await page.getByRole("heading", { name: "Disconnect @sandbox.bakery?" }).waitFor();
    await audit();
    await page.getByRole("link", { name: "No, keep it" }).click();
    await page.waitForURL(`${server.baseUrl}/hub/accounts`);
    expect(await ids()).toContain("photoplatform:1780000000000001");

    await disconnect.click();
    await page.getByRole("button", { name: "Yes, disconnect" }).click();
    await page.waitForURL(`${server.baseUrl}/hub/accounts`);
    await page.getByText("@sandbox.bakery is disconnected").waitFor();
    expect(await ids()).not.toContain("photoplatform:1780000000000001");
  });

  it("signs out; the session is gone; an admin login link signs in again, once", async () => {
    await page.goto(`${server.baseUrl}/hub/keys`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${server.baseUrl}/hub/signin?signed-out`);
    await page.getByText("You are signed out.").waitFor();
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
    // Used once, the link's own page says so (no button that would fail).
    await page.goto(link!);
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
