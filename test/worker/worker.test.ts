/**
 * The Worker as deployed (dev/edge-worker.ts): `wrangler deploy --dry-run` builds the bundle, which runs in
 * workerd (Miniflare, from wrangler's own dependencies) with the real edge adapters pointed at this machine:
 * the Neon driver through the WebSocket-to-TCP bridge to a scratch Postgres database, S3Storage at the S3
 * fake, the Upstash limiter through the REST bridge to Redis. Also checks that the bundle stays under the Workers
 * Free limit (3 MiB gzipped) and carries no Node-only module.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { eq } from "drizzle-orm";
import { openNodeDb } from "../../db/node";
import type { DbHandle } from "../../db/client";
import { apiKeys } from "../../db/schema";
import { createApiKey, createUser, revokeApiKey, type ApiKeyScope } from "../../src/http/api-keys";
import { allScopesBut, scopeTable } from "../helpers/scope-table";
import { S3Storage } from "../../src/adapters/storage/s3";
import { parseConfig } from "../../src/config";
import { createLoginLink } from "../../src/hub/login-links";
import { startLocalEdge, type LocalEdge } from "../../dev/edge-worker";
import { checkDispatchConformance } from "../helpers/conformance";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import sharp from "sharp";
import { productJpeg } from "../photo/fixtures";

const GZIP_LIMIT = 3 * 1024 * 1024;
const ORIGIN = "http://api.test";

let edge: LocalEdge;
let scratch: ScratchDatabase;
let handle: DbHandle;
let bindings: Record<string, string>;

beforeAll(async () => {
  scratch = await createScratchDatabase();
  handle = await openNodeDb({ url: scratch.url, poolSize: 2 });
  edge = await startLocalEdge({ databaseUrl: scratch.url, vars: { LOG_LEVEL: "warn", PUBLIC_BASE_URL: "https://api.example.test" } });
  checkDispatchConformance(edge.mf); // answers of documented operations are checked against /openapi.json
  bindings = edge.bindings;
}, 120_000);

afterAll(async () => {
  // Each step on its own, so a worker that failed to start still leaves no database or server behind.
  const steps: Array<() => unknown> = [() => edge?.dispose(), () => handle?.close(), () => scratch?.drop()];
  for (const step of steps)
    await Promise.resolve()
      .then(() => step())
      .catch(() => {});
});

const get = async (path: string, headers: Record<string, string> = {}) => {
  const res = await edge.mf.dispatchFetch(`${ORIGIN}${path}`, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, any> };
};

describe("the Worker bundle", () => {
  it("stays under 3 MiB gzipped and reports its size", async () => {
    const files = (await readdir(edge.outDir)).filter((f) => f.endsWith(".js") || f.endsWith(".wasm") || f.endsWith(".ttf"));
    let gzipped = 0;
    for (const file of files) gzipped += gzipSync(await readFile(join(edge.outDir, file)), { level: 9 }).length;
    console.log(`worker bundle: ${files.join(", ")}; ${(gzipped / 1024).toFixed(0)} KiB gzipped (limit ${GZIP_LIMIT / 1024} KiB)`);
    expect(gzipped).toBeLessThan(GZIP_LIMIT);
  });

  it("holds no photon: `#photon` resolves to photon-none.ts under the workerd condition", async () => {
    const files = await readdir(edge.outDir);
    expect(files.filter((f) => /photon/.test(f))).toEqual([]);
    const source = await readFile(join(edge.outDir, "worker.js"), "utf8");
    expect(source).toContain("src/images/photon-none.ts");
    expect(source).not.toContain("@cf-wasm/photon");
  });

  it("contains no Node-only module", async () => {
    const source = await readFile(join(edge.outDir, "worker.js"), "utf8");
    // esbuild marks each bundled module with a `// <path>` comment.
    const modules = [...source.matchAll(/^\/\/ (\S+\.[cm]?[jt]s)$/gm)].map((m) => m[1]!);
    expect(modules.length).toBeGreaterThan(50);
    const nodeOnly = modules.filter((m) =>
      /^(db\/node\.ts|functions\/node\/)|node_modules\/(pg|pg-pool|@electric-sql\/pglite|undici|sharp|@hono\/node-server|ws)\//.test(m),
    );
    expect(nodeOnly).toEqual([]);
    expect(source).not.toMatch(/from\s+["']node:/);
  });
});

describe("the Worker in workerd", () => {
  it("answers GET /health", async () => {
    const res = await get("/health");
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe("ok");
    expect(Object.fromEntries(Object.entries(res.body.data.checks).map(([k, v]: [string, any]) => [k, `${v.kind} ${v.status}`]))).toEqual({
      database: "postgres ok",
      kv: "upstash ok",
      queue: "poller ok",
      storage: "s3 ok",
    });
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("answers 401 in the envelope without a key, and with a revoked one", async () => {
    const res = await get("/api/v1/social/accounts");
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("UNAUTHORIZED");
    expect(typeof res.body.error.message).toBe("string");
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);

    const { userId } = await createUser(handle.db, `revoked-${crypto.randomUUID()}@example.test`);
    const { key, prefix } = await createApiKey(handle.db, userId);
    await revokeApiKey(handle.db, prefix);
    expect((await get("/api/v1/social/accounts", { Authorization: `Bearer ${key}` })).status).toBe(401);
  });

  it("scopes: every operation of its OpenAPI document refuses a key without the operation's scope (403) and takes one with it", async () => {
    const { userId } = await createUser(handle.db, `scopes-${crypto.randomUUID()}@example.test`);
    const keyFor = new Map<string, string>();
    const keyWith = async (scopes: ApiKeyScope[]) => {
      const name = scopes.join(",");
      if (!keyFor.has(name)) keyFor.set(name, (await createApiKey(handle.db, userId, name, { scopes })).key);
      return keyFor.get(name)!;
    };
    const table = scopeTable((await get("/openapi.json")).body);
    expect(new Set(table.map((c) => c.scope))).toEqual(new Set(["qr", "photo", "social", null]));
    for (const c of table.filter((c) => c.scope !== null)) {
      const lacking = c.request(await keyWith(allScopesBut(c.scope!)));
      const refused = await edge.mf.dispatchFetch(`${ORIGIN}${lacking.path}`, lacking.init as never);
      const body = (await refused.json()) as Record<string, any>;
      expect(refused.status, c.name).toBe(403);
      expect(body.error.code, c.name).toBe("INSUFFICIENT_SCOPE");
      const having = c.request(await keyWith([c.scope!]));
      const taken = await edge.mf.dispatchFetch(`${ORIGIN}${having.path}`, having.init as never);
      await taken.arrayBuffer();
      expect([401, 403], `${c.name} answered ${taken.status} to a ${c.scope} key`).not.toContain(taken.status);
    }
  });

  it("answers an unknown route with the 404 envelope", async () => {
    const res = await get("/no/such/route");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: { code: "NOT_FOUND", message: expect.any(String) } });
  });

  it("serves an authenticated request from Postgres over the Neon driver, rate-limited on Redis", async () => {
    const { userId } = await createUser(handle.db, `edge-${crypto.randomUUID()}@example.test`);
    const { key } = await createApiKey(handle.db, userId);
    const before = edge.neon.roundTrips;
    const redisBefore = edge.upstash.requests;
    const res = await get("/api/v1/social/accounts", { Authorization: `Bearer ${key}` });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { connectionStatus: "connected", accounts: [] } });
    expect(res.headers.get("ratelimit-limit")).toBe("300");
    expect(res.headers.get("ratelimit-remaining")).toBe("299");
    expect(edge.neon.roundTrips).toBeGreaterThan(before);
    expect(edge.upstash.requests).toBeGreaterThan(redisBefore);

    // The key's last use is recorded after the response (services.defer = ctx.waitUntil).
    const deadline = Date.now() + 10_000;
    let lastUsedAt: Date | null = null;
    while (!lastUsedAt && Date.now() < deadline) {
      [{ lastUsedAt } = { lastUsedAt: null }] = await handle.db.select({ lastUsedAt: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.userId, userId));
      if (!lastUsedAt) await new Promise((r) => setTimeout(r, 100));
    }
    expect(lastUsedAt).toBeInstanceOf(Date);
    // The key is now in the isolate's cache: the next read asks the database only for the accounts.
    const again = edge.neon.roundTrips;
    expect((await get("/api/v1/social/accounts", { Authorization: `Bearer ${key}` })).status).toBe(200);
    expect(edge.neon.roundTrips - again).toBe(1);
  });

  it("area B: lists the catalogue and generates a photo with a logo and Hindi text into the bucket", async () => {
    const templates = await get("/api/image/product-photography-prompts");
    expect(templates.status).toBe(200);
    expect(templates.body.data.length).toBeGreaterThanOrEqual(30);
    const { userId } = await createUser(handle.db, `photo-${crypto.randomUUID()}@example.test`);
    const { key } = await createApiKey(handle.db, userId);
    const product = await productJpeg(300, 400);
    const logo = await sharp({ create: { width: 100, height: 50, channels: 4, background: { r: 255, g: 0, b: 255, alpha: 1 } } })
      .png()
      .toBuffer();
    const res = await edge.mf.dispatchFetch(`${ORIGIN}/api/image/product-photography`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({
        productImages: [{ dataUrl: `data:image/jpeg;base64,${product.toString("base64")}` }],
        promptId: "hol-diwali",
        model: "standard",
        aspectRatio: "4:5",
        overlayText: "दिवाली सेल",
        logoImage: `data:image/png;base64,${logo.toString("base64")}`,
        outputResult: "url",
      }),
    });
    const body = (await res.json()) as Record<string, any>;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.data.imageUrl).toMatch(new RegExp(`^${edge.s3.endpoint}/media/photo/out/`));
    const stored = await S3Storage({
      endpoint: edge.s3.endpoint,
      region: edge.s3.region,
      bucket: "media",
      ...edge.s3.credentials,
      publicBaseUrl: `${edge.s3.endpoint}/media`,
    }).get(new URL(body.data.imageUrl).pathname.replace(/^\/media\//, ""));
    const meta = await sharp(Buffer.from(stored!.bytes)).metadata();
    expect([meta.width, meta.height]).toEqual([820, 1024]);
  });

  it("serves /files/<key> from the S3 bucket", async () => {
    const key = `media/${crypto.randomUUID()}/pixel.png`;
    const bytes = Uint8Array.from({ length: 300 }, (_, i) => i % 256);
    await S3Storage({
      endpoint: edge.s3.endpoint,
      region: edge.s3.region,
      bucket: "media",
      ...edge.s3.credentials,
      publicBaseUrl: `${edge.s3.endpoint}/media`,
    }).put(key, bytes, "image/png");
    const res = await edge.mf.dispatchFetch(`${ORIGIN}/files/${key}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes);
    expect(edge.s3.requests.some((r) => r.method === "GET" && r.path === `/media/${key}` && r.signed && r.status === 200)).toBe(true);
    expect((await get(`/files/media/${crypto.randomUUID()}/missing.png`)).status).toBe(404);
  });

  it("runs the scheduled handler", async () => {
    expect(await edge.scheduled()).toBe("ok");
  });
});

describe("the hub in workerd", () => {
  it("renders its pages, signs in with a one-time link and keeps a __Host- session cookie", async () => {
    const { userId } = await createUser(handle.db, `hub-${crypto.randomUUID()}@example.test`);
    const link = await createLoginLink(
      { db: handle.db, config: parseConfig({ PUBLIC_BASE_URL: bindings.PUBLIC_BASE_URL }), clock: { now: () => new Date() } },
      userId,
    );
    const token = new URL(link).searchParams.get("token")!;
    const signin = await edge.mf.dispatchFetch(`${ORIGIN}/hub/signin`);
    expect(signin.status).toBe(200);
    expect(signin.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(await signin.text()).toContain("one-time sign-in link");
    const login = await edge.mf.dispatchFetch(`${ORIGIN}/hub/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: bindings.PUBLIC_BASE_URL! },
      body: new URLSearchParams({ token }).toString(),
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.getSetCookie().find((c) => c.startsWith("__Host-hub_session="))!;
    expect(cookie).toMatch(/Secure/);
    const keys = await edge.mf.dispatchFetch(`${ORIGIN}/hub/keys`, { headers: { cookie: cookie.split(";")[0]! }, redirect: "manual" });
    expect(keys.status).toBe(200);
    expect(await keys.text()).toContain("Your keys");
  });
});

describe("the Worker with a bad configuration", () => {
  const withBindings = async (changes: Record<string, string | undefined>) => {
    const next = { ...bindings, ...changes };
    for (const [name, value] of Object.entries(changes)) if (value === undefined) delete next[name];
    await edge.setBindings(next as Record<string, string>);
  };
  afterAll(() => edge.setBindings(bindings));

  it("answers one 500 envelope naming the variable, never its value", async () => {
    await withBindings({ RATE_LIMIT_QR: "lots-and-lots" });
    const res = await get("/health");
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe("INTERNAL");
    expect(res.body.error.message).toContain("RATE_LIMIT_QR");
    expect(JSON.stringify(res.body)).not.toContain("lots-and-lots");
    expect(res.body.error.requestId).toBe(res.headers.get("x-request-id"));
  });

  it("refuses to run without a database or a bucket on the edge", async () => {
    await withBindings({ DATABASE_URL: undefined, S3_BUCKET: undefined });
    const res = await get("/api/v1/social/accounts");
    expect(res.status).toBe(500);
    expect(res.body.error.message).toContain("DATABASE_URL");
    expect(res.body.error.message).toContain("S3_BUCKET");
    expect(JSON.stringify(res.body)).not.toContain(edge.s3.credentials.secretAccessKey);
  });
});
