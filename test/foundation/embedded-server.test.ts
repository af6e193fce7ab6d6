/**
 * The embedded server as a newcomer runs it: `npm start` (scripts/start.mjs: dist/ built when stale, then
 * dist/node.js) on a fresh DATA_DIR, `npm run admin` (scripts/admin.mjs) beside it, Ctrl-C, and a restart
 * that keeps everything.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess, execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "node:http";
import { promisify } from "node:util";
import { freePort } from "../helpers/server-process";

const run = promisify(execFile);
const ROOT = new URL("../..", import.meta.url).pathname;
const START = join(ROOT, "scripts/start.mjs");
const ADMIN = join(ROOT, "scripts/admin.mjs");

interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

async function start(dataDir: string, port: number): Promise<Running> {
  const child = spawn(process.execPath, [START], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  const deadline = Date.now() + 60_000;
  while (!out.includes('"listening"')) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`server did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, output: () => out, exited };
}

async function admin(dataDir: string, ...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [ADMIN, ...args], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("embedded server", () => {
  let dataDir: string;
  let port: number;
  let server: Running;
  let base: string;
  let devKey: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "shopkit-"));
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    server = await start(dataDir, port);
  }, 90_000);
  afterAll(async () => {
    if (server.child.exitCode === null) server.child.kill("SIGKILL");
    await rm(dataDir, { recursive: true, force: true });
  });

  it("prints the first key once and writes it to DATA_DIR/dev-api-key with mode 600", async () => {
    devKey = (await readFile(join(dataDir, "dev-api-key"), "utf8")).trim();
    expect(devKey).toMatch(/^sk_/);
    expect(server.output()).toContain(devKey);
    expect((await stat(join(dataDir, "dev-api-key"))).mode & 0o777).toBe(0o600);
  });

  it("serves the accounts list with the key and 401 without", async () => {
    const ok = await fetch(`${base}/api/v1/social/accounts`, { headers: { Authorization: `Bearer ${devKey}` } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ data: { connectionStatus: "connected", accounts: [] } });
    const no = await fetch(`${base}/api/v1/social/accounts`);
    expect(no.status).toBe(401);
    expect(((await no.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED");
  });

  it("the admin CLI works through the running server", async () => {
    const created = await admin(dataDir, "user:create", "--email", "shop@example.test");
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^sk_[0-9A-Za-z]{38}$/);
    expect((await fetch(`${base}/api/v1/social/accounts`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(200);

    const second = await admin(dataDir, "key:create", "--email", "shop@example.test", "--name", "ci");
    expect(second.stdout.trim()).toMatch(/^sk_/);

    const page = await admin(dataDir, "key:create", "--email", "shop@example.test", "--name", "shop page", "--scopes", "qr");
    const qrKey = page.stdout.trim();
    expect(qrKey).toMatch(/^sk_/);
    expect((await fetch(`${base}/api/qr-code/generate/${qrKey}/hi`)).status).toBe(200);
    expect((await fetch(`${base}/api/v1/social/accounts`, { headers: { Authorization: `Bearer ${qrKey}` } })).status).toBe(403);

    const list = await admin(dataDir, "key:list", "--email", "shop@example.test");
    expect(list.stdout).toContain(key.slice(0, 11));
    expect(list.stdout).toContain("ci");
    expect(list.stdout).toMatch(/shop page\tqr\t/);
    expect(list.stdout).not.toContain(key.slice(11));

    const revoked = await admin(dataDir, "key:revoke", "--prefix", key.slice(0, 11));
    expect(revoked.code).toBe(0);
    expect((await fetch(`${base}/api/v1/social/accounts`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(401);
    expect((await fetch(`${base}/api/v1/social/accounts`, { headers: { Authorization: `Bearer ${second.stdout.trim()}` } })).status).toBe(200);
  }, 60_000);

  it("the admin CLI explains mistakes", async () => {
    const dup = await admin(dataDir, "user:create", "--email", "shop@example.test");
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain("exists already");
    const scope = await admin(dataDir, "key:create", "--email", "shop@example.test", "--scopes", "billing");
    expect(scope.code).toBe(1);
    expect(scope.stderr).toContain('unknown scope "billing"');
    const unknown = await admin(dataDir, "frobnicate");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("usage");
  }, 120_000);

  it("Ctrl-C lets an in-flight request finish, stops cleanly, and a restart keeps all data", async () => {
    // A request whose body is still arriving when the signal comes must still be answered.
    const body = JSON.stringify({ type: "text", value: "still answered after Ctrl-C" });
    const answered = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(`${base}/api/qr-code/generate`, {
        method: "POST",
        headers: { Authorization: `Bearer ${devKey}`, "Content-Type": "application/json", "Transfer-Encoding": "chunked" },
      });
      req.on("response", (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on("error", reject);
      req.write(body.slice(0, 10));
      setTimeout(() => {
        server.child.kill("SIGINT");
        setTimeout(() => req.end(body.slice(10)), 500);
      }, 300);
    });
    const res = await answered;
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).data.qrCodeDataUrl).toMatch(/^data:image\/png;base64,/);
    expect(await server.exited).toBe(0);
    await expect(fetch(`${base}/health`)).rejects.toThrow();
    server = await start(dataDir, port);
    expect(server.output()).not.toContain("First start");
    const ok = await fetch(`${base}/api/v1/social/accounts`, { headers: { Authorization: `Bearer ${devKey}` } });
    expect(ok.status).toBe(200);
    const list = await admin(dataDir, "key:list", "--email", "shop@example.test");
    expect(list.stdout.split("\n").filter((l) => l.includes("revoked"))).toHaveLength(1);
  }, 60_000);

  it("the admin CLI opens the database itself when no server runs", async () => {
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    const created = await admin(dataDir, "user:create", "--email", "offline@example.test");
    expect(created.code).toBe(0);
    expect(created.stdout.trim()).toMatch(/^sk_/);
  }, 60_000);

  it("refuses to start with a bad variable, naming it", async () => {
    try {
      await run(process.execPath, [START], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir, PORT: "http" } });
      expect.unreachable();
    } catch (err) {
      const e = err as { code: number; stderr: string };
      expect(e.code).toBe(1);
      expect(e.stderr).toContain("PORT");
    }
  }, 30_000);
});
