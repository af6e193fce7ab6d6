import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { SignJWT, exportJWK, generateKeyPair, type JWK } from "jose";
import { eq } from "drizzle-orm";
import { apiKeys, socialAccounts } from "../../db/schema";
import { generateApiKey, isWellFormedApiKey, revokeApiKey, hashApiKey } from "../../src/http/api-keys";
import { createTestApp, type TestApp } from "../helpers/harness";

describe("API key format", () => {
  it("has a prefix, a random part and a checksum", () => {
    const key = generateApiKey();
    expect(key).toMatch(/^sk_[0-9A-Za-z]{38}$/);
    expect(isWellFormedApiKey(key)).toBe(true);
    expect(generateApiKey()).not.toBe(key);
  });

  it("rejects a key whose checksum does not match (a typo) before any lookup", () => {
    const key = generateApiKey();
    const typo = key.slice(0, 10) + (key[10] === "a" ? "b" : "a") + key.slice(11);
    expect(isWellFormedApiKey(typo)).toBe(false);
    expect(isWellFormedApiKey(key.slice(0, -1))).toBe(false);
    expect(isWellFormedApiKey(`sk_${"0".repeat(38)}`)).toBe(false);
  });
});

describe("API keys over HTTP", () => {
  let h: TestApp;
  const logLines: string[] = [];
  beforeAll(async () => {
    h = await createTestApp({ logLines });
  });
  afterAll(() => h.close());

  const accounts = (key: string) => h.app.request("/api/v1/social/accounts", { headers: { Authorization: `Bearer ${key}` } });

  it("stores only a SHA-256 hash and a display prefix", async () => {
    const { userId, apiKey } = await h.createUser();
    const rows = await h.db.select().from(apiKeys).where(eq(apiKeys.userId, userId));
    expect(rows).toHaveLength(1);
    expect(rows[0]!.hash).toBe(await hashApiKey(apiKey));
    expect(rows[0]!.prefix).toBe(apiKey.slice(0, 11));
    expect(JSON.stringify(rows)).not.toContain(apiKey.slice(11));
  });

  it("accepts a valid key and answers the accounts list", async () => {
    const { apiKey } = await h.createUser();
    const res = await accounts(apiKey);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { connectionStatus: "connected", accounts: [] } });
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it.each([
    ["no header", undefined],
    ["empty bearer", "Bearer "],
    ["basic scheme", "Basic dXNlcjpwYXNz"],
    ["garbage", "Bearer not-a-key"],
    ["bad checksum", `Bearer sk_${"A".repeat(38)}`],
    ["unknown but well-formed", `Bearer ${generateApiKey()}`],
  ])("401 for %s", async (_name, header) => {
    const res = await h.app.request("/api/v1/social/accounts", { headers: header ? { Authorization: header } : {} });
    expect(res.status).toBe(401);
    const body = (await res.json()) as { error: { code: string } };
    expect(body.error.code).toBe("UNAUTHORIZED");
  });

  it("a key revoked by another process (straight in the database) fails within the key cache's 5 s, while the user's other key keeps working", async () => {
    const { userId, apiKey } = await h.createUser();
    const second = await h.createKey(userId, "second");
    expect((await accounts(apiKey)).status).toBe(200);
    expect(await revokeApiKey(h.db, apiKey.slice(0, 11))).toBe(true);
    // This process verified the key a moment ago and may answer from its cache until that entry expires.
    const deadline = Date.now() + 10_000;
    let status = (await accounts(apiKey)).status;
    while (status !== 401 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      status = (await accounts(apiKey)).status;
    }
    expect(status).toBe(401);
    expect((await accounts(second)).status).toBe(200);
    expect(await revokeApiKey(h.db, apiKey.slice(0, 11))).toBe(false);
  });

  it("keys see only their owner's accounts", async () => {
    const a = await h.createUser();
    const b = await h.createUser();
    await h.db.insert(socialAccounts).values({
      id: "pageplatform:111",
      userId: a.userId,
      platform: "pageplatform",
      platformAccountId: "111",
      name: "A's page",
      tokenCiphertext: await h.services.tokens.encrypt("token"),
    });
    const listA = (await (await accounts(a.apiKey)).json()) as { data: { accounts: Array<{ id: string; canPublish: boolean }> } };
    const listB = (await (await accounts(b.apiKey)).json()) as { data: { accounts: unknown[] } };
    expect(listA.data.accounts.map((x) => x.id)).toEqual(["pageplatform:111"]);
    expect(listA.data.accounts[0]!.canPublish).toBe(true);
    expect(listB.data.accounts).toEqual([]);
  });

  it("never writes a key into a log line", async () => {
    const { apiKey } = await h.createUser();
    await accounts(apiKey);
    await h.app.request(`/api/qr-code/generate/${apiKey}/hello`);
    await h.app.request("/api/v1/social/accounts", { headers: { Authorization: `Bearer ${apiKey}x` } });
    expect(logLines.length).toBeGreaterThan(2);
    for (const line of logLines) expect(line).not.toContain(apiKey.slice(3, 20));
  });
});

describe("identity-provider ID tokens", () => {
  let h: TestApp;
  let jwks: Server;
  let issuer: string;
  const audience = "api://shopkit";
  let privateKey: CryptoKey;
  let otherKey: CryptoKey;

  beforeAll(async () => {
    const pair = await generateKeyPair("RS256", { extractable: true });
    privateKey = pair.privateKey as CryptoKey;
    otherKey = (await generateKeyPair("RS256")).privateKey as CryptoKey;
    const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    jwks = createServer((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => jwks.listen(0, "127.0.0.1", r));
    issuer = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}`;
    h = await createTestApp({ env: { AUTH_JWKS_URL: `${issuer}/jwks.json`, AUTH_ISSUER: issuer, AUTH_AUDIENCE: audience } });
  });
  afterAll(async () => {
    await h.close();
    await new Promise((r) => jwks.close(r));
  });

  const token = (claims: Record<string, unknown> = {}, opts: { key?: CryptoKey; kid?: string; iss?: string; aud?: string; exp?: string | number } = {}) =>
    new SignJWT({ email: "someone@example.test", ...claims })
      .setProtectedHeader({ alg: "RS256", kid: opts.kid ?? "k1" })
      .setSubject((claims.sub as string) ?? "user-123")
      .setIssuer(opts.iss ?? issuer)
      .setAudience(opts.aud ?? audience)
      .setIssuedAt()
      .setExpirationTime(opts.exp ?? "5m")
      .sign(opts.key ?? privateKey);

  const call = (bearer: string) => h.app.request("/api/v1/social/accounts", { headers: { Authorization: `Bearer ${bearer}` } });

  it("accepts a valid token and maps its subject to one user", async () => {
    const first = await call(await token({ sub: "alice" }));
    expect(first.status).toBe(200);
    const second = await call(await token({ sub: "alice" }));
    expect(second.status).toBe(200);
    const rows = await h.db.execute("select count(*)::int as n from users where external_subject like '%|alice'");
    expect((rows as unknown as { rows: Array<{ n: number }> }).rows[0]!.n).toBe(1);
  });

  it("links a verified e-mail to the user the admin created", async () => {
    const { userId, email } = await h.createUser("carol@example.test");
    await h.db.insert(socialAccounts).values({
      id: "photoplatform:9",
      userId,
      platform: "photoplatform",
      platformAccountId: "9",
      name: "Carol",
      tokenCiphertext: await h.services.tokens.encrypt("t"),
    });
    const res = await call(await token({ sub: "carol-sub", email, email_verified: true }));
    const body = (await res.json()) as { data: { accounts: Array<{ id: string }> } };
    expect(body.data.accounts.map((a) => a.id)).toEqual(["photoplatform:9"]);
  });

  it("does not link an unverified e-mail", async () => {
    const { userId, email } = await h.createUser("dave@example.test");
    await h.db.insert(socialAccounts).values({
      id: "photoplatform:10",
      userId,
      platform: "photoplatform",
      platformAccountId: "10",
      name: "Dave",
      tokenCiphertext: await h.services.tokens.encrypt("t"),
    });
    const res = await call(await token({ sub: "mallory", email }));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { accounts: unknown[] } };
    expect(body.data.accounts).toEqual([]);
  });

  it.each([
    ["wrong issuer", { iss: "https://evil.example" }],
    ["wrong audience", { aud: "someone-else" }],
    ["expired", { exp: Math.floor(Date.now() / 1000) - 3600 }],
    ["signed by another key", { key: undefined as unknown as CryptoKey, other: true }],
    ["unknown kid", { kid: "nope" }],
  ])("401 for a token with %s", async (_name, opts) => {
    const o = opts as { other?: boolean } & Parameters<typeof token>[1];
    const jwt = await token({}, { ...o, key: o.other ? otherKey : privateKey });
    const res = await call(jwt);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED");
  });

  it("401 for an unsigned token and for an HS256 token", async () => {
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const payload = { sub: "x", iss: issuer, aud: audience, exp: Math.floor(Date.now() / 1000) + 600 };
    expect((await call(`${b64({ alg: "none", kid: "k1" })}.${b64(payload)}.`)).status).toBe(401);
    const hs = await new SignJWT(payload).setProtectedHeader({ alg: "HS256", kid: "k1" }).sign(new TextEncoder().encode("secret-secret-secret-secret-32b!"));
    expect((await call(hs)).status).toBe(401);
  });

  it("refuses ID tokens when the deployment has no identity provider", async () => {
    const plain = await createTestApp();
    try {
      const res = await plain.app.request("/api/v1/social/accounts", { headers: { Authorization: `Bearer ${await token()}` } });
      expect(res.status).toBe(401);
    } finally {
      await plain.close();
    }
  });
});
