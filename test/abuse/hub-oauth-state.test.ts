/**
 * OAuth states in the hub: a platform connection's state is taken only by the session that started it, so
 * another signed-in user opening the callback URL cannot use it up; expired states are deleted by the
 * periodic sweep (the Node scheduler's housekeeping); and starting a sign-in with the identity provider,
 * which stores a state for anyone who asks, is limited per client address.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { OAuth2Server } from "oauth2-mock-server";
import { oauthStates } from "../../db/schema";
import { startScheduler } from "../../functions/node/scheduler";
import { saveState } from "../../src/hub/oauth-states";
import { sha256Hex } from "../../src/lib/encoding";
import { OIDC_STARTS_PER_MINUTE } from "../../src/hub/signin";
import { createHubTest, decodeHtml, type HubBrowser, type HubTest } from "../hub/hub-client";

/** The sandbox consent for a dialog URL already started: grants every page and answers our callback URL. */
async function consent(b: HubBrowser, dialog: string): Promise<string> {
  const page = await b.page(dialog);
  const hidden = Object.fromEntries([...page.html.matchAll(/type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, decodeHtml(m[2]!)]));
  const offered = [...page.html.matchAll(/name="page" value="(\d+)"/g)].map((m) => m[1]!);
  const granted = await b.post(new URL(dialog, "http://x").pathname, { ...hidden, page: offered, decision: "allow" }, { csrf: null });
  expect(granted.res.status).toBe(302);
  return granted.res.headers.get("location")!;
}

const stateRow = async (t: HubTest, state: string) =>
  (
    await t.h.db
      .select()
      .from(oauthStates)
      .where(eq(oauthStates.stateHash, await sha256Hex(state)))
  )[0];

describe("a platform connection's state", () => {
  let t: HubTest;
  beforeAll(async () => {
    t = await createHubTest();
  });
  afterAll(() => t.h.close());

  it("is refused to another user's session and left for its owner, whose callback then connects", async () => {
    const a = t.browser();
    await a.signIn((await t.h.createUser()).userId);
    const start = await a.post("/hub/accounts/connect", {});
    expect(start.res.status).toBe(303);
    const dialog = start.res.headers.get("location")!;
    const callback = await consent(a, dialog);
    const state = new URL(callback).searchParams.get("state")!;
    expect(state).toBe(new URL(dialog).searchParams.get("state"));

    // User B is sent A's callback URL (with A's state and code) and opens it.
    const b = t.browser();
    await b.signIn((await t.h.createUser()).userId);
    const stolen = await b.follow(await b.page(callback));
    expect(stolen.hops).toEqual([{ status: 303, location: "/hub/accounts" }]);
    expect(stolen.html).toContain("another session");
    expect(stolen.html).not.toContain("Connected:");
    expect(await stateRow(t, state)).toBeDefined();

    // Signed out, the URL only leads to the sign-in page.
    const nobody = await t.browser().request(callback);
    expect(nobody.status).toBe(303);
    expect(nobody.headers.get("location")).toBe("/hub/signin");
    expect(await stateRow(t, state)).toBeDefined();

    const own = await a.follow(await a.page(callback));
    expect(own.res.status).toBe(200);
    expect(own.html).toContain("Connected: Sandbox Bakery");
    expect(await stateRow(t, state)).toBeUndefined();
    const again = await a.follow(await a.page(callback));
    expect(again.html).toContain("nothing was connected");
    expect(again.html).not.toContain("Connected: Sandbox Bakery");
  });

  it("is refused to another session of the same user as well", async () => {
    const { userId } = await t.h.createUser();
    const first = t.browser();
    await first.signIn(userId);
    const callback = await consent(first, (await first.post("/hub/accounts/connect", {})).res.headers.get("location")!);
    const second = t.browser();
    await second.signIn(userId);
    expect((await second.follow(await second.page(callback))).html).toContain("another session");
    expect((await first.follow(await first.page(callback))).html).toContain("Connected: Sandbox Bakery");
  });
});

describe("expired states", () => {
  let t: HubTest;
  beforeAll(async () => {
    t = await createHubTest();
  });
  afterAll(() => t.h.close());

  it("are deleted by the scheduler's sweep; live ones stay", async () => {
    const services = t.h.services;
    const live = await saveState(services, { kind: "oidc", sessionHash: null, nonce: "n", codeVerifier: "v" });
    const real = services.clock.now;
    services.clock.now = () => new Date(Date.now() - 11 * 60_000);
    let expired: string[];
    try {
      expired = await Promise.all([1, 2, 3].map(() => saveState(services, { kind: "oidc", sessionHash: null, nonce: "n", codeVerifier: "v" })));
    } finally {
      services.clock.now = real;
    }
    for (const state of expired) expect(await stateRow(t, state)).toBeDefined();

    const scheduler = startScheduler(services, { publish: false, pollMs: 50 });
    try {
      const deadline = Date.now() + 5000;
      while ((await Promise.all(expired.map((s) => stateRow(t, s)))).some(Boolean) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await scheduler.stop();
    }
    for (const state of expired) expect(await stateRow(t, state)).toBeUndefined();
    expect(await stateRow(t, live)).toBeDefined();
  });
});

describe("starting a sign-in with the identity provider", () => {
  let server: OAuth2Server;
  let t: HubTest;
  beforeAll(async () => {
    server = new OAuth2Server();
    await server.issuer.keys.generate("RS256");
    await server.start(0, "127.0.0.1");
    t = await createHubTest({ env: { OIDC_ISSUER: server.issuer.url!, OIDC_CLIENT_ID: "hub-client", OIDC_CLIENT_SECRET: "hub-secret" } });
  });
  afterAll(async () => {
    await t?.h.close();
    await server?.stop();
  });

  const from = (remoteAddress: string, headers: Record<string, string> = {}) =>
    t.h.app.request("http://127.0.0.1:8787/hub/auth/start", { headers }, { incoming: { socket: { remoteAddress } } });
  const oidcRows = async () => (await t.h.db.select().from(oauthStates).where(eq(oauthStates.kind, "oidc"))).length;

  it("is limited per client address: a burst gets 429 with Retry-After and stores no more states", async () => {
    const before = await oidcRows();
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < OIDC_STARTS_PER_MINUTE + 10; i++) {
      // Headers a client writes do not make it another client.
      const res = await from("203.0.113.7", { "x-forwarded-for": `198.51.100.${i}`, "cf-connecting-ip": `198.51.100.${i}` });
      statuses.push(res.status);
      if (res.status === 429) refused ??= res;
    }
    expect(statuses.slice(0, OIDC_STARTS_PER_MINUTE).every((s) => s === 302)).toBe(true);
    expect(statuses.slice(OIDC_STARTS_PER_MINUTE).every((s) => s === 429)).toBe(true);
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused!.headers.get("content-type")).toContain("text/html");
    expect(await refused!.text()).toContain("Too many attempts");
    expect((await oidcRows()) - before).toBe(OIDC_STARTS_PER_MINUTE);

    // The same client by another port or as an IPv4-mapped address is the same client; another address is not.
    expect((await from("::ffff:203.0.113.7")).status).toBe(429);
    expect((await from("198.51.100.20")).status).toBe(302);
  });

  it("counts an IPv6 client by its /64", async () => {
    for (let i = 0; i < OIDC_STARTS_PER_MINUTE; i++) expect((await from(`2001:db8:1:2::${(i + 1).toString(16)}`)).status).toBe(302);
    expect((await from("2001:db8:1:2:ffff::1")).status).toBe(429);
    expect((await from("2001:db8:1:3::1")).status).toBe(302);
  });
});
