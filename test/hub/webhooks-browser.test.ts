/**
 * The hub's webhooks page in headless Chromium against `npm start` (PGlite, WEBHOOK_ALLOW_LOOPBACK on by the
 * embedded defaults) with a real receiver on 127.0.0.1: sign in, add an endpoint (the secret shown once, with
 * a copy button), send a test and see it in the delivery log with the receiver's answer, replay it (the same
 * message id arrives again), then refuse a private address with the API's words. Axe checks the pages; the
 * screenshot goes to docs/hub-webhooks.png with UPDATE_SCREENSHOTS=1.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import type { Browser, Page } from "playwright-core";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";
import { haveSystemTool } from "../helpers/system-tools";
import { startReceiver, verified, waitUntil, type Receiver } from "../helpers/webhook-receiver";
import { launchChromium, seriousViolations } from "./chromium";

const haveChromium = haveSystemTool("hub browser tests", "chromium");
const ROOT = new URL("../..", import.meta.url).pathname;
const DOCS = process.env.UPDATE_SCREENSHOTS === "1" ? join(ROOT, "docs") : mkdtempSync(join(tmpdir(), "hub-shots-"));

let server: ServerProcess;
let browser: Browser;
let page: Page;
let receiver: Receiver;
const violations: string[] = [];

beforeAll(async () => {
  if (!haveChromium) return;
  receiver = await startReceiver((n) => (n === 2 ? 503 : 200));
  [server, browser] = await Promise.all([startServerProcess(), launchChromium()]);
  const context = await browser.newContext({ viewport: { width: 1180, height: 760 } });
  context.setDefaultTimeout(20_000);
  page = await context.newPage();
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  await receiver?.close();
});

describe.sequential("the webhooks page in a browser", { timeout: 90_000, skip: !haveChromium }, () => {
  it("adds an endpoint, sends a test, shows the log with the answers, replays a message", async () => {
    const [link] = [...server.output().matchAll(/(http:\/\/127\.0\.0\.1:\d+\/hub\/login\?token=[0-9A-Za-z]+)/g)].map((m) => m[1]!);
    await page.goto(link!);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL("**/hub/keys");

    await page.getByRole("navigation", { name: "Hub" }).getByRole("link", { name: "Webhooks" }).click();
    await page.waitForURL("**/hub/webhooks");
    violations.push(...(await seriousViolations(page)));
    await page.getByLabel("URL").fill(receiver.url);
    await page.getByLabel("Description (optional)").fill("order system");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    await page.waitForURL(/\/hub\/webhooks\/[0-9a-f-]{36}$/);
    const secret = (await page.textContent("#webhook-secret"))!.trim();
    expect(secret).toMatch(/^whsec_/);
    expect(page.url()).not.toContain(secret);
    expect(await page.getByRole("button", { name: "Copy the signing secret" }).isVisible()).toBe(true);
    await page.reload();
    expect(await page.content()).not.toContain(secret);

    await page.getByRole("button", { name: "Send a test" }).click();
    await waitUntil("the test message", () => receiver.received.length >= 1);
    expect(verified(receiver.received[0]!, secret).type).toBe("webhook.test");
    await expect
      .poll(async () => (await page.reload(), await page.locator('td[data-label="Attempts"]').first().textContent()), { timeout: 20_000 })
      .toContain("HTTP 200");
    const messageId = (await page.locator('td[data-label="Message id"]').first().textContent())!.trim();
    expect(messageId).toBe(String(receiver.received[0]!.headers["webhook-id"]));

    // The receiver answers the replay 503 once, then 200: the log shows each answer.
    await page.getByRole("button", { name: /^Replay webhook\.test/ }).click();
    await waitUntil("the replay and its retry", () => receiver.received.length >= 3);
    expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual([messageId, messageId, messageId]);
    await expect
      .poll(async () => (await page.reload(), await page.locator('td[data-label="Attempts"] li').allTextContents()), { timeout: 30_000 })
      .toEqual([expect.stringContaining("HTTP 200"), expect.stringContaining("HTTP 503"), expect.stringContaining("HTTP 200")]);
    violations.push(...(await seriousViolations(page)));
    await page.screenshot({ path: join(DOCS, "hub-webhooks.png"), fullPage: true });

    // A private address is refused with the API's own words, on the list page.
    await page.getByRole("link", { name: "← Webhooks" }).click();
    await page.getByLabel("URL").fill("https://10.1.2.3/hooks");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    await page.waitForURL("**/hub/webhooks");
    expect(await page.getByRole("alert").textContent()).toMatch(/private network address/);
    expect(violations).toEqual([]);
  });
});
