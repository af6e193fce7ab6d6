/**
 * A worker thread's code as one plain-JavaScript module (esbuild, npm packages left as imports), written once
 * per content under node_modules/.cache so the packages resolve from it: a thread then starts without a
 * TypeScript loader, several times cheaper to start, and without tsx's memory (some 50 MB for the delivery
 * thread). Null when bundling fails; the thread's entry then loads the source through tsx.
 *
 * @example
 * const bundle = await threadBundle(new URL("./heavy-thread.ts", import.meta.url));
 * new Worker(new URL("./heavy-thread.mjs", import.meta.url), { workerData: { bundle }, execArgv: [] });
 */
import { createHash } from "node:crypto";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { basename } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const bundles = new Map<string, Promise<string | null>>();
/** The last build asked for: builds run one after the other, since each stops esbuild's service when done. */
let previous: Promise<unknown> = Promise.resolve();

/** The file URL of the bundle of `entry` (a .ts module), made once per process; null if bundling failed. */
export function threadBundle(entry: URL): Promise<string | null> {
  let bundle = bundles.get(entry.href);
  if (!bundle) {
    bundle = previous.then(() => build(entry));
    bundles.set(entry.href, bundle);
    previous = bundle;
  }
  return bundle;
}

async function build(entry: URL): Promise<string | null> {
  try {
    const esbuild = await import("esbuild");
    const out = await esbuild.build({
      entryPoints: [fileURLToPath(entry)],
      bundle: true,
      platform: "node",
      format: "esm",
      packages: "external",
      write: false,
      logLevel: "silent",
    });
    await esbuild.stop(); // its service process would otherwise stay for the server's lifetime
    const text = out.outputFiles[0]!.text;
    const dir = fileURLToPath(new URL("../../node_modules/.cache/shopkit/", import.meta.url));
    const name = basename(fileURLToPath(entry)).replace(/\.ts$/, "");
    const file = `${dir}${name}-${createHash("sha256").update(text).digest("hex").slice(0, 16)}.mjs`;
    await mkdir(dir, { recursive: true });
    const temporary = `${file}.${process.pid}.tmp`;
    await writeFile(temporary, text);
    await rename(temporary, file); // whole or not at all, whichever process gets there first
    return pathToFileURL(file).href;
  } catch {
    return null;
  }
}
