/**
 * The real embedded server as a child process (`npm start`: scripts/start.mjs, which builds dist/ when it is
 * stale and runs dist/node.js in a child process of its own; or an entry run with tsx, e.g. `dev/edge.ts` for
 * the Worker in workerd) on a temporary DATA_DIR and a free loopback port, for end-to-end and crash tests:
 * start, kill (any signal), restart on the same data.
 *
 * @example
 * const server = await startServerProcess();
 * const res = await fetch(`${server.baseUrl}/health`);
 * await server.kill("SIGKILL"); await server.restart();
 * await server.dispose();
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const ROOT = new URL("../..", import.meta.url).pathname;
const TSX = join(ROOT, "node_modules/.bin/tsx");
const START = join(ROOT, "scripts/start.mjs");
const ADMIN = join(ROOT, "scripts/admin.mjs");

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

export interface ServerProcess {
  baseUrl: string;
  dataDir: string;
  /** The first user's key, written by the server to DATA_DIR/dev-api-key on its first start. */
  apiKey: string;
  output(): string;
  /** Runs `npm run admin -- <args>` on the server's DATA_DIR; resolves to its standard output. */
  admin(...args: string[]): Promise<string>;
  /** Resident memory of the server's processes (the start script or tsx wrapper, and the app), in bytes, from /proc. */
  rss(): Promise<number>;
  /** Threads of the server's processes, from /proc (the heavy-work threads come and go). */
  threads(): Promise<number>;
  /** Sends the signal and waits for the process to exit. */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  /** Starts again on the same DATA_DIR and port. */
  restart(): Promise<void>;
  /** Kills if running and removes DATA_DIR. */
  dispose(): Promise<void>;
}

export interface ServerProcessOptions {
  env?: Record<string, string>;
  /** An entry to run with tsx, e.g. dev/edge.ts (npm run dev:edge); without one, `npm start`'s script. */
  entry?: string;
  /** How long to wait for the "listening" line; default 60 s. */
  startTimeoutMs?: number;
  /** The port to listen on (default: a free one); a test that must name the URL in PUBLIC_BASE_URL picks it first. */
  port?: number;
  /** Flags for node itself, e.g. ["--cpu-prof"] for a profile of the server (a benchmark's BENCH_NODE_ARGS). */
  nodeArgs?: string[];
}

export async function startServerProcess(options: ServerProcessOptions = {}): Promise<ServerProcess> {
  const dataDir = await mkdtemp(join(tmpdir(), "shopkit-e2e-"));
  const port = options.port ?? (await freePort());
  let out = "";
  let child: ChildProcess;
  let exited: Promise<number | null>;

  const launch = async () => {
    out = "";
    // The start script hands the node flags after it to the server's own process.
    const [command, args] = options.entry ? [TSX, [...(options.nodeArgs ?? []), options.entry]] : [process.execPath, [START, ...(options.nodeArgs ?? [])]];
    child = spawn(command, args, {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info", ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
      // Own process group: the start script and tsx run the app in a child process, and a SIGKILL must reach
      // that one too.
      detached: true,
    });
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
    const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
    while (!out.includes('"listening"')) {
      if (Date.now() > deadline || child.exitCode !== null || child.signalCode !== null) {
        // Nothing is left running, and DATA_DIR goes too: the caller gets no handle to dispose of.
        if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGKILL");
        await groupGone(child.pid!);
        await rm(dataDir, { recursive: true, force: true });
        throw new Error(`server did not start:\n${out}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  await launch();
  const apiKey = (await readFile(join(dataDir, "dev-api-key"), "utf8")).trim();
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    dataDir,
    apiKey,
    output: () => out,
    rss: () => groupStatus(child.pid!, /VmRSS:\s+(\d+) kB/, 1024),
    threads: () => groupStatus(child.pid!, /Threads:\s+(\d+)/, 1),
    async admin(...args) {
      const { stdout } = await promisify(execFile)(process.execPath, [ADMIN, ...args], { cwd: ROOT, env: { ...process.env, DATA_DIR: dataDir } });
      return stdout;
    },
    async kill(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) {
        if (signal === "SIGKILL") process.kill(-child.pid!, "SIGKILL");
        else child.kill(signal);
      }
      const code = await exited;
      await groupGone(child.pid!);
      return code;
    },
    restart: launch,
    async dispose() {
      if (child.exitCode === null && child.signalCode === null) {
        process.kill(-child.pid!, "SIGKILL");
        await exited;
      }
      await groupGone(child.pid!);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Waits until no process of the group is left (the app process may outlive its wrapper briefly). */
async function groupGone(pgid: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** A number from /proc/<pid>/status (times `unit`), summed over every process in group `pgid` (Linux). */
async function groupStatus(pgid: number, field: RegExp, unit: number): Promise<number> {
  let total = 0;
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, "utf8");
      // Fields after the command name (which may hold spaces): state ppid pgrp ...
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) !== pgid) continue;
      const status = await readFile(`/proc/${entry}/status`, "utf8");
      const value = field.exec(status);
      if (value) total += Number(value[1]) * unit;
    } catch {
      // the process ended while we looked
    }
  }
  return total;
}
