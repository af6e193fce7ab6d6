/**
 * Bodies the hub and the admin route take are bounded before they are read: a declared length over 64 KB
 * is refused from its header, a chunked body is cut off once it passes 64 KB, both with 413 and without the
 * server's memory growing. Against the real embedded server (`functions/node.ts`): a 200 MB body to
 * `/hub/login` (no sign-in needed; Origin set to the server's own, as any script can) and to
 * `/_admin/command` (with its token), streamed chunked and with a declared length; and an API operation that
 * takes no body, sent none, an empty length, or a body declared or chunked. In process: the hub's
 * form reader refuses a repeated field, an over-long field, too many fields, a NUL, another content type
 * and too large a form with a 4xx page, never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request as httpRequest } from "node:http";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { memoryMeter, type MemoryMeter } from "../helpers/proc-memory";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";
import { createHubTest, type HubBrowser, type HubTest } from "../hub/hub-client";

const MiB = 1024 * 1024;
/** The key form's area checkboxes, all ticked. */
const ALL_SCOPES = { scope_qr: "on", scope_photo: "on", scope_social: "on" };
const FLOOD_BYTES = 200 * MiB;

interface Flooded {
  status: number;
  /** From the first byte written to the reply's status line. */
  ms: number;
  /** Body bytes written before the reply came. */
  sent: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * POSTs up to `total` bytes as fast as the connection takes them (chunked unless `headers` declares a
 * length), and stops sending once the reply's status line arrives.
 */
function flood(url: string, headers: Record<string, string>, total = FLOOD_BYTES, prefix = ""): Promise<Flooded> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpRequest(url, { method: "POST", headers, agent: false });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let sent = 0;
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      const ms = performance.now() - started;
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => {
        req.destroy();
        resolve({ status: res.statusCode!, ms, sent, body, headers: res.headers });
      });
      res.on("error", reject);
    });
    req.on("error", (err) => {
      if (!answered) reject(err);
    });
    if (prefix) {
      req.write(prefix);
      sent += prefix.length;
    }
    const pump = () => {
      while (!answered && sent < total) {
        const piece = total - sent >= chunk.length ? chunk : chunk.subarray(0, total - sent);
        sent += piece.length;
        if (!req.write(piece)) {
          req.once("drain", pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    pump();
  });
}

describe("the real server, flooded", () => {
  let server: ServerProcess;
  let meter: MemoryMeter;
  let peakResets: boolean;
  let adminToken: string;

  beforeAll(async () => {
    server = await startServerProcess();
    const admin = JSON.parse(await readFile(join(server.dataDir, "admin.json"), "utf8")) as { pid: number; token: string };
    adminToken = admin.token;
    meter = memoryMeter(admin.pid);
    // Warm both routes up, so what they load on first use is not counted against the flood.
    for (let i = 0; i < 3; i++) {
      await fetch(`${server.baseUrl}/hub/login`, {
        method: "POST",
        headers: { origin: server.baseUrl, "content-type": "application/x-www-form-urlencoded" },
        body: "token=x",
      });
      await fetch(`${server.baseUrl}/_admin/command`, {
        method: "POST",
        headers: { "x-admin-token": adminToken, "content-type": "application/json" },
        body: JSON.stringify({ command: "key:list", email: "dev@localhost" }),
      });
    }
    peakResets = meter.reset();
  }, 90_000);
  afterAll(async () => server?.dispose());

  /** Floods, and checks the reply came before the body ended and resident memory stayed within 20 MB. */
  async function refusedWithin20MB(path: string, headers: Record<string, string>): Promise<Flooded> {
    await new Promise((r) => setTimeout(r, 200));
    const before = meter.read().rssMiB;
    meter.reset();
    let sampled = before;
    const sampler = setInterval(() => (sampled = Math.max(sampled, meter.read().rssMiB)), 10);
    let res: Flooded;
    try {
      res = await flood(`${server.baseUrl}${path}`, headers);
    } finally {
      clearInterval(sampler);
    }
    await new Promise((r) => setTimeout(r, 200));
    const after = meter.read();
    const peak = peakResets ? after.peakMiB : Math.max(sampled, after.rssMiB);
    expect(res.status, res.body.slice(0, 300)).toBe(413);
    expect(res.sent).toBeLessThan(FLOOD_BYTES);
    expect(res.ms).toBeLessThan(5000);
    expect(peak - before, `resident ${before.toFixed(1)} MiB before, peak ${peak.toFixed(1)} MiB`).toBeLessThan(20);
    expect(after.rssMiB - before).toBeLessThan(20);
    return res;
  }

  const hubHeaders = () => ({ origin: server.baseUrl, "content-type": "application/x-www-form-urlencoded" });
  const adminHeaders = () => ({ "x-admin-token": adminToken, "content-type": "application/json" });

  it("/hub/login: 200 MB chunked from the server's own origin is cut off with 413", async () => {
    const res = await refusedWithin20MB("/hub/login", hubHeaders());
    expect(res.headers["content-type"]).toContain("text/html");
    expect(res.body).toContain("larger than the hub takes");
  }, 60_000);

  it("/hub/login: a declared 200 MB is refused from its header with 413", async () => {
    await refusedWithin20MB("/hub/login", { ...hubHeaders(), "content-length": String(FLOOD_BYTES) });
  }, 60_000);

  it("/_admin/command (with its token): 200 MB chunked is cut off with 413", async () => {
    const res = await refusedWithin20MB("/_admin/command", adminHeaders());
    expect(JSON.parse(res.body).error.code).toBe("PAYLOAD_TOO_LARGE");
  }, 60_000);

  it("/_admin/command (with its token): a declared 200 MB is refused from its header with 413", async () => {
    await refusedWithin20MB("/_admin/command", { ...adminHeaders(), "content-length": String(FLOOD_BYTES) });
  }, 60_000);

  it("an operation that takes no body, over the real socket: none, an empty length, {} pass; a JSON body, declared or chunked, is 422", async () => {
    const deleteWith = (headers: Record<string, string>, chunks: string[]) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(`${server.baseUrl}/api/v1/social/posts/0b9f7a52-4c53-4c5e-9d0e-5d7c0f6a8e11`, {
          method: "DELETE",
          headers: { authorization: `Bearer ${server.apiKey}`, ...headers },
          agent: false,
        });
        req.on("response", (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (d: string) => (body += d));
          res.on("end", () => resolve({ status: res.statusCode!, body }));
        });
        req.on("error", reject);
        for (const chunk of chunks) req.write(chunk);
        req.end();
      });
    const json = { "content-type": "application/json" };
    // Node's client sends a DELETE's body chunked only when told to (it does by default for POST).
    const chunked = { ...json, "transfer-encoding": "chunked" };
    const code = (r: { body: string }) => {
      try {
        return (JSON.parse(r.body) as { error: { code: string } }).error.code;
      } catch {
        return r.body.slice(0, 200);
      }
    };
    for (const [name, headers, chunks, status, expected] of [
      ["no body", {}, [], 404, "POST_NOT_FOUND"],
      ["Content-Length: 0", { "content-length": "0" }, [], 404, "POST_NOT_FOUND"],
      ["chunked {}", chunked, ["{", "}"], 404, "POST_NOT_FOUND"],
      ["chunked JSON", chunked, ['{"x"', ":1}"], 422, "VALIDATION_FAILED"],
      ["declared JSON", { ...json, "content-length": "7" }, ['{"x":1}'], 422, "VALIDATION_FAILED"],
    ] as const) {
      const res = await deleteWith(headers, [...chunks]);
      expect([res.status, code(res)], name).toEqual([status, expected]);
    }
  });

  it("a form just over 64 KB is refused and one under it is read; the server keeps serving", async () => {
    const over = await flood(`${server.baseUrl}/hub/login`, hubHeaders(), 64 * 1024 + 1, "token=");
    expect(over.status).toBe(413);
    const under = await fetch(`${server.baseUrl}/hub/login`, { method: "POST", headers: hubHeaders(), body: `token=${"a".repeat(4000)}` });
    expect(under.status).toBe(400);
    expect(await under.text()).toContain("sign-in link is not valid");
    expect((await fetch(`${server.baseUrl}/health`)).status).toBe(200);
  }, 60_000);
});

describe("the hub's form reader", () => {
  let t: HubTest;
  let b: HubBrowser;
  beforeAll(async () => {
    t = await createHubTest();
    b = t.browser();
    await b.signIn((await t.h.createUser()).userId);
  });
  afterAll(() => t.h.close());

  const post = (path: string, body: BodyInit, headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" }) =>
    b.request(path, { method: "POST", body, headers });
  const keyNames = async () => [...(await b.page("/hub/keys")).html.matchAll(/data-label="Name">([^<]*)</g)].map((m) => m[1]);

  it("refuses a repeated field, whichever it is, with a 400 page", async () => {
    const before = await keyNames();
    for (const body of [`_csrf=${b.csrf}&name=one&name=two`, `_csrf=${b.csrf}&_csrf=${b.csrf}&name=one`]) {
      const res = await post("/hub/keys", body);
      expect(res.status, body).toBe(400);
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(await res.text()).toContain("a field twice");
    }
    expect(await keyNames()).toEqual(before);
  });

  it("refuses an over-long field, too many fields and a NUL with 400", async () => {
    const cases = [
      `_csrf=${b.csrf}&name=${"x".repeat(5000)}`,
      `_csrf=${b.csrf}&${"n".repeat(100)}=1&name=a`,
      `_csrf=${b.csrf}&name=a&${Array.from({ length: 40 }, (_, i) => `f${i}=1`).join("&")}`,
      `_csrf=${b.csrf}&name=a%00b`,
    ];
    for (const body of cases) expect((await post("/hub/keys", body)).status, body.slice(0, 80)).toBe(400);
  });

  it("refuses a body that is not a urlencoded form with 415, and bytes that are not UTF-8 with 400", async () => {
    const multipart = new FormData();
    multipart.set("_csrf", b.csrf!);
    multipart.set("name", "multi");
    expect((await b.request("/hub/keys", { method: "POST", body: multipart })).status).toBe(415);
    expect((await post("/hub/keys", JSON.stringify({ _csrf: b.csrf, name: "json" }), { "content-type": "application/json" })).status).toBe(415);
    expect((await post("/hub/keys", `_csrf=${b.csrf}&name=x`, { "content-type": "application/x-www-form-urlencoded; charset=iso-8859-1" })).status).toBe(415);
    const latin1 = Buffer.concat([Buffer.from(`_csrf=${b.csrf}&name=`), Buffer.from([0xe9, 0xff])]);
    expect((await post("/hub/keys", latin1)).status).toBe(400);
  });

  it("refuses a form over 64 KB with 413, declared or not, signed in or not", async () => {
    const big = `_csrf=${b.csrf}&name=${"y".repeat(70 * 1024)}`;
    expect((await post("/hub/keys", big)).status).toBe(413);
    expect((await post("/hub/keys", big, { "content-type": "application/x-www-form-urlencoded", "content-length": String(big.length) })).status).toBe(413);
    const login = await t.browser().post("/hub/login", { token: "z".repeat(70 * 1024) }, { csrf: null });
    expect(login.res.status).toBe(413);
  });

  it("still takes the hub's own forms", async () => {
    const res = await b.post("/hub/keys", { name: "reader-ok", ...ALL_SCOPES });
    expect(res.res.status).toBe(303);
    expect(await keyNames()).toContain("reader-ok");
    expect((await post("/hub/keys", `_csrf=${encodeURIComponent(b.csrf!)}&name=caf%C3%A9+%E2%9C%93&${new URLSearchParams(ALL_SCOPES)}`)).status).toBe(303);
    expect(await keyNames()).toContain("café ✓");
  });
});
