/**
 * The Worker as deployed: `wrangler deploy --dry-run` builds the bundle, which runs in workerd (Miniflare,
 * from wrangler's own dependencies) with the real edge adapters pointed at this machine: the Neon driver
 * through the WebSocket-to-TCP bridge to a scratch Postgres database, S3Storage at the S3 fake, the
 * Upstash limiter through the REST bridge to Redis. Also checks that the bundle stays under the Workers
 * Free limit (3 MiB gzipped) and carries no Node-only module.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";
import { unstable_readConfig } from "wrangler";
import { eq } from "drizzle-orm";
import { openNodeDb } from "../../db/node";
import type { DbHandle } from "../../db/client";
import { apiKeys } from "../../db/schema";
import { createApiKey, createUser, revokeApiKey } from "../../src/http/api-keys";
import { S3Storage } from "../../src/adapters/storage/s3";
import { generateTokenKey } from "../../src/adapters/token-cipher";
import { parseConfig } from "../../src/config";
import { createLoginLink } from "../../src/hub/login-links";
import { startNeonBridge, type NeonBridge } from "../helpers/neon-bridge";
import { createScratchDatabase, type ScratchDatabase } from "../helpers/postgres";
import { startS3Fake, type S3Fake } from "../helpers/s3-fake";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge";
import sharp from "sharp";
import { productJpeg } from "../photo/fixtures";

const run = promisify(execFile);
const ROOT = new URL("../..", import.meta.url).pathname;
const GZIP_LIMIT = 3 * 1024 * 1024;
const ORIGIN = "http://api.test";

let outdir: string;
let mf: Miniflare;
let scratch: ScratchDatabase;
let handle: DbHandle;
let neon: NeonBridge;
let s3: S3Fake;
let upstash: UpstashBridge;
let bindings: Record<string, string>;
let workerOptions: ConstructorParameters<typeof Miniflare>[0];

beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), "worker-build-"));
  const build = run(join(ROOT, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", outdir], {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
  });
  [scratch, neon, s3, upstash] = await Promise.all([createScratchDatabase(), startNeonBridge(), startS3Fake({ buckets: ["media"], region: "auto" }), startUpstashBridge()]);
  handle = await openNodeDb({ url: scratch.url, poolSize: 2 });
  await build;

  const config = unstable_readConfig({ config: join(ROOT, "wrangler.toml") });
  bindings = {
    ...(config.vars as Record<string, string>),
    DATABASE_URL: scratch.url,
    NEON_WS_PROXY: `127.0.0.1:${neon.port}/v1`,
    TOKEN_ENCRYPTION_KEY: generateTokenKey(),
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: s3.region,
    S3_BUCKET: "media",
    S3_ACCESS_KEY_ID: s3.credentials.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    S3_PUBLIC_BASE_URL: `${s3.endpoint}/media`,
    UPSTASH_REDIS_REST_URL: upstash.url,
    UPSTASH_REDIS_REST_TOKEN: upstash.token,
    LOG_LEVEL: "warn",
    PUBLIC_BASE_URL: "https://api.example.test",
  };
  // The modules are listed rather than discovered: Miniflare's discovery refuses any computed dynamic
  // import, and @upstash/qstash's (never-called) local dev-server code has some.
  const wasm = (await readdir(outdir)).filter((f) => f.endsWith(".wasm"));
  const fonts = (await readdir(outdir)).filter((f) => f.endsWith(".ttf"));
  workerOptions = {
    modulesRoot: outdir,
    modules: [
      { type: "ESModule", path: join(outdir, "worker.js"), contents: await readFile(join(outdir, "worker.js"), "utf8") },
      ...(await Promise.all(wasm.map(async (f) => ({ type: "CompiledWasm" as const, path: join(outdir, f), contents: await readFile(join(outdir, f)) })))),
      // Area B's fonts: wrangler's Data rule makes each .ttf a module the text engine imports on first use.
      ...(await Promise.all(fonts.map(async (f) => ({ type: "Data" as const, path: join(outdir, f), contents: await readFile(join(outdir, f)) })))),
    ],
    compatibilityDate: config.compatibility_date,
    compatibilityFlags: config.compatibility_flags,
    bindings,
    port: 0,
  };
  mf = new Miniflare(workerOptions);
  await mf.ready;
}, 120_000);

afterAll(async () => {
  // Each step on its own, so a worker that failed to start still leaves no database or server behind.
  const steps: Array<() => unknown> = [
    () => mf?.dispose(),
    () => handle?.close(),
    () => Promise.all([neon?.close(), s3?.close(), upstash?.close()]),
    () => scratch?.drop(),
    () => (outdir ? rm(outdir, { recursive: true, force: true }) : undefined),
  ];
  for (const step of steps) await Promise.resolve().then(() => step()).catch(() => {});
});

const get = async (path: string, headers: Record<string, string> = {}) => {
  const res = await mf.dispatchFetch(`${ORIGIN}${path}`, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, any> };
};

describe("the Worker bundle", () => {
  it("stays under 3 MiB gzipped and reports its size", async () => {
    const files = (await readdir(outdir)).filter((f) => f.endsWith(".js") || f.endsWith(".wasm") || f.endsWith(".ttf"));
    let gzipped = 0;
    for (const file of files) gzipped += gzipSync(await readFile(join(outdir, file)), { level: 9 }).length;
    console.log(`worker bundle: ${files.join(", ")}; ${(gzipped / 1024).toFixed(0)} KiB gzipped (limit ${GZIP_LIMIT / 1024} KiB)`);
    expect(gzipped).toBeLessThan(GZIP_LIMIT);
  });

  it("contains no Node-only module", async () => {
    const source = await readFile(join(outdir, "worker.js"), "utf8");
    // esbuild marks each bundled module with a `// <path>` comment.
    const modules = [...source.matchAll(/^\/\/ (\S+\.[cm]?[jt]s)$/gm)].map((m) => m[1]!);
    expect(modules.length).toBeGreaterThan(50);
    const nodeOnly = modules.filter((m) => /^(db\/node\.ts|functions\/node\/)|node_modules\/(pg|pg-pool|@electric-sql\/pglite|undici|sharp|@hono\/node-server|ws)\//.test(m));
    expect(nodeOnly).toEqual([]);
    expect(source).not.toMatch(/from\s+["']node:/);
  });
});

describe("the Worker in workerd", () => {
  it("answers GET /health", async () => {
    const res = await get("/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { status: "ok" } });
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

  it("answers an unknown route with the 404 envelope", async () => {
    const res = await get("/no/such/route");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: { code: "NOT_FOUND", message: expect.any(String) } });
  });

  it("serves an authenticated request from Postgres over the Neon driver, rate-limited on Redis", async () => {
    const { userId } = await createUser(handle.db, `edge-${crypto.randomUUID()}@example.test`);
    const { key } = await createApiKey(handle.db, userId);
    const before = neon.connections;
    const redisBefore = upstash.requests;
    const res = await get("/api/v1/social/accounts", { Authorization: `Bearer ${key}` });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { connectionStatus: "connected", accounts: [] } });
    expect(res.headers.get("ratelimit-limit")).toBe("300");
    expect(res.headers.get("ratelimit-remaining")).toBe("299");
    expect(neon.connections).toBeGreaterThan(before);
    expect(upstash.requests).toBeGreaterThan(redisBefore);

    // The key's last use is recorded after the response (services.defer = ctx.waitUntil).
    const deadline = Date.now() + 10_000;
    let lastUsedAt: Date | null = null;
    while (!lastUsedAt && Date.now() < deadline) {
      [{ lastUsedAt } = { lastUsedAt: null }] = await handle.db.select({ lastUsedAt: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.userId, userId));
      if (!lastUsedAt) await new Promise((r) => setTimeout(r, 100));
    }
    expect(lastUsedAt).toBeInstanceOf(Date);
  });

  it("area B: lists the catalogue and generates a photo with a logo and Hindi text into the bucket", async () => {
    const templates = await get("/api/image/product-photography-prompts");
    expect(templates.status).toBe(200);
    expect(templates.body.data.length).toBeGreaterThanOrEqual(30);
    const { userId } = await createUser(handle.db, `photo-${crypto.randomUUID()}@example.test`);
    const { key } = await createApiKey(handle.db, userId);
    const product = await productJpeg(300, 400);
    const logo = await sharp({ create: { width: 100, height: 50, channels: 4, background: { r: 255, g: 0, b: 255, alpha: 1 } } }).png().toBuffer();
    const res = await mf.dispatchFetch(`${ORIGIN}/api/image/product-photography`, {
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
    expect(body.data.imageUrl).toMatch(new RegExp(`^${s3.endpoint}/media/photo/out/`));
    const stored = await S3Storage({ endpoint: s3.endpoint, region: s3.region, bucket: "media", ...s3.credentials, publicBaseUrl: `${s3.endpoint}/media` }).get(new URL(body.data.imageUrl).pathname.replace(/^\/media\//, ""));
    const meta = await sharp(Buffer.from(stored!.bytes)).metadata();
    expect([meta.width, meta.height]).toEqual([819, 1024]);
  });

  it("serves /files/<key> from the S3 bucket", async () => {
    const key = `media/${crypto.randomUUID()}/pixel.png`;
    const bytes = Uint8Array.from({ length: 300 }, (_, i) => i % 256);
    await S3Storage({ endpoint: s3.endpoint, region: s3.region, bucket: "media", ...s3.credentials, publicBaseUrl: `${s3.endpoint}/media` }).put(key, bytes, "image/png");
    const res = await mf.dispatchFetch(`${ORIGIN}/files/${key}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes);
    expect(s3.requests.some((r) => r.method === "GET" && r.path === `/media/${key}` && r.signed && r.status === 200)).toBe(true);
    expect((await get(`/files/media/${crypto.randomUUID()}/missing.png`)).status).toBe(404);
  });

  it("runs the scheduled handler", async () => {
    const worker = await mf.getWorker();
    const result = await worker.scheduled({ cron: "* * * * *", scheduledTime: new Date() });
    expect(result.outcome).toBe("ok");
  });
});

describe("the hub in workerd", () => {
  it("renders its pages, signs in with a one-time link and keeps a __Host- session cookie", async () => {
    const { userId } = await createUser(handle.db, `hub-${crypto.randomUUID()}@example.test`);
    const link = await createLoginLink({ db: handle.db, config: parseConfig({ PUBLIC_BASE_URL: bindings.PUBLIC_BASE_URL }), clock: { now: () => new Date() } }, userId);
    const token = new URL(link).searchParams.get("token")!;
    const signin = await mf.dispatchFetch(`${ORIGIN}/hub/signin`);
    expect(signin.status).toBe(200);
    expect(signin.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(await signin.text()).toContain("one-time sign-in link");
    const login = await mf.dispatchFetch(`${ORIGIN}/hub/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: bindings.PUBLIC_BASE_URL! },
      body: new URLSearchParams({ token }).toString(),
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.getSetCookie().find((c) => c.startsWith("__Host-hub_session="))!;
    expect(cookie).toMatch(/Secure/);
    const keys = await mf.dispatchFetch(`${ORIGIN}/hub/keys`, { headers: { cookie: cookie.split(";")[0]! }, redirect: "manual" });
    expect(keys.status).toBe(200);
    expect(await keys.text()).toContain("Your keys");
  });
});

describe("the Worker with a bad configuration", () => {
  const withBindings = async (changes: Record<string, string | undefined>) => {
    const next = { ...bindings, ...changes };
    for (const [name, value] of Object.entries(changes)) if (value === undefined) delete next[name];
    await mf.setOptions({ ...workerOptions, bindings: next as Record<string, string> });
  };
  afterAll(() => mf.setOptions(workerOptions));

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
    expect(JSON.stringify(res.body)).not.toContain(s3.credentials.secretAccessKey);
  });
});
