/**
 * The client as a customer gets it: `npm pack` of packages/client, installed with `npm install <tarball>` into a
 * scratch project in a temporary folder, type-checked with `--strict` under moduleResolution node16 and bundler
 * (the repository's TypeScript), then run with Node against a real server (`npm start` on a scratch DATA_DIR):
 * one operation of each area, a post created without an Idempotency-Key of its own, a wrong key's typed
 * error, and a webhook message signed by the `standardwebhooks` package verified by the packed build. The
 * consumer also holds calls the types must refuse (`@ts-expect-error`), so looser types fail the check.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";

const run = promisify(execFile);
const ROOT = new URL("../..", import.meta.url).pathname;
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");

/** The environment for npm and node children: this run's npm settings (a parent `npm run`'s) left out. */
const childEnv = () => Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));

const CONSUMER = `import { createClient, verifyWebhook, type ApiError, type WebhookEvent } from "@shopkit/client";

declare const process: { env: Record<string, string | undefined> };

const baseUrl = process.env.SHOPKIT_BASE_URL!;
const api = createClient({ baseUrl, apiKey: process.env.SHOPKIT_API_KEY! });

// Never called: each call must fail to compile.
export function refused() {
  // @ts-expect-error a url code needs its value
  void api.POST("/api/qr-code/generate", { body: { type: "url" } });
  // @ts-expect-error size is a number
  void api.POST("/api/qr-code/generate", { body: { type: "url", value: "https://example.com", size: "big" } });
  // @ts-expect-error no such path
  void api.GET("/api/v1/social/nothing");
  // @ts-expect-error a post's id is a path parameter
  void api.GET("/api/v1/social/posts/{id}", {});
}

// A: only type and value; every design field has a default.
const qr = await api.POST("/api/qr-code/generate", { body: { type: "url", value: "https://example.com/menu" } });
if (qr.error) throw new Error(qr.error.error.code);
const qrCodeDataUrl: string = qr.data.data.qrCodeDataUrl;

// B: the scene templates.
const templates = await api.GET("/api/image/product-photography-prompts");
if (templates.error) throw new Error(templates.error.error.code);
const templateIds: string[] = templates.data.data.map((t) => t.id);

// C: an account of the sandbox (not part of the API), then the API's accounts and a post without a key of ours.
const connected = await fetch(baseUrl + "/sandbox/accounts", {
  method: "POST",
  headers: { Authorization: "Bearer " + process.env.SHOPKIT_API_KEY, "Content-Type": "application/json" },
  body: JSON.stringify({ platform: "pageplatform", name: "Corner Shop", platformAccountId: "1001" }),
});
if (!connected.ok) throw new Error("sandbox: " + connected.status);
const accounts = await api.GET("/api/v1/social/accounts");
if (accounts.error) throw new Error(accounts.error.error.code);
const accountIds = accounts.data.data.accounts.map((a) => a.id);
const created = await api.POST("/api/v1/social/posts", { body: { accountIds, caption: "New in store", hashtags: ["sale"] } });
if (created.error) throw new Error(created.error.error.code);
const post = await api.GET("/api/v1/social/posts/{id}", { params: { path: { id: created.data.data.id } } });
if (post.error) throw new Error(post.error.error.code);

// A wrong key: the error is the API's envelope.
const wrong = await createClient({ baseUrl, apiKey: "sk_wrong" }).GET("/api/v1/social/accounts");
const envelope: ApiError | undefined = wrong.error;

// A webhook message.
const message = JSON.parse(process.env.SHOPKIT_WEBHOOK!) as { body: string; headers: Record<string, string>; secret: string };
const event: WebhookEvent = await verifyWebhook(message.body, message.headers, message.secret);
let forged = "accepted";
await verifyWebhook(message.body + " ", message.headers, message.secret).catch((e: Error) => (forged = e.name));

console.log(JSON.stringify({
  qrCodeDataUrl: qrCodeDataUrl.slice(0, 22),
  templateIds,
  accountIds,
  postId: post.data.data.id,
  postStatus: post.data.data.status,
  wrongKey: [wrong.response.status, envelope?.error.code],
  webhook: event.type,
  forged,
}));
`;

const base = { strict: true, target: "ES2022", lib: ["ES2022", "DOM"], types: [], skipLibCheck: false, isolatedModules: true };

let scratch: string;
let server: ServerProcess;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "shopkit-client-consumer-"));
  const env = childEnv();
  const [, started] = await Promise.all([
    (async () => {
      await run("npm", ["pack", "-w", "packages/client", "--pack-destination", scratch, "--loglevel=error"], { cwd: ROOT, env });
      const tarball = (await readdir(scratch)).find((f) => f.endsWith(".tgz"));
      if (!tarball) throw new Error("npm pack wrote no tarball");
      await writeFile(join(scratch, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
      await run("npm", ["install", `./${tarball}`, "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], { cwd: scratch, env });
      await mkdir(join(scratch, "src"));
      await writeFile(join(scratch, "src/main.ts"), CONSUMER);
      const tsconfig = (options: object) => JSON.stringify({ compilerOptions: { ...base, ...options }, include: ["src"] });
      await writeFile(join(scratch, "tsconfig.node16.json"), tsconfig({ module: "node16", moduleResolution: "node16", rootDir: "src", outDir: "dist" }));
      await writeFile(join(scratch, "tsconfig.bundler.json"), tsconfig({ module: "esnext", moduleResolution: "bundler", noEmit: true }));
    })(),
    startServerProcess(),
  ]);
  server = started;
}, 300_000);

afterAll(async () => {
  await server?.dispose();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("the packed client in a scratch project", () => {
  it("ships built JavaScript and declarations only", async () => {
    const { stdout } = await run("tar", ["-tzf", join(scratch, (await readdir(scratch)).find((f) => f.endsWith(".tgz"))!)]);
    const files = stdout.trim().split("\n").sort();
    expect(files).toContain("package/dist/index.js");
    expect(files).toContain("package/dist/index.d.ts");
    expect(files).toContain("package/dist/generated/openapi.d.ts");
    expect(files.filter((f) => !/^package\/(dist\/.*\.(js|d\.ts)|package\.json|README\.md)$/.test(f))).toEqual([]);
  });

  it("type-checks with --strict under moduleResolution node16 and bundler", async () => {
    for (const project of ["tsconfig.bundler.json", "tsconfig.node16.json"]) {
      const result = await run(process.execPath, [TSC, "-p", project], { cwd: scratch }).catch((e: { stdout: string; stderr: string }) => e);
      expect(`${result.stdout}${result.stderr}`, project).toBe("");
    }
  }, 120_000);

  it("calls one operation of each area, verifies a webhook message, and types the error envelope", async () => {
    const secret = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")}`;
    const body = JSON.stringify({ type: "webhook.test", timestamp: new Date().toISOString(), data: {} });
    const at = new Date();
    const headers = {
      "webhook-id": "msg_packed",
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": new Webhook(secret).sign("msg_packed", at, body),
    };
    const { stdout } = await run(process.execPath, ["dist/main.js"], {
      cwd: scratch,
      env: { ...childEnv(), SHOPKIT_BASE_URL: server.baseUrl, SHOPKIT_API_KEY: server.apiKey, SHOPKIT_WEBHOOK: JSON.stringify({ body, headers, secret }) },
    });
    const out = JSON.parse(stdout);
    expect(out.qrCodeDataUrl).toBe("data:image/png;base64,");
    expect(out.templateIds.length).toBeGreaterThan(10);
    expect(out.accountIds).toContain("pageplatform:1001");
    expect(out.postId).toMatch(/^[0-9a-f-]{36}$/);
    expect(["queued", "publishing", "published"]).toContain(out.postStatus);
    expect(out.wrongKey).toEqual([401, "UNAUTHORIZED"]);
    expect(out.webhook).toBe("webhook.test");
    expect(out.forged).toBe("WebhookVerificationError");
  }, 60_000);
});
