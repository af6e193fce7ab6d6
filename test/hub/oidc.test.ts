/**
 * Signing in to the hub with an OpenID Connect provider: `oauth2-mock-server` run here on loopback. The
 * happy path creates the user on first sign-in; a wrong `state`, a wrong `nonce`, a callback in a browser
 * that did not start the sign-in, and a replayed callback are all refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { OAuth2Server } from "oauth2-mock-server";
import { users } from "../../db/schema";
import { createHubTest, type HubBrowser, type HubTest } from "./hub-client";

let server: OAuth2Server;
let t: HubTest;
let issuer: string;

beforeAll(async () => {
  server = new OAuth2Server();
  await server.issuer.keys.generate("RS256");
  await server.start(0, "127.0.0.1");
  issuer = server.issuer.url!;
  server.service.on("beforeTokenSigning", (token) => {
    token.payload.email = "oidc.person@example.test";
    token.payload.email_verified = true;
  });
  t = await createHubTest({ env: { OIDC_ISSUER: issuer, OIDC_CLIENT_ID: "hub-client", OIDC_CLIENT_SECRET: "hub-secret" } });
});
afterAll(async () => {
  await t.h.close();
  await server.stop();
});

/** Starts sign-in in `b` and lets the provider answer; returns our callback URL as the provider sent it. */
async function authorize(b: HubBrowser): Promise<URL> {
  const start = await b.request("/hub/auth/start");
  expect(start.status).toBe(302);
  const authorizeUrl = new URL(start.headers.get("location")!);
  const answer = await fetch(authorizeUrl, { redirect: "manual" });
  return new URL(answer.headers.get("location")!);
}

describe("OIDC sign-in", () => {
  it("sends PKCE, state and nonce, and signs in (creating the user) on the provider's answer", async () => {
    const b = t.browser();
    const signin = await b.page("/hub/signin");
    expect(signin.html).toContain('href="/hub/auth/start"');
    const start = await b.request("/hub/auth/start");
    const authorizeUrl = new URL(start.headers.get("location")!);
    expect(authorizeUrl.origin).toBe(new URL(issuer).origin);
    expect(authorizeUrl.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authorizeUrl.searchParams.get("code_challenge")).toMatch(/^[\w-]{43}$/);
    expect(authorizeUrl.searchParams.get("state")).toBeTruthy();
    expect(authorizeUrl.searchParams.get("nonce")).toBeTruthy();
    expect(authorizeUrl.searchParams.get("redirect_uri")).toBe("http://127.0.0.1:8787/hub/auth/callback");
    const answer = await fetch(authorizeUrl, { redirect: "manual" });
    const callback = await b.request(answer.headers.get("location")!);
    expect(callback.status).toBe(303);
    expect(callback.headers.get("location")).toBe("/hub/keys");
    const keys = await b.page("/hub/keys");
    expect(keys.html).toContain("oidc.person@example.test");
    const [user] = await t.h.db.select().from(users).where(eq(users.email, "oidc.person@example.test"));
    expect(user!.externalSubject).toBe(`${issuer}|johndoe`);

    const again = t.browser();
    expect((await again.request((await authorize(again)).toString())).status).toBe(303);
    expect(await t.h.db.select().from(users).where(eq(users.email, "oidc.person@example.test"))).toHaveLength(1);
  });

  it("refuses a callback whose state is not the one this browser was given", async () => {
    const b = t.browser();
    const callback = await authorize(b);
    callback.searchParams.set("state", `${callback.searchParams.get("state")}x`);
    const res = await b.page(callback.toString());
    expect(res.res.status).toBe(400);
    expect(b.cookies.has("hub_session")).toBe(false);
  });

  it("refuses a callback in a browser that did not start the sign-in, and a replayed callback", async () => {
    const starter = t.browser();
    const callback = await authorize(starter);
    const other = t.browser();
    expect((await other.page(callback.toString())).res.status).toBe(400);
    expect(other.cookies.has("hub_session")).toBe(false);
    const copy = t.browser();
    for (const [k, v] of starter.cookies) copy.cookies.set(k, v);
    expect((await starter.request(callback.toString())).status).toBe(303);
    expect(starter.cookies.has("hub_session")).toBe(true);
    expect((await copy.page(callback.toString())).res.status).toBe(400);
    expect(copy.cookies.has("hub_session")).toBe(false);
  });

  it("refuses an ID token whose nonce is not the one sent", async () => {
    const wrongNonce = (token: { payload: Record<string, unknown> }) => {
      if (token.payload.nonce) token.payload.nonce = "not-the-nonce";
    };
    server.service.on("beforeTokenSigning", wrongNonce);
    try {
      const b = t.browser();
      const res = await b.page((await authorize(b)).toString());
      expect(res.res.status).toBe(400);
      expect(res.html).toContain("could not be verified");
      expect(b.cookies.has("hub_session")).toBe(false);
    } finally {
      server.service.off("beforeTokenSigning", wrongNonce);
    }
  });
});
