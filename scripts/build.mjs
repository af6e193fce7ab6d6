/**
 * The Node server's build (`npm run build`): esbuild bundles each entry below, npm packages left as imports
 * (they resolve from node_modules above dist/), into one plain-JavaScript module in dist/, so the server and
 * its worker threads start without a TypeScript loader; the database migrations are copied beside them (db/node.ts
 * finds them next to its module). The `#photon` import resolves as on Node (package.json "imports").
 *
 * Plain JavaScript, so `npm start` (scripts/start.mjs) runs it with no loader. Each output file is written
 * whole and then renamed into place, so a server or a test starting meanwhile reads one build or the other,
 * never half a file. dist/.build-stamp carries the time the build read its sources: the build is stale when
 * any source file is newer.
 *
 * @example
 * node scripts/build.mjs            # always builds
 * node scripts/build.mjs --if-stale # builds only when a source is newer than dist/
 * import { buildIfStale } from "./build.mjs"; await buildIfStale();
 */
import { copyFileSync, mkdirSync, readdirSync, renameSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const DIST = join(ROOT, "dist");

/** dist/<name>.js from each source. */
const ENTRIES = {
  node: "functions/node.ts",
  admin: "functions/node/admin.ts",
  "heavy-thread": "functions/node/heavy-thread.ts",
  "delivery-worker": "functions/node/delivery-worker.ts",
};
/** What the build reads: a file here newer than the stamp makes dist/ stale. */
const SOURCES = ["functions", "src", "db", "package.json", "scripts/build.mjs"];
const STAMP = join(DIST, ".build-stamp");

/** Whether dist/ is missing an output or older than any source file. */
export function isStale() {
  let built;
  try {
    built = statSync(STAMP).mtimeMs;
    for (const name of Object.keys(ENTRIES)) statSync(join(DIST, `${name}.js`));
  } catch {
    return true;
  }
  return SOURCES.some((source) => newerThan(join(ROOT, source), built));
}

function newerThan(path, time) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return false;
  if (!stat.isDirectory()) return stat.mtimeMs > time;
  if (stat.mtimeMs > time) return true; // a file removed or renamed
  return readdirSync(path).some((entry) => entry !== "node_modules" && newerThan(join(path, entry), time));
}

/** Builds dist/. Rejects with esbuild's messages when a source does not build. */
export async function build() {
  const started = new Date();
  const esbuild = await import("esbuild");
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, source]) => [name, join(ROOT, source)])),
    outdir: DIST,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    write: false,
    logLevel: "warning",
  });
  await esbuild.stop();
  mkdirSync(DIST, { recursive: true });
  for (const file of result.outputFiles) writeWhole(file.path, file.contents);
  copyTree(join(ROOT, "db/migrations"), join(DIST, "migrations"));
  writeWhole(STAMP, "");
  utimesSync(STAMP, started, started); // a source saved while the build ran makes it stale
}

/** Builds dist/ when it is stale; true when it built. */
export async function buildIfStale() {
  if (!isStale()) return false;
  await build();
  return true;
}

function writeWhole(path, contents) {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, path);
}

function copyTree(from, to) {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) {
      copyTree(source, target);
    } else {
      mkdirSync(to, { recursive: true });
      const temporary = `${target}.${process.pid}.tmp`;
      copyFileSync(source, temporary);
      renameSync(temporary, target);
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const onlyIfStale = process.argv.includes("--if-stale");
  try {
    if (onlyIfStale) await buildIfStale();
    else await build();
  } catch (err) {
    console.error(`build failed${Array.isArray(err?.errors) ? " (esbuild's messages above)" : `: ${err instanceof Error ? err.message : String(err)}`}`);
    process.exit(1);
  }
}
