/**
 * `npm start`: the built Node server (dist/node.js), built first when dist/ is missing or older than any
 * source file (./build.mjs), so `npm install && npm start` works on a fresh clone. On a production install
 * without the dev dependencies (no esbuild) a stale dist/ runs as it is, with a warning.
 *
 * The server runs as a child process so that glibc's malloc settings are in its environment when it starts
 * (glibc reads them once, before any JavaScript runs); one the operator has set is kept:
 * - MALLOC_MMAP_THRESHOLD_: every block of 128 KiB or more (an image's buffers) is mapped on its own and goes
 *   back to the system when freed. Setting it (or MALLOC_TRIM_THRESHOLD_) also keeps glibc from raising the
 *   threshold to the largest block freed, which would leave tens of MB of freed image buffers in each arena.
 * - MALLOC_TRIM_THRESHOLD_: free memory above 128 KiB at the top of a heap goes back when freed.
 * - MALLOC_ARENA_MAX: the heavy-work threads share two arenas instead of one per thread, and a thread's
 *   arena outlives the thread.
 * Other systems (macOS, musl) ignore them.
 *
 * Arguments are node's own flags for the server, e.g. `npm start -- --inspect`. SIGINT, SIGTERM and SIGHUP
 * go on to the server, which stops gracefully; this process exits as the server does.
 *
 * @example
 * node scripts/start.mjs
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { constants } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DIST, buildIfStale } from "./build.mjs";

export const MALLOC_ENV = { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072", MALLOC_TRIM_THRESHOLD_: "131072" };

/** Builds dist/ if it is stale and can be built; exits when there is nothing to run. */
export async function ensureBuilt(entry) {
  try {
    await buildIfStale();
  } catch (err) {
    const noEsbuild = err?.code === "ERR_MODULE_NOT_FOUND" && String(err.message).includes("esbuild");
    if (noEsbuild && existsSync(join(DIST, entry))) {
      console.error(`dist/ is older than the sources and esbuild is not installed (npm install brings it): running dist/${entry} as it is.`);
      return;
    }
    console.error(
      noEsbuild
        ? `dist/${entry} is missing and esbuild is not installed: run npm install, then npm run build.`
        : `build failed${Array.isArray(err?.errors) ? " (esbuild's messages above)" : `: ${err instanceof Error ? err.message : String(err)}`}`,
    );
    process.exit(1);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await ensureBuilt("node.js");
  const env = { ...MALLOC_ENV, ...process.env };
  const server = spawn(process.execPath, [...process.argv.slice(2), join(DIST, "node.js")], { env, stdio: "inherit" });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => {
      // A terminal's Ctrl-C reaches the server itself (same process group), and a second SIGINT would force
      // its exit; any other signal goes on.
      if (signal !== "SIGINT" || !process.stdin.isTTY) server.kill(signal);
    });
  }
  server.on("exit", (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
}
