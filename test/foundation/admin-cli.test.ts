/**
 * The admin CLI (`npm run admin`, functions/node/admin.ts) run as a user runs it, with a temporary DATA_DIR:
 * every failure is a sentence on stderr with no raw error code and no stack, exit 2 for a usage error (an
 * option the CLI does not know or without its value, no command) and 1 for anything else, an unknown command
 * included. Also: each start of `npm start` says where the first user's key file is.
 * The CLI's successful paths (through a running server, and on the database alone): embedded-server.test.ts.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openNodeDb } from "../../db/node";
import { ensureFirstUser } from "../../functions/node/embedded";

const ROOT = new URL("../..", import.meta.url).pathname;
const TSX = join(ROOT, "node_modules/.bin/tsx");

let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "admin-cli-"));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

/** The CLI's exit code and output, run from the repository with DATA_DIR (and `env`) set. */
function admin(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      TSX,
      ["functions/node/admin.ts", ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: "", DATA_DIR: dataDir, ...env }, timeout: 30_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

/** A sentence: no raw error code (ENOENT, EISDIR, ...), no stack frame, no JSON parser's wording. */
function expectSentence(stderr: string): void {
  expect(stderr).not.toMatch(/\bE[A-Z]{3,}\b|^\s+at |Unexpected token|ERR_/m);
  expect(stderr.split("\n")[0]).toMatch(/^[A-Z/].*[.]$/);
}

describe("usage errors: a sentence and the usage", () => {
  it.each([
    ["no command (exit 2)", [], "No command given.", 2],
    ["an unknown option (exit 2)", ["key:list", "--mail", "a@b.c"], "Unknown option --mail.", 2],
    ["an option without its value (exit 2)", ["key:list", "--email"], "Option --email needs a value.", 2],
    ["an unknown command (exit 1)", ["key:lsit", "--email", "a@b.c"], 'Unknown command "key:lsit".', 1],
  ] as const)("%s", async (_, args, sentence, exitCode) => {
    const { code, stdout, stderr } = await admin([...args]);
    expect(code).toBe(exitCode);
    expect(stdout).toBe("");
    expect(stderr.split("\n")[0]).toBe(sentence);
    expect(stderr).toContain("usage: npm run admin -- <command>");
    expectSentence(stderr);
  });
});

describe("no server and no database", () => {
  it("names the missing database and how to make it, exit 1", async () => {
    const { code, stderr } = await admin(["key:list", "--email", "a@b.c"], { DATA_DIR: join(dataDir, "nothing-here") });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(
      `No database at ${join(dataDir, "nothing-here", "pg")}: start the server once with \`npm start\` (it creates it), or set DATABASE_URL.`,
    );
  });

  it("says the database of DATABASE_URL cannot be reached, without its credentials", async () => {
    const { code, stderr } = await admin(["key:list", "--email", "a@b.c"], { DATABASE_URL: "postgres://someone:secret-pass@127.0.0.1:9/none" });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe("Cannot open the database of DATABASE_URL (127.0.0.1:9): nothing listens there.");
    expect(stderr).not.toContain("secret-pass");
  });
});

describe("DATA_DIR/admin.json that does not lead to a server", () => {
  const file = () => join(dataDir, "admin.json");
  afterAll(() => rm(file(), { recursive: true, force: true }));

  it("one that is not the server's JSON: remove it if no server runs, exit 1", async () => {
    await writeFile(file(), "{not json");
    const { code, stderr } = await admin(["key:list", "--email", "a@b.c"]);
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(
      `${file()} is not what a running server writes: if no server runs with this DATA_DIR, remove the file and run the command again.`,
    );
    expectSentence(stderr);
  });

  it("one that cannot be read (a directory here), exit 1", async () => {
    await rm(file(), { force: true });
    await mkdir(file());
    const { code, stderr } = await admin(["key:list", "--email", "a@b.c"]);
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(`Cannot read ${file()} (it is a directory): if no server runs with this DATA_DIR, remove it and run the command again.`);
    await rm(file(), { recursive: true });
  });

  it("a live process that does not answer: the CLI leaves the database alone, exit 1", async () => {
    // This test's own process is alive; nothing listens on port 9.
    await writeFile(file(), JSON.stringify({ url: "http://127.0.0.1:9", token: "t", pid: process.pid }));
    const { code, stderr } = await admin(["key:list", "--email", "a@b.c"]);
    expect(code).toBe(1);
    expect(stderr).toContain(`(pid ${process.pid}) does not answer at http://127.0.0.1:9: wait until it has started, or stop it and run the command again`);
    expect(stderr).toContain(`If no server runs, remove ${file()}.`);
    expectSentence(stderr);
  });

  it("a server that refuses the command's token, exit 1", async () => {
    const server: Server = createServer((_req, res) => res.writeHead(401, { "content-type": "application/json" }).end('{"error":{"code":"UNAUTHORIZED"}}'));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    try {
      await writeFile(file(), JSON.stringify({ url: `http://127.0.0.1:${port}`, token: "t", pid: process.pid }));
      const { code, stderr } = await admin(["key:list", "--email", "a@b.c"]);
      expect(code).toBe(1);
      expect(stderr.trim()).toBe(
        `The server at http://127.0.0.1:${port} refused the admin command (HTTP 401): restart it, so that it writes ${file()} afresh, and run the command again.`,
      );
    } finally {
      server.close();
    }
  });

  it("one left by a server that is gone: the CLI opens the database itself", async () => {
    await writeFile(file(), JSON.stringify({ url: "http://127.0.0.1:9", token: "t", pid: 2 ** 22 + 1 }));
    const { code, stderr } = await admin(["key:list", "--email", "a@b.c"]);
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(`No database at ${join(dataDir, "pg")}: start the server once with \`npm start\` (it creates it), or set DATABASE_URL.`);
  });
});

describe("the first user's key file", () => {
  it("is named at the first start and at every later one, as a KEY= line for a shell", async () => {
    const handle = await openNodeDb({});
    const dir = join(dataDir, "with space");
    await mkdir(dir);
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    try {
      await ensureFirstUser(handle.db, dir);
      expect(log.mock.calls.flat().join("\n")).toContain(`also in ${join(dir, "dev-api-key")}`);
      log.mockClear();
      await ensureFirstUser(handle.db, dir);
      expect(log.mock.calls.flat().join("\n")).toContain(`KEY=$(cat '${join(dir, "dev-api-key")}')`);
    } finally {
      log.mockRestore();
      await handle.close();
    }
  }, 60_000);
});
