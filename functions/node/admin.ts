/**
 * `npm run admin -- <command> [--email E] [--name N] [--prefix P] [--scopes S] [--origins O] [--add N] [--note T]`
 * Goes through the running server when one holds DATA_DIR (DATA_DIR/admin.json), else opens the database.
 * Every failure is one or two sentences on stderr, never a stack: exit 2 for a usage error (no command, an
 * unknown option, an option without its value), 1 for anything else. An unknown command exits 1 with the
 * usage, as it does when the running server is the one that refuses it.
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { parseConfig, ConfigError, type Config } from "../../src/config";
import { openNodeDb } from "../../db/node";
import { ADMIN_COMMANDS, ADMIN_USAGE, AdminError, runAdminCommand, type AdminRequest, type AdminResult } from "./admin-commands";
import { ADMIN_FILE } from "./admin-server";

/** A failure the CLI reports as its message alone, with `exitCode`. */
class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

const usageError = (sentence: string, exitCode = 2) => new CliError(`${sentence}\n${ADMIN_USAGE}`, exitCode);

async function main(): Promise<number> {
  const { positionals, values } = parseCommandLine();
  const command = positionals[0];
  if (values.help) {
    console.error(ADMIN_USAGE);
    return 0;
  }
  if (!command) throw usageError("No command given.");
  if (!(ADMIN_COMMANDS as readonly string[]).includes(command)) throw usageError(`Unknown command "${command}".`, 1);
  const config = parseConfig(process.env);
  const request: AdminRequest = {
    command,
    email: values.email,
    name: values.name,
    prefix: values.prefix,
    scopes: values.scopes,
    origins: values.origins,
    add: values.add,
    note: values.note,
  };

  const viaServer = config.databaseUrl ? null : await sendToRunningServer(config.dataDir, request);
  const result = viaServer ?? (await runDirect(config, join(config.dataDir, "pg"), request));
  (result.ok ? console.log : console.error)(result.output);
  return result.ok ? 0 : 1;
}

function parseCommandLine() {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        email: { type: "string" },
        name: { type: "string" },
        prefix: { type: "string" },
        scopes: { type: "string" },
        origins: { type: "string" },
        add: { type: "string" },
        note: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    const option = /'(-[^' ]*)/.exec(message)?.[1];
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw usageError(`Unknown option ${option ?? message}.`);
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") throw usageError(option ? `Option ${option} needs a value.` : `${message}.`);
    throw usageError(`${message.replace(/\.?$/, ".")}`);
  }
}

/**
 * The command's result from the server that holds DATA_DIR; null when none does (no admin.json, or one left
 * by a server that is gone). A server that is alive but does not answer is an error: opening its embedded
 * database beside it is not safe.
 */
async function sendToRunningServer(dataDir: string, request: AdminRequest): Promise<AdminResult | null> {
  const path = resolve(dataDir, ADMIN_FILE);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return null;
    const advice =
      code === "EACCES" || code === "EPERM"
        ? "run the command as the user that runs the server"
        : "if no server runs with this DATA_DIR, remove it and run the command again";
    throw new CliError(`Cannot read ${path} (${reason(err)}): ${advice}.`);
  }
  let info: { url: string; token: string; pid: number };
  try {
    info = JSON.parse(text);
    if (typeof info.url !== "string" || typeof info.token !== "string" || !Number.isInteger(info.pid)) throw new Error("fields missing");
  } catch {
    throw new CliError(`${path} is not what a running server writes: if no server runs with this DATA_DIR, remove the file and run the command again.`);
  }
  if (!isAlive(info.pid)) return null;
  const res = await fetch(`${info.url}/_admin/command`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-admin-token": info.token },
    body: JSON.stringify(request),
  }).catch(() => null);
  const notAnswering = `The server that holds ${resolve(dataDir)} (pid ${info.pid}) does not answer at ${info.url}`;
  if (!res)
    throw new CliError(
      `${notAnswering}: wait until it has started, or stop it and run the command again (the CLI then opens the database itself). If no server runs, remove ${path}.`,
    );
  const body = (await res.json().catch(() => null)) as Partial<AdminResult> | null;
  if (typeof body?.ok === "boolean" && typeof body.output === "string") return body as AdminResult;
  throw new CliError(
    `The server at ${info.url} refused the admin command (HTTP ${res.status}): restart it, so that it writes ${path} afresh, and run the command again.`,
  );
}

async function runDirect(config: Config, pgliteDir: string, request: AdminRequest): Promise<AdminResult> {
  if (!config.databaseUrl && !existsSync(pgliteDir)) {
    throw new CliError(`No database at ${resolve(pgliteDir)}: start the server once with \`npm start\` (it creates it), or set DATABASE_URL.`);
  }
  const where = config.databaseUrl ? `the database of DATABASE_URL (${hostOf(config.databaseUrl)})` : `the database at ${resolve(pgliteDir)}`;
  const handle = await openNodeDb({ url: config.databaseUrl, pgliteDir }).catch((err: unknown) => {
    throw new CliError(`Cannot open ${where}: ${reason(err)}.`);
  });
  try {
    return await runAdminCommand(handle.db, request, { config, clock: { now: () => new Date() } });
  } catch (err) {
    if (err instanceof AdminError) return { ok: false, output: err.message };
    throw new CliError(`The command failed on ${where}: ${reason(err)}.`);
  } finally {
    await handle.close().catch(() => {});
  }
}

/** The host and port of a postgres:// URL, without its credentials. */
function hostOf(url: string): string {
  try {
    const u = new URL(url);
    return u.port ? `${u.hostname}:${u.port}` : u.hostname;
  } catch {
    return "not a URL";
  }
}

/** What went wrong, in words: the innermost cause's (a driver's error wraps the socket's), by its code where known. */
function reason(err: unknown): string {
  let inner = err as (Error & { code?: string; cause?: unknown }) | undefined;
  while (inner?.cause instanceof Error) inner = inner.cause as Error & { code?: string; cause?: unknown };
  const words: Record<string, string> = {
    ECONNREFUSED: "nothing listens there",
    ENOTFOUND: "the host name is not known",
    ETIMEDOUT: "the connection timed out",
    EACCES: "permission denied",
    EPERM: "permission denied",
    EISDIR: "it is a directory",
  };
  const text = (inner?.code && words[inner.code]) || (inner instanceof Error ? inner.message : String(err));
  return text.split("\n")[0]!.replace(/\.$/, "");
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists, under another user.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof CliError) {
      console.error(err.message);
      process.exit(err.exitCode);
    }
    console.error(err instanceof ConfigError ? err.message : `The admin command failed: ${reason(err)}.`);
    process.exit(1);
  },
);
