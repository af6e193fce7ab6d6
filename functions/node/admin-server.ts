/**
 * While `npm start` holds the embedded database, the admin CLI talks to it through a loopback-only route
 * guarded by a random token that the server writes to DATA_DIR/admin.json (mode 600) at start.
 */
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Hono } from "hono";
import type { AppEnv } from "../../src/http/env";
import { constantTimeEqual, randomBase62 } from "../../src/lib/encoding";
import { ApiError } from "../../src/http/errors";
import { AdminError, runAdminCommand, type AdminRequest } from "./admin-commands";

export const ADMIN_FILE = "admin.json";

export function createAdminRoutes(token: string): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  router.post("/_admin/command", async (c) => {
    const given = c.req.header("x-admin-token") ?? "";
    if (!constantTimeEqual(given, token)) throw new ApiError("UNAUTHORIZED", "Admin token required.");
    const req = (await c.req.json()) as AdminRequest;
    try {
      return c.json(await runAdminCommand(c.get("services").db, req, c.get("services")));
    } catch (err) {
      if (err instanceof AdminError) return c.json({ ok: false, output: err.message }, 400);
      throw err;
    }
  });
  return router;
}

export async function writeAdminFile(dataDir: string, info: { url: string }): Promise<{ token: string; remove(): Promise<void> }> {
  const token = randomBase62(40);
  const path = join(dataDir, ADMIN_FILE);
  await writeFile(path, JSON.stringify({ url: info.url, token, pid: process.pid }), { mode: 0o600 });
  return { token, remove: () => rm(path, { force: true }) };
}
