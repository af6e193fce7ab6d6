/**
 * While `npm start` holds the embedded database, the admin CLI talks to it through a route guarded by a
 * random token that the server writes to DATA_DIR/admin.json (mode 600) at start. The route answers only
 * peers on loopback, judged by the connection's own remote address (headers such as X-Forwarded-For are
 * never consulted), so on a public listener it does not exist for anyone else; its body is at most 64 KB.
 */
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Hono, type MiddlewareHandler } from "hono";
import ipaddr from "ipaddr.js";
import type { AppEnv } from "../../src/http/env";
import { constantTimeEqual, randomBase62 } from "../../src/lib/encoding";
import { ApiError, renderError } from "../../src/http/errors";
import { declaredBodyLimit } from "../../src/http/body-limit";
import { AdminError, runAdminCommand, type AdminRequest } from "./admin-commands";

export const ADMIN_FILE = "admin.json";

/** The largest admin command body; commands are a few short strings. */
export const ADMIN_MAX_BODY_BYTES = 64 * 1024;

/**
 * Whether a socket's remote address is this machine's loopback: 127.0.0.0/8, ::1, or either written as an
 * IPv4-mapped IPv6 address (a dual-stack listener reports `::ffff:127.0.0.1`). Anything else, or no address, is not.
 */
export function isLoopbackPeer(address: string | undefined): boolean {
  if (!address || !ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address);
  return parsed.range() === "loopback";
}

/**
 * Whether the connection comes from this machine: a loopback peer, or a peer whose address is the socket's
 * own local address (the CLI beside a server bound to one non-loopback address connects from that address).
 */
export function isLocalPeer(remote: string | undefined, local: string | undefined): boolean {
  if (isLoopbackPeer(remote)) return true;
  if (!remote || !local || !ipaddr.isValid(remote) || !ipaddr.isValid(local)) return false;
  const r = ipaddr.process(remote);
  const l = ipaddr.process(local);
  return r.kind() === l.kind() && r.toString() === l.toString() && r.range() !== "unspecified";
}

/** The addresses of the connection @hono/node-server hands over as `incoming`; undefined in-process. */
function socketOf(env: unknown): { remote?: string; local?: string } {
  const socket = (env as { incoming?: { socket?: { remoteAddress?: unknown; localAddress?: unknown } } } | undefined)?.incoming?.socket;
  const text = (v: unknown) => (typeof v === "string" ? v : undefined);
  return { remote: text(socket?.remoteAddress), local: text(socket?.localAddress) };
}

/** A peer on another machine gets the app's plain 404, as if there were no such route. */
const loopbackOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { remote, local } = socketOf(c.env);
  if (!isLocalPeer(remote, local)) throw new ApiError("NOT_FOUND", "No route matches this method and path.");
  await next();
};

/** The command in a body: a JSON object whose fields are strings, `command` among them; null for anything else. */
function adminRequestOf(text: string): AdminRequest | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return null;
  if (!Object.values(value).every((field) => typeof field === "string")) return null;
  return typeof (value as { command?: unknown }).command === "string" ? (value as AdminRequest) : null;
}

export function createAdminRoutes(token: string): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  router.use("/_admin/*", loopbackOnly);
  router.use(
    "/_admin/*",
    declaredBodyLimit(ADMIN_MAX_BODY_BYTES, () => new ApiError("PAYLOAD_TOO_LARGE", "An admin command body is at most 64 KB.")),
  );
  router.post("/_admin/command", async (c) => {
    const given = c.req.header("x-admin-token") ?? "";
    if (!constantTimeEqual(given, token)) throw new ApiError("UNAUTHORIZED", "Admin token required.");
    const req = adminRequestOf(await c.req.text());
    if (!req) return c.json({ ok: false, output: 'the request body must be a JSON object of strings with a "command"' }, 400);
    try {
      return c.json(await runAdminCommand(c.get("services").db, req, c.get("services")));
    } catch (err) {
      if (err instanceof AdminError) return c.json({ ok: false, output: err.message }, 400);
      throw err;
    }
  });
  // The same envelope where the router is mounted on an app without the app's own onError (dev:edge).
  router.onError((err, c) => renderError(err, c, c.get("services")?.log));
  return router;
}

export async function writeAdminFile(dataDir: string, info: { url: string }): Promise<{ token: string; remove(): Promise<void> }> {
  const token = randomBase62(40);
  const path = join(dataDir, ADMIN_FILE);
  await writeFile(path, JSON.stringify({ url: info.url, token, pid: process.pid }), { mode: 0o600 });
  return { token, remove: () => rm(path, { force: true }) };
}
