/**
 * The Node admin route answers loopback peers only, judged by the socket's own remote address (never by a
 * header), and answers a body that is not a JSON command with 400. `/files/<key>` answers 404, without an
 * error in the log, to a path whose percent-escapes do not decode.
 *
 * Tests may only reach the server over loopback, so the peer rule is driven through `app.request()` with the
 * `incoming` binding @hono/node-server passes (its socket's `remoteAddress`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdminRoutes, isLocalPeer, isLoopbackPeer } from "../../functions/node/admin-server";
import { createTestApp, type TestApp } from "../helpers/harness";

const TOKEN = "admin-test-token";
const logLines: string[] = [];
let h: TestApp;
let email: string;

beforeAll(async () => {
  h = await createTestApp({ logLines, extras: { mount: (app) => app.route("/", createAdminRoutes(TOKEN)) } });
  email = (await h.createUser()).email;
});
afterAll(async () => h?.close());

const peer = (remoteAddress: string | undefined) => ({ incoming: { socket: { remoteAddress } } });

function admin(body: string, remoteAddress: string | undefined, headers: Record<string, string> = {}) {
  return h.app.request(
    "/_admin/command",
    { method: "POST", headers: { "content-type": "application/json", "x-admin-token": TOKEN, ...headers }, body },
    peer(remoteAddress),
  );
}

const errorLines = () => logLines.filter((line) => JSON.parse(line).level === "error");

describe("the admin route's peer rule", () => {
  it("judges loopback by the socket's address: 127/8, ::1 and IPv4-mapped loopback only", () => {
    for (const address of ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1"]) expect(isLoopbackPeer(address), address).toBe(true);
    for (const address of [
      "203.0.113.7",
      "10.0.0.1",
      "192.168.1.2",
      "::ffff:203.0.113.7",
      "2001:db8::1",
      "fe80::1",
      "0.0.0.0",
      "::",
      "",
      "localhost",
      "127.0.0.1.evil",
      undefined,
    ]) {
      expect(isLoopbackPeer(address), String(address)).toBe(false);
    }
  });

  it("takes a peer whose address is the socket's own (the CLI beside a server bound to one address), no other", () => {
    expect(isLocalPeer("192.0.2.10", "192.0.2.10")).toBe(true);
    expect(isLocalPeer("::ffff:192.0.2.10", "192.0.2.10")).toBe(true);
    expect(isLocalPeer("192.0.2.11", "192.0.2.10")).toBe(false);
    expect(isLocalPeer("0.0.0.0", "0.0.0.0")).toBe(false);
    expect(isLocalPeer("203.0.113.7", undefined)).toBe(false);
  });

  it("refuses a peer that is not loopback, token or not, whatever the headers claim", async () => {
    const command = JSON.stringify({ command: "key:list", email });
    for (const address of ["203.0.113.7", "::ffff:203.0.113.7", "2001:db8::1"]) {
      const res = await admin(command, address, { "x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1", host: "127.0.0.1" });
      expect([403, 404], address).toContain(res.status);
      expect(await res.text()).not.toContain("prefix\t");
    }
  });

  it("refuses a request with no socket to judge (an in-process call)", async () => {
    const res = await h.app.request("/_admin/command", {
      method: "POST",
      headers: { "content-type": "application/json", "x-admin-token": TOKEN },
      body: JSON.stringify({ command: "key:list", email }),
    });
    expect([403, 404]).toContain(res.status);
  });

  it("still serves a loopback peer with the token", async () => {
    for (const address of ["127.0.0.1", "::1", "::ffff:127.0.0.1"]) {
      const res = await admin(JSON.stringify({ command: "key:list", email }), address);
      expect(res.status, address).toBe(200);
      const body = (await res.json()) as { ok: boolean; output: string };
      expect(body.ok).toBe(true);
      expect(body.output).toContain("prefix\t");
    }
    const wrong = await admin(JSON.stringify({ command: "key:list", email }), "127.0.0.1", { "x-admin-token": "nope" });
    expect(wrong.status).toBe(401);
  });

  it("answers 400, not 500, to a body that is not a JSON command", async () => {
    const before = errorLines().length;
    for (const body of [
      "{",
      "not json",
      "",
      "null",
      "[]",
      "42",
      '"key:list"',
      '{"command":5}',
      '{"command":"key:list","email":{"a":1}}',
      '{"command":"key:revoke","prefix":7}',
    ]) {
      const res = await admin(body, "127.0.0.1");
      expect(res.status, body).toBe(400);
      expect(((await res.json()) as { ok: boolean }).ok, body).toBe(false);
    }
    expect(errorLines().slice(before)).toEqual([]);
  });
});

describe("/files with escapes that do not decode", () => {
  it("answers 404 and logs no error", async () => {
    const before = errorLines().length;
    for (const path of ["/files/%ZZ", "/files/%E0%A4", "/files/%", "/files/a/%C0%AF", "/files/%ED%A0%80", "/files/x%"]) {
      const res = await h.app.request(path);
      expect(res.status, path).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");
    }
    expect(errorLines().slice(before)).toEqual([]);
  });

  it("still serves a stored file by its encoded key", async () => {
    await h.services.storage.put("media/a b.png", new Uint8Array([1, 2, 3]), "image/png");
    const res = await h.app.request("/files/media/a%20b.png");
    expect(res.status).toBe(200);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(new Uint8Array([1, 2, 3]));
  });
});
