/**
 * Honest on the wire (issue 14): a reply given before the request body is read (401, 404, 413, 415, 429)
 * reaches a keep-alive client with its status and headers, and the next request on the same client works.
 * Runs against the real embedded server (`functions/node.ts`) with an undici pool of one connection. Each
 * reply is also checked against the server's OpenAPI document (helpers/conformance.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Readable } from "node:stream";
import { Pool } from "undici";
import { answerChecks } from "../helpers/conformance";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";

let server: ServerProcess;
let pool: Pool;
let connects = 0;

beforeAll(async () => {
  server = await startServerProcess({ env: { RATE_LIMIT_SOCIAL_WRITE: "1" } });
  pool = new Pool(server.baseUrl, { connections: 1, pipelining: 1, keepAliveTimeout: 30_000 });
  pool.on("connect", () => connects++);
});
afterAll(async () => {
  await pool?.close();
  await server?.dispose();
});

const LARGE = Buffer.alloc(400 * 1024, 0x61);

const conforms = answerChecks(fetch);

async function send(path: string, init: { headers?: Record<string, string>; body?: Buffer | Readable } = {}) {
  const res = await pool.request({ path, method: "POST", headers: init.headers ?? {}, body: init.body ?? LARGE });
  const text = await res.body.text();
  const header = (name: string) => [res.headers[name.toLowerCase()] ?? null].flat()[0] ?? null;
  await conforms("POST", new URL(path, server.baseUrl), { status: res.statusCode, headers: { get: header } }, { text: async () => text });
  return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : null };
}

/** The follow-up on the same pool: a cheap request that must answer 200. */
async function healthy() {
  const res = await pool.request({ path: "/health", method: "GET" });
  await res.body.text();
  return res.statusCode;
}

const auth = () => ({ authorization: `Bearer ${server.apiKey}` });

describe("early replies on a keep-alive connection", () => {
  it("401 without a key: status, WWW-Authenticate and the envelope arrive; the connection is reused", async () => {
    const before = connects;
    for (let i = 0; i < 3; i++) {
      const res = await send("/api/v1/social/posts", { headers: { "content-type": "application/json" } });
      expect(res.status).toBe(401);
      expect(res.headers["www-authenticate"]).toContain("Bearer");
      expect(res.body.error.code).toBe("UNAUTHORIZED");
      expect(await healthy()).toBe(200);
    }
    expect(connects - before).toBeLessThanOrEqual(1);
  });

  it("401 with an invalid key", async () => {
    const res = await send("/api/v1/social/posts", { headers: { authorization: "Bearer not-a-key", "content-type": "application/json" } });
    expect(res.status).toBe(401);
    expect(await healthy()).toBe(200);
  });

  it("404 for an unknown route", async () => {
    const before = connects;
    const res = await send("/api/v1/nowhere", { headers: auth() });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
    expect(await healthy()).toBe(200);
    expect(connects - before).toBeLessThanOrEqual(1);
  });

  it("415 for a body that is not JSON", async () => {
    const before = connects;
    const res = await send("/api/v1/social/accounts/x/select", { headers: { ...auth(), "content-type": "text/plain" } });
    expect([404, 415]).toContain(res.status);
    const res2 = await send("/api/qr-code/decode", { headers: { ...auth(), "content-type": "text/plain" } });
    expect(res2.status).toBe(415);
    expect(res2.body.error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    expect(await healthy()).toBe(200);
    expect(connects - before).toBeLessThanOrEqual(1);
  });

  it("413 for a body over 20 MB: the reply arrives (with Connection: close) and the next request works", async () => {
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    async function* body() {
      for (let i = 0; i < 21; i++) yield chunk;
    }
    const declared = await send("/api/qr-code/decode", {
      headers: { ...auth(), "content-type": "application/json", "content-length": String(21 * chunk.length) },
      body: Readable.from(body()),
    });
    expect(declared.status).toBe(413);
    expect(declared.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(declared.headers.connection).toBe("close");
    expect(await healthy()).toBe(200);
    const chunked = await send("/api/qr-code/decode", { headers: { ...auth(), "content-type": "application/json" }, body: Readable.from(body()) });
    expect(chunked.status).toBe(413);
    expect(await healthy()).toBe(200);
  });

  it("429 with Retry-After once the write limit (1/min) is spent", async () => {
    const headers = { ...auth(), "content-type": "text/plain" };
    const first = await send("/api/v1/social/posts", { headers });
    expect([415, 429]).toContain(first.status);
    const before = connects;
    for (let i = 0; i < 5; i++) {
      const res = await send("/api/v1/social/posts", { headers });
      expect(res.status).toBe(429);
      expect(Number(res.headers["retry-after"])).toBeGreaterThan(0);
      expect(res.body.error.code).toBe("RATE_LIMITED");
      expect(await healthy()).toBe(200);
    }
    expect(connects - before).toBeLessThanOrEqual(1);
  });
});
