/**
 * The hub's Credits and Gallery pages in headless Chromium against the real embedded server (`npm start`:
 * PGlite, the scheduler, the platform sandbox, the first user's default credits): the balance, the images of
 * the month and the movements; the gallery's thumbnails and filter; "Post this" publishing to the sandbox
 * (a reload makes no second post); delete only after a confirmation. Through the API, a gallery item posted
 * with `{galleryId}` reaches the sandbox, and a scheduled post whose item is deleted still publishes its
 * image. Axe checks the pages; screenshots go to docs/ with UPDATE_SCREENSHOTS=1.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { productJpeg } from "../photo/fixtures";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";
import { haveSystemTool } from "../helpers/system-tools";
import { launchChromium, seriousViolations } from "./chromium";

const haveChromium = haveSystemTool("hub gallery browser tests", "chromium");
const ROOT = new URL("../..", import.meta.url).pathname;
const DOCS = process.env.UPDATE_SCREENSHOTS === "1" ? join(ROOT, "docs") : mkdtempSync(join(tmpdir(), "hub-shots-"));
type Json = Record<string, any>;

let server: ServerProcess;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const violations: string[] = [];

beforeAll(async () => {
  if (!haveChromium) return;
  [server, browser] = await Promise.all([startServerProcess({ env: { RATE_LIMIT_PHOTO: "1000" } }), launchChromium()]);
  context = await browser.newContext({ viewport: { width: 1180, height: 760 } });
  context.setDefaultTimeout(30_000);
  page = await context.newPage();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await server?.dispose();
});

const api = async (path: string, init: RequestInit = {}) => {
  const res = await fetch(`${server.baseUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json", ...init.headers },
  });
  return { status: res.status, body: (await res.json()) as Json };
};

async function waitFor<T>(what: string, probe: () => Promise<T | null>, seconds = 60): Promise<T> {
  for (let i = 0; i < seconds * 4; i++) {
    const value = await probe().catch(() => null);
    if (value !== null) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const sandboxPosts = async (accountId: string) => (await api(`/sandbox/posts?accountId=${encodeURIComponent(accountId)}`)).body.data.items as Json[];

describe.sequential("credits and gallery in the hub", { timeout: 120_000, skip: !haveChromium }, () => {
  let page1 = "";
  const made: Json[] = [];

  it("signs in, and the first user's default credits pay for two images made through the API", async () => {
    const link = /(http:\/\/127\.0\.0\.1:\d+\/hub\/login\?token=[0-9A-Za-z]+)/.exec(server.output())?.[1];
    expect(link).toBeTruthy();
    await page.goto(link!);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL("**/hub/**");
    const product = `data:image/jpeg;base64,${(await productJpeg(480, 640)).toString("base64")}`;
    for (const body of [
      { productImages: [{ dataUrl: product, label: "serum" }], promptId: "studio-plinth", model: "standard", outputResult: "url" },
      { productImages: [{ dataUrl: product }], promptId: "life-kitchen", model: "flash", resolution: "1K", aspectRatio: "4:5", outputResult: "url" },
    ]) {
      const res = await api("/api/image/product-photography", { method: "POST", body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      made.push(res.body.data);
    }
    expect(made.map((m) => m.balance)).toEqual([96, 89]);
    const account = await api("/sandbox/accounts", {
      method: "POST",
      body: JSON.stringify({ platform: "pageplatform", name: "Corner Shop", platformAccountId: "5005" }),
    });
    expect(account.status).toBe(201);
    page1 = account.body.data.id;
  });

  it("the Credits page shows the balance, this month's images per model and the movements", async () => {
    await page.getByRole("link", { name: "Credits" }).click();
    await page.waitForURL("**/hub/credits");
    expect(await page.getByTestId("balance").textContent()).toBe("89");
    const text = (await page.textContent("main"))!;
    expect(text).toMatch(/sign-up grant/);
    expect(await page.locator('td[data-label="Credits"]').allTextContents()).toEqual(["7", "4", "-7", "-4", "+100"]);
    expect(await page.locator('td[data-label="Images"]').allTextContents()).toEqual(["1", "1"]);
    violations.push(...(await seriousViolations(page)));
    await page.screenshot({ path: join(DOCS, "hub-credits.png"), fullPage: true });
  });

  it("the Gallery page shows thumbnails, filters by template, and an item's details", async () => {
    await page.getByRole("link", { name: "Gallery" }).click();
    await page.waitForURL("**/hub/gallery");
    const thumbs = page.locator("td[data-label='Image'] img");
    expect(await thumbs.count()).toBe(2);
    // The thumbnails load lazily, which the page's load event does not wait for: each is awaited (loaded or failed) first.
    await thumbs.evaluateAll((imgs) =>
      Promise.all(
        (imgs as HTMLImageElement[]).map((i) =>
          i.complete
            ? null
            : new Promise((done) => {
                i.addEventListener("load", done, { once: true });
                i.addEventListener("error", done, { once: true });
              }),
        ),
      ),
    );
    expect(await thumbs.evaluateAll((imgs) => imgs.every((i) => (i as HTMLImageElement).naturalWidth > 0))).toBe(true);
    violations.push(...(await seriousViolations(page)));
    await page.screenshot({ path: join(DOCS, "hub-gallery.png"), fullPage: true });

    await page.getByLabel("Template").fill("studio-plinth");
    await page.getByRole("button", { name: "Filter" }).click();
    expect(await page.locator("td[data-label='Image'] img").count()).toBe(1);
    await page.getByRole("link", { name: "studio-plinth" }).click();
    await page.getByRole("heading", { name: "studio-plinth" }).waitFor();
    const details = (await page.textContent("dl.details"))!;
    expect(details).toContain("standard at 1K");
    expect(details).toContain("4 credits");
    violations.push(...(await seriousViolations(page)));
  });

  it("'Post this' publishes the image to the sandbox; a reload makes no second post", async () => {
    await page.getByLabel(/Corner Shop/).check();
    await page.getByLabel("Caption").fill("Fresh from the gallery");
    await page.screenshot({ path: join(DOCS, "hub-gallery-item.png"), fullPage: true });
    await page.getByRole("button", { name: "Post now" }).click();
    await page.waitForURL(/\/hub\/posts\/[0-9a-f-]{36}$/);
    expect(await page.textContent("main")).toContain("Posted from your gallery");
    const postId = page.url().split("/").pop()!;
    await page.reload();
    await page.goBack();
    await page.goForward();
    const listed = (await api("/api/v1/social/posts?limit=100")).body.data;
    expect(listed.total).toBe(1);
    const published = await waitFor("the sandbox to have the post", async () => {
      const items = await sandboxPosts(page1);
      return items.length ? items : null;
    });
    expect(published).toHaveLength(1);
    expect(published[0]!.caption ?? published[0]!.message).toContain("Fresh from the gallery");
    const post = (await api(`/api/v1/social/posts/${postId}`)).body.data;
    expect(post.images).toHaveLength(1);
    expect((await fetch(post.images[0].url)).status).toBe(200);
  });

  it("deletes an item only once confirmed: 'keep it' leaves it, 'delete' removes it and its files", async () => {
    await page.goto(`${server.baseUrl}/hub/gallery?template=studio-plinth`);
    await page.getByRole("link", { name: "studio-plinth" }).click();
    await page.getByRole("link", { name: "Delete from gallery" }).click();
    await page.getByRole("heading", { name: "Delete this image from your gallery?" }).waitFor();
    violations.push(...(await seriousViolations(page)));
    await page.getByRole("link", { name: "No, keep it" }).click();
    await page.getByRole("heading", { name: "studio-plinth" }).waitFor();
    expect((await api("/api/image/gallery")).body.data.total).toBe(2);
    await page.getByRole("link", { name: "Delete from gallery" }).click();
    await page.getByRole("button", { name: "Yes, delete it" }).click();
    await page.waitForURL("**/hub/gallery");
    expect(await page.textContent("main")).toContain("The image is deleted from your gallery.");
    await page.reload();
    expect(await page.textContent("main")).not.toContain("The image is deleted");
    expect(await page.locator("td[data-label='Image'] img").count()).toBe(1);
    expect((await fetch(made[0]!.imageUrl)).status).toBe(404);
  });

  it("through the API, a gallery item posted with {galleryId} reaches the sandbox; a scheduled one still publishes after its item is deleted", async () => {
    const [item] = (await api("/api/image/gallery")).body.data.items as Json[];
    const now = await api("/api/v1/social/posts", {
      method: "POST",
      headers: { "Idempotency-Key": "gallery-now" },
      body: JSON.stringify({ accountIds: [page1], caption: "Posted by the API", images: [{ galleryId: item!.id }] }),
    });
    expect(now.status).toBe(202);
    const later = await api("/api/v1/social/posts", {
      method: "POST",
      headers: { "Idempotency-Key": "gallery-later" },
      body: JSON.stringify({
        accountIds: [page1],
        caption: "Scheduled from the gallery",
        images: [{ galleryId: item!.id }],
        scheduledFor: new Date(Date.now() + 4000).toISOString(),
      }),
    });
    expect(later.status).toBe(201);
    expect((await api(`/api/image/gallery/${item!.id}`, { method: "DELETE" })).body.data.filesKept).toBe(false);
    expect((await fetch(item!.imageUrl)).status).toBe(404);
    const published = await waitFor("both posts in the sandbox", async () => {
      const items = await sandboxPosts(page1);
      return items.length >= 3 ? items : null;
    });
    const captions = published.map((p) => String(p.caption ?? p.message));
    expect(captions.some((c) => c.includes("Posted by the API"))).toBe(true);
    expect(captions.some((c) => c.includes("Scheduled from the gallery"))).toBe(true);
    // The sandbox holds the post once it has answered the publish; the target's record follows (on PGlite it
    // waits for the burst's other sends, up to a second), so the status is read until it is final.
    const scheduled = await waitFor("the scheduled post recorded", async () => {
      const post = (await api(`/api/v1/social/posts/${later.body.data.id}`)).body.data;
      return post.status === "publishing" ? null : post;
    });
    expect(scheduled.status).toBe("published");
    expect((await fetch(scheduled.images[0].url)).status).toBe(200);
  });

  it("both pages fit a phone's width", async () => {
    const phone = await browser.newContext({ viewport: { width: 375, height: 812 }, deviceScaleFactor: 2, storageState: await context.storageState() });
    try {
      const small = await phone.newPage();
      for (const path of ["/hub/gallery", "/hub/credits"]) {
        await small.goto(`${server.baseUrl}${path}`);
        expect(await small.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), path).toBe(true);
      }
      await small.screenshot({ path: join(DOCS, "hub-credits-phone.png"), fullPage: true });
    } finally {
      await phone.close();
    }
  });

  it("has no serious accessibility violations", () => {
    expect(violations).toEqual([]);
  });
});
