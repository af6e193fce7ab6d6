/**
 * The client as a customer gets it: `npm pack` of packages/client, installed with `npm install <tarball>` into a
 * scratch project in a temporary folder, type-checked with `--strict` under moduleResolution node16 and bundler
 * (the repository's TypeScript), then run with Node against a real server (`npm start` on a scratch DATA_DIR):
 * one operation of each area, a post created without an Idempotency-Key of its own, a wrong key's typed
 * error, and a webhook endpoint whose messages (a test and the post's post.published) the packed build's
 * verifyWebhook accepts. The consumer also holds calls the types must refuse (`@ts-expect-error`) and a
 * receiver that must handle every documented event type, so looser or stale types fail the check.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";
import { startReceiver, type Receiver, verified, waitUntil } from "../helpers/webhook-receiver";

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

// Webhooks: an endpoint for the post below (the test's receiver), and a test message to it.
const endpoint = await api.POST("/api/v1/webhooks", { body: { url: process.env.SHOPKIT_RECEIVER_URL!, events: ["post.published"] } });
if (endpoint.error) throw new Error(endpoint.error.error.code);
const test = await api.POST("/api/v1/webhooks/{id}/test", { params: { path: { id: endpoint.data.data.id } } });
if (test.error) throw new Error(test.error.error.code);

const created = await api.POST("/api/v1/social/posts", { body: { accountIds, caption: "New in store", hashtags: ["sale"] } });
if (created.error) throw new Error(created.error.error.code);
const post = await api.GET("/api/v1/social/posts/{id}", { params: { path: { id: created.data.data.id } } });
if (post.error) throw new Error(post.error.error.code);

// A wrong key: the error is the API's envelope.
const wrong = await createClient({ baseUrl, apiKey: "sk_wrong" }).GET("/api/v1/social/accounts");
const envelope: ApiError | undefined = wrong.error;

// What a receiver does with a message: the event is a union narrowed by its type (every type handled, or this
// does not compile).
export async function received(body: string, headers: Headers | Record<string, string>, secret: string): Promise<string> {
  const event: WebhookEvent = await verifyWebhook(body, headers, secret);
  switch (event.type) {
    case "post.published":
    case "post.partially_published":
    case "post.failed":
    case "post.cancelled":
      return event.type + " " + event.data.id + " " + event.data.status;
    case "post.target.published":
    case "post.target.failed":
      return event.type + " " + event.data.post.id + " " + event.data.target.accountId;
    case "account.reconnect_required":
      return event.type + " " + event.data.id;
    case "photo.job.succeeded":
    case "photo.job.failed":
      return event.type + " " + event.data.id + " " + event.data.status;
    case "webhook.test":
      return event.type + " " + event.data.endpointId;
    default: {
      const unknownType: never = event;
      return unknownType;
    }
  }
}

console.log(JSON.stringify({
  qrCodeDataUrl: qrCodeDataUrl.slice(0, 22),
  templateIds,
  accountIds,
  postId: post.data.data.id,
  postStatus: post.data.data.status,
  wrongKey: [wrong.response.status, envelope?.error.code],
  endpointId: endpoint.data.data.id,
  secret: endpoint.data.data.secret,
}));
`;

const base = { strict: true, target: "ES2022", lib: ["ES2022", "DOM"], types: [], skipLibCheck: false, isolatedModules: true };

let scratch: string;
let server: ServerProcess;
let receiver: Receiver;

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
  receiver = await startReceiver();
}, 300_000);

afterAll(async () => {
  await receiver?.close();
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

  it("calls one operation of each area, registers a webhook endpoint, and types the error envelope", async () => {
    const { stdout } = await run(process.execPath, ["dist/main.js"], {
      cwd: scratch,
      env: { ...childEnv(), SHOPKIT_BASE_URL: server.baseUrl, SHOPKIT_API_KEY: server.apiKey, SHOPKIT_RECEIVER_URL: receiver.url },
    });
    const out = JSON.parse(stdout);
    expect(out.qrCodeDataUrl).toBe("data:image/png;base64,");
    expect(out.templateIds.length).toBeGreaterThan(10);
    expect(out.accountIds).toContain("pageplatform:1001");
    expect(out.postId).toMatch(/^[0-9a-f-]{36}$/);
    expect(["queued", "publishing", "published"]).toContain(out.postStatus);
    expect(out.wrongKey).toEqual([401, "UNAUTHORIZED"]);
    expect(out.secret).toMatch(/^whsec_/);

    // The server's messages, verified by the packed build (and by the standardwebhooks package).
    const packed = (await import(join(scratch, "node_modules/@shopkit/client/dist/index.js"))) as typeof import("../../packages/client/src/index");
    const test = await waitUntil("the webhook.test message", () => receiver.ofType("webhook.test")[0]);
    const published = await waitUntil("the post.published message", () => receiver.ofType("post.published")[0], 60_000);
    for (const message of [test, published]) expect(verified(message, out.secret).type).toBe(JSON.parse(message.body).type);
    const headersOf = (m: typeof test) => Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, String(v)]));
    await expect(packed.verifyWebhook(test.body, headersOf(test), out.secret)).resolves.toMatchObject({
      type: "webhook.test",
      data: { endpointId: out.endpointId },
    });
    await expect(packed.verifyWebhook(published.body, headersOf(published), out.secret)).resolves.toMatchObject({
      type: "post.published",
      data: { id: out.postId, status: "published" },
    });
    await expect(packed.verifyWebhook(`${test.body} `, headersOf(test), out.secret)).rejects.toThrow(packed.WebhookVerificationError);
  }, 120_000);
});
