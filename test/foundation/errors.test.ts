import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Readable } from "node:stream";
import { serve, type ServerType } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import type { AppEnv } from "../../src/http/env";
import { readJson } from "../../src/http/json";
import { requireAuth } from "../../src/http/auth";
import { createTestApp, type TestApp } from "../helpers/harness";

/** A JSON route and a crashing route, mounted the way an area mounts its router. */
function probeRoutes() {
  const r = new Hono<AppEnv>();
  r.use("*", requireAuth("social"));
  r.post("/echo", async (c) => c.json({ data: await readJson(c) }));
  r.get("/boom", () => {
    throw new Error("database password is hunter2");
  });
  return r;
}

let h: TestApp;
let key: string;
const logLines: string[] = [];

beforeAll(async () => {
  h = await createTestApp({ logLines, extras: { mount: (app) => app.route("/api/probe", probeRoutes()) } });
  key = (await h.createUser()).apiKey;
});
afterAll(() => h.close());

async function envelope(res: Response) {
  const body = (await res.json()) as { error: { code: string; message: string; details?: unknown[]; requestId?: string } };
  expect(Object.keys(body)).toEqual(["error"]);
  expect(typeof body.error.message).toBe("string");
  expect(body.error.message.length).toBeGreaterThan(5);
  return body.error;
}

describe("error envelope", () => {
  it("answers JSON bodies normally", async () => {
    const res = await h.app.request("/api/probe/echo", { method: "POST", headers: h.json(key), body: '{"a":1}' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { a: 1 } });
  });

  it("415 for a body that is not JSON", async () => {
    const res = await h.app.request("/api/probe/echo", { method: "POST", headers: h.auth(key, { "Content-Type": "text/plain" }), body: "a=1" });
    expect(res.status).toBe(415);
    expect((await envelope(res)).code).toBe("UNSUPPORTED_MEDIA_TYPE");
  });

  it("415 when the content type is missing", async () => {
    const res = await h.app.request("/api/probe/echo", { method: "POST", headers: h.auth(key), body: "{}" });
    expect(res.status).toBe(415);
  });

  it.each(["{", '{"a":', "nope", "", "[1,]"])("400 INVALID_JSON for %j", async (body) => {
    const res = await h.app.request("/api/probe/echo", { method: "POST", headers: h.json(key), body });
    expect(res.status).toBe(400);
    expect((await envelope(res)).code).toBe("INVALID_JSON");
  });

  it("400 INVALID_JSON for a body that is not UTF-8 (a lone 0xFF, a cut sequence), through both JSON readers", async () => {
    const bad = (inside: number[]) => Uint8Array.from([...Buffer.from('{"caption":"a'), ...inside, ...Buffer.from('b"}')]);
    for (const inside of [[0xff], [0xe0, 0xa4], [0xc3]]) {
      const echo = await h.app.request("/api/probe/echo", { method: "POST", headers: h.json(key), body: bad(inside) });
      expect(echo.status, `echo ${inside}`).toBe(400);
      expect((await envelope(echo)).message).toMatch(/not UTF-8/);
      // POST /posts reads its body through the inline-image reader.
      const posts = await h.app.request("/api/v1/social/posts", {
        method: "POST",
        headers: { ...h.json(key), "Idempotency-Key": `utf8-${inside.join("-")}` },
        body: bad(inside),
      });
      expect(posts.status, `posts ${inside}`).toBe(400);
      expect((await envelope(posts)).code).toBe("INVALID_JSON");
    }
    // Valid UTF-8 beyond ASCII is text like any other.
    const fine = await h.app.request("/api/probe/echo", { method: "POST", headers: h.json(key), body: Buffer.from('{"a":"café ✓"}') });
    expect(fine.status).toBe(200);
  });

  it("404 in the envelope for an unknown route", async () => {
    const res = await h.app.request("/no/such/route");
    expect(res.status).toBe(404);
    expect((await envelope(res)).code).toBe("NOT_FOUND");
  });

  it("405 with Allow for a method a documented path does not take; OPTIONS there is 204 with Allow", async () => {
    const cases: Array<[method: string, path: string, allow: string]> = [
      ["PUT", "/api/qr-code/generate", "POST"],
      ["DELETE", "/api/qr-code/generate/sk_test/hello", "GET, HEAD"],
      ["POST", "/api/v1/social/posts/0b6c4a39-4f5e-4c53-9a42-5d2b2f1d9e10", "GET, HEAD, DELETE"],
      ["PUT", "/api/v1/webhooks/0b6c4a39-4f5e-4c53-9a42-5d2b2f1d9e10", "GET, HEAD, PATCH, DELETE"],
      ["DELETE", "/api/image/credits", "GET, HEAD"],
    ];
    for (const [method, path, allow] of cases) {
      const res = await h.app.request(path, { method, headers: h.auth(key) });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get("allow")).toBe(allow);
      const error = await envelope(res);
      expect(error.code).toBe("METHOD_NOT_ALLOWED");
      expect(error.message.startsWith(`This path takes ${allow}, not ${method}.`)).toBe(true);
      const options = await h.app.request(path, { method: "OPTIONS" });
      expect(options.status).toBe(204);
      expect(options.headers.get("allow")).toBe(allow);
    }
    // Outside /api too: the front door's OPTIONS names its methods.
    const front = await h.app.request("/", { method: "OPTIONS" });
    expect([front.status, front.headers.get("allow")]).toEqual([204, "GET, HEAD"]);
    // A path no operation has stays 404, whatever the method; so does an operation's path with a slash added.
    expect((await h.app.request("/api/qr-code/generat", { method: "PUT", headers: h.auth(key) })).status).toBe(404);
    for (const [method, path] of [
      ["GET", "/api/image/credits/"],
      ["POST", "/api/qr-code/generate/"],
    ] as const) {
      const res = await h.app.request(path, { method, headers: h.auth(key) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect((await envelope(res)).code).toBe("NOT_FOUND");
    }
    // A QR code asked for with GET and no key or text: the 405 says how a GET is made.
    const get = await h.app.request("/api/qr-code/generate");
    expect(get.status).toBe(405);
    expect((await envelope(get)).message).toMatch(/^This path takes POST, not GET\. A QR code GET is \/api\/qr-code\/generate\/\{apiKey\}\/\{text\}/);
  });

  it("401 in the envelope without credentials", async () => {
    const res = await h.app.request("/api/v1/social/accounts");
    expect(res.status).toBe(401);
    expect((await envelope(res)).code).toBe("UNAUTHORIZED");
    expect(res.headers.get("www-authenticate")).toContain("Bearer");
  });

  it("500 INTERNAL with the request id, no internals, and a log line", async () => {
    const res = await h.app.request("/api/probe/boom", { headers: h.auth(key) });
    expect(res.status).toBe(500);
    const requestId = res.headers.get("x-request-id");
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const error = await envelope(res);
    expect(error.code).toBe("INTERNAL");
    expect(error.requestId).toBe(requestId);
    expect(error.message).toContain(requestId!);
    expect(JSON.stringify(error)).not.toContain("hunter2");
    expect(logLines.some((l) => l.includes("hunter2") && l.includes(requestId!))).toBe(true);
  });

  it("every response carries a request id", async () => {
    const res = await h.app.request("/health");
    expect(res.headers.get("x-request-id")).toBeTruthy();
  });

  it("413 for a body over 20 MB with a Content-Length", async () => {
    const big = "x".repeat(20 * 1024 * 1024 + 10);
    const res = await h.app.request("/api/probe/echo", { method: "POST", headers: h.json(key), body: JSON.stringify({ big }) });
    expect(res.status).toBe(413);
    expect((await envelope(res)).code).toBe("PAYLOAD_TOO_LARGE");
  });
});

describe("over a real socket", () => {
  let server: ServerType;
  let base: string;
  beforeAll(async () => {
    server = serve({ fetch: h.app.fetch, port: 0, hostname: "127.0.0.1" });
    await new Promise((r) => server.once("listening", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it("413 for a chunked body over 20 MB, stopped before it is buffered whole", async () => {
    let sent = 0;
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    const total = 40; // MB offered; the server must answer before taking all of it
    const stream = new Readable({
      read() {
        if (sent >= total) return this.push(null);
        sent++;
        this.push(chunk);
      },
    });
    const res = await fetch(`${base}/api/probe/echo`, {
      method: "POST",
      headers: h.json(key),
      body: Readable.toWeb(stream) as ReadableStream,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(sent).toBeLessThan(total);
  });

  it("a chunked JSON body under the limit works", async () => {
    const stream = Readable.from([Buffer.from('{"hello":'), Buffer.from('"world"}')]);
    const res = await fetch(`${base}/api/probe/echo`, {
      method: "POST",
      headers: h.json(key),
      body: Readable.toWeb(stream) as ReadableStream,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { hello: "world" } });
  });
});
