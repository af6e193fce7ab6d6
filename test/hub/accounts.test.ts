/**
 * Connecting accounts through the hub: against the built-in sandbox (its consent page) and against a Graph
 * fake speaking the platform's OAuth endpoints (real HTTP). The area C API lists what was connected;
 * reconnecting keeps ids and restores canPublish; select, unselect and disconnect act on the same rows.
 * The callback always answers 303 to the accounts page, which says once what happened.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { socialAccounts } from "../../db/schema";
import { serveGraphOAuth, startGraphFake, type GraphFake } from "../helpers/graph-fake";
import { createHubTest, type HubTest } from "./hub-client";

const apiAccounts = async (t: HubTest, apiKey: string) =>
  ((await (await t.h.app.request("/api/v1/social/accounts", { headers: t.h.auth(apiKey) })).json()) as any).data.accounts as Array<Record<string, any>>;

describe("with the built-in sandbox", () => {
  let t: HubTest;
  beforeAll(async () => {
    t = await createHubTest();
  });
  afterAll(() => t.h.close());

  it("connects the pages picked on the consent page and their photoplatform accounts; the API lists them", async () => {
    const { userId, apiKey } = await t.h.createUser();
    const b = t.browser();
    await b.signIn(userId);
    const start = await b.post("/hub/accounts/connect", {});
    const dialog = new URL(start.res.headers.get("location")!);
    expect(dialog.pathname).toBe("/sandbox/v23.0/dialog/oauth");
    expect(dialog.searchParams.get("scope")!.split(",")).toEqual(
      expect.arrayContaining(["pages_manage_posts", "instagram_content_publish", "pages_show_list"]),
    );
    const done = await b.connectSandbox(["1010000000000001", "1010000000000003"]);
    // The callback answers 303 to the accounts page, which says what happened once; the code is gone from the address.
    expect(done.hops).toEqual([{ status: 303, location: "/hub/accounts" }]);
    expect(done.html).toContain("Connected: Sandbox Bakery, @sandbox.bakery, Sandbox Garage.");
    expect((await b.page("/hub/accounts")).html).not.toContain("Connected: Sandbox Bakery");
    // The photo account is listed under the page it came with.
    const linked = /<ul class="linked" aria-label="Linked to Sandbox Bakery">([\s\S]*?)<\/ul>/.exec(done.html)?.[1] ?? "";
    expect(linked).toContain("@sandbox.bakery");
    expect(linked).not.toContain("Sandbox Garage");
    const accounts = await apiAccounts(t, apiKey);
    expect(accounts.map((a) => a.id).sort()).toEqual(["pageplatform:1010000000000001", "pageplatform:1010000000000003", "photoplatform:1780000000000001"]);
    const photo = accounts.find((a) => a.platform === "photoplatform")!;
    expect(photo).toMatchObject({ name: "@sandbox.bakery", canPublish: true, tokenStatus: "active", selected: true, capabilities: { maxImages: 1 } });
  });

  it("a cancelled consent connects nothing", async () => {
    const { userId, apiKey } = await t.h.createUser();
    const b = t.browser();
    await b.signIn(userId);
    const start = await b.post("/hub/accounts/connect", {});
    const consent = await b.page(start.res.headers.get("location")!);
    const hidden = Object.fromEntries(
      [...consent.html.matchAll(/type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!.replace(/&amp;/g, "&")]),
    );
    const denied = await b.post(
      new URL(start.res.headers.get("location")!).pathname,
      { ...hidden, page: "1010000000000001", decision: "deny" },
      { csrf: null },
    );
    const back = await b.follow(await b.page(denied.res.headers.get("location")!));
    expect(back.hops).toEqual([{ status: 303, location: "/hub/accounts" }]);
    expect(back.html).toContain('class="flash error"');
    expect(back.html).toContain("cancelled");
    expect(await apiAccounts(t, apiKey)).toEqual([]);
  });

  it("shows reconnect for a revoked token; reconnecting keeps the ids and restores canPublish; select and disconnect work", async () => {
    const { userId, apiKey } = await t.h.createUser();
    const b = t.browser();
    await b.signIn(userId);
    await b.connectSandbox(["1010000000000002"]);
    // What the delivery engine records when the platform answers "token invalid".
    await t.h.db
      .update(socialAccounts)
      .set({ tokenStatus: "invalid", tokenError: "token revoked" })
      .where(and(eq(socialAccounts.userId, userId), eq(socialAccounts.id, "photoplatform:1780000000000002")));
    const page = await b.page("/hub/accounts");
    expect(page.html).toContain('class="badge reconnect"');
    expect((await apiAccounts(t, apiKey)).find((a) => a.id === "photoplatform:1780000000000002")!.canPublish).toBe(false);

    await b.connectSandbox(["1010000000000002"]);
    const after = await apiAccounts(t, apiKey);
    expect(after.map((a) => a.id).sort()).toEqual(["pageplatform:1010000000000002", "photoplatform:1780000000000002"]);
    expect(after.every((a) => a.canPublish && a.tokenStatus === "active")).toBe(true);
    expect((await b.page("/hub/accounts")).html).not.toContain('class="badge reconnect"');

    await b.post(`/hub/accounts/${encodeURIComponent("pageplatform:1010000000000002")}/select`, { selected: "false" });
    expect((await apiAccounts(t, apiKey)).find((a) => a.id === "pageplatform:1010000000000002")!.selected).toBe(false);
    await b.post(`/hub/accounts/${encodeURIComponent("pageplatform:1010000000000002")}/select`, { selected: "true" });
    expect((await apiAccounts(t, apiKey)).find((a) => a.id === "pageplatform:1010000000000002")!.selected).toBe(true);
    const gone = await b.submit(`/hub/accounts/${encodeURIComponent("photoplatform:1780000000000002")}/disconnect`, { confirm: "yes" });
    expect(gone.html).toContain("disconnected");
    expect((await apiAccounts(t, apiKey)).map((a) => a.id)).toEqual(["pageplatform:1010000000000002"]);
    const other = t.browser();
    await other.signIn((await t.h.createUser()).userId);
    const refused = await other.submit(`/hub/accounts/${encodeURIComponent("pageplatform:1010000000000002")}/disconnect`, { confirm: "yes" });
    expect(refused.html).toContain("No connected account of yours has that id");
    expect((await apiAccounts(t, apiKey)).map((a) => a.id)).toEqual(["pageplatform:1010000000000002"]);
  });
});

describe("with the platform's Graph API (a fake on loopback)", () => {
  let t: HubTest;
  let fake: GraphFake;
  const pages = [
    { id: "501", name: "Shop One", access_token: "EAApage501secret", instagram_business_account: { id: "17841400000000501", username: "shop.one" } },
    { id: "502", name: "Shop Two", access_token: "EAApage502secret" },
    { id: "503", name: "Agency Page" },
  ];
  beforeAll(async () => {
    fake = await startGraphFake();
    serveGraphOAuth(fake, { appId: "app-1", appSecret: "app-secret-1", pages });
    t = await createHubTest({
      env: { GRAPH_API_BASE: fake.baseUrl, META_APP_ID: "app-1", META_APP_SECRET: "app-secret-1", META_DIALOG_BASE: fake.baseUrl },
      overrides: { platformFetch: (input, init) => fetch(input, init) },
    });
  });
  afterAll(async () => {
    await t.h.close();
    await fake.close();
  });

  it("runs dialog, code exchange, long-lived token and me/accounts, and stores each page token encrypted", async () => {
    const { userId, apiKey } = await t.h.createUser();
    const b = t.browser();
    await b.signIn(userId);
    const start = await b.post("/hub/accounts/connect", {});
    const dialog = new URL(start.res.headers.get("location")!);
    expect(dialog.origin + dialog.pathname).toBe(`${fake.baseUrl}/v23.0/dialog/oauth`);
    expect(dialog.searchParams.get("client_id")).toBe("app-1");
    expect(dialog.searchParams.get("redirect_uri")).toBe("http://127.0.0.1:8787/hub/accounts/callback");
    const consented = await fetch(dialog, { redirect: "manual" });
    const done = await b.follow(await b.page(consented.headers.get("location")!));
    expect(done.hops).toEqual([{ status: 303, location: "/hub/accounts" }]);
    expect(done.res.status).toBe(200);
    expect(done.html).toContain("Connected: Shop One, @shop.one, Shop Two.");
    expect(done.html).toContain("Agency Page");

    const exchange = fake.requests.filter((r) => r.path === "/v23.0/oauth/access_token");
    expect(exchange[0]!.params).toMatchObject({
      client_id: "app-1",
      client_secret: "app-secret-1",
      redirect_uri: "http://127.0.0.1:8787/hub/accounts/callback",
    });
    expect(exchange[1]!.params).toMatchObject({ grant_type: "fb_exchange_token", fb_exchange_token: "EAAshort0000fake" });
    const listed = fake.requests.filter((r) => r.path === "/v23.0/me/accounts");
    expect(listed).toHaveLength(2);
    expect(listed[0]!.params.access_token).toBe("EAAlong0000fake");
    expect(listed[0]!.params.fields).toContain("instagram_business_account");

    expect((await apiAccounts(t, apiKey)).map((a) => a.id).sort()).toEqual(["pageplatform:501", "pageplatform:502", "photoplatform:17841400000000501"]);
    const rows = await t.h.db.select().from(socialAccounts).where(eq(socialAccounts.userId, userId));
    for (const row of rows) {
      expect(row.tokenCiphertext).not.toContain("EAA");
      const expected = row.id === "pageplatform:502" ? "EAApage502secret" : "EAApage501secret";
      expect(await t.h.services.tokens.decrypt(row.tokenCiphertext)).toBe(expected);
    }
    expect(b.bodies.join("\n")).not.toContain("EAApage501secret");
    expect(t.logLines.join("\n")).not.toMatch(/EAA(page|long|short)/);
  });

  it("names the publishing permissions the user declined", async () => {
    fake.reset();
    serveGraphOAuth(fake, { appId: "app-1", appSecret: "app-secret-1", pages: pages.slice(0, 1), declined: ["instagram_content_publish"] });
    const { userId } = await t.h.createUser();
    const b = t.browser();
    await b.signIn(userId);
    const start = await b.post("/hub/accounts/connect", {});
    const consented = await fetch(start.res.headers.get("location")!, { redirect: "manual" });
    const done = await b.follow(await b.page(consented.headers.get("location")!));
    expect(done.html).toContain("Connected: Shop One, @shop.one.");
    expect(done.html).toContain("Permissions not granted: instagram_content_publish");
    expect(done.html).toContain('class="flash error"');
  });

  it("a refused code exchange connects nothing and says why", async () => {
    const { userId, apiKey } = await t.h.createUser();
    const b = t.browser();
    await b.signIn(userId);
    const start = await b.post("/hub/accounts/connect", {});
    const consented = await fetch(start.res.headers.get("location")!, { redirect: "manual" });
    const callback = new URL(consented.headers.get("location")!);
    callback.searchParams.set("code", "fake-code-999");
    const res = await b.follow(await b.page(callback.toString()));
    expect(res.hops).toEqual([{ status: 303, location: "/hub/accounts" }]);
    expect(res.html).toContain('class="flash error"');
    expect(res.html).toContain("expired or has been used");
    expect(await apiAccounts(t, apiKey)).toEqual([]);
  });
});
