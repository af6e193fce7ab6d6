/**
 * `npm run admin -- <command> [--email E] [--name N] [--prefix P] [--scopes S] [--origins O]`
 * Goes through the running server when one holds DATA_DIR (DATA_DIR/admin.json), else opens the database.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { parseConfig, ConfigError, type Config } from "../../src/config";
import { openNodeDb } from "../../db/node";
import { ADMIN_USAGE, AdminError, runAdminCommand, type AdminRequest, type AdminResult } from "./admin-commands";
import { ADMIN_FILE } from "./admin-server";

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { email: { type: "string" }, name: { type: "string" }, prefix: { type: "string" }, scopes: { type: "string" }, origins: { type: "string" }, help: { type: "boolean", short: "h" } },
  });
  const command = positionals[0];
  if (!command || values.help) {
    console.error(ADMIN_USAGE);
    return command ? 0 : 2;
  }
  const config = parseConfig(process.env);
  const request: AdminRequest = { command, email: values.email, name: values.name, prefix: values.prefix, scopes: values.scopes, origins: values.origins };

  const viaServer = config.databaseUrl ? null : await sendToRunningServer(config.dataDir, request);
  const result = viaServer ?? (await runDirect(config, join(config.dataDir, "pg"), request));
  (result.ok ? console.log : console.error)(result.output);
  return result.ok ? 0 : 1;
}

async function sendToRunningServer(dataDir: string, request: AdminRequest): Promise<AdminResult | null> {
  let info: { url: string; token: string; pid: number };
  try {
    info = JSON.parse(await readFile(join(dataDir, ADMIN_FILE), "utf8"));
  } catch {
    return null;
  }
  if (!isAlive(info.pid)) return null;
  const res = await fetch(`${info.url}/_admin/command`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-admin-token": info.token },
    body: JSON.stringify(request),
  }).catch(() => null);
  if (!res) return null;
  return (await res.json()) as AdminResult;
}

async function runDirect(config: Config, pgliteDir: string, request: AdminRequest): Promise<AdminResult> {
  const handle = await openNodeDb({ url: config.databaseUrl, pgliteDir });
  try {
    return await runAdminCommand(handle.db, request, { config, clock: { now: () => new Date() } });
  } catch (err) {
    if (err instanceof AdminError) return { ok: false, output: err.message };
    throw err;
  } finally {
    await handle.close();
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof ConfigError ? err.message : `admin failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
