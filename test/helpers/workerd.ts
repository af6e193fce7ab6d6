/**
 * A small test Worker built by wrangler like the real one (same compatibility date, the real wrangler.toml's
 * module rules, e.g. fonts as Data) and run in Miniflare: for tests that check one part of src/ inside
 * workerd without the whole app.
 *
 * @example
 * const worker = await startTestWorker({ name: "qr-workerd-test", main: "test/qr/workerd/entry.ts" });
 * const res = await worker.mf.dispatchFetch("http://x.test/");
 * await worker.dispose();
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import { promisify } from "node:util";
import { Miniflare } from "miniflare";

const run = promisify(execFile);
export const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

export interface TestWorker {
  mf: Miniflare;
  /** The build output directory (entry.js and its wasm/ttf modules). */
  outDir: string;
  dispose(): Promise<void>;
}

export interface TestWorkerOptions {
  name: string;
  /** The entry module: a path relative to the repository root or absolute, or `{ source }` written to a temp file. */
  main: string | { source: string };
}

export async function startTestWorker(options: TestWorkerOptions): Promise<TestWorker> {
  const dir = await mkdtemp(join(tmpdir(), `${options.name}-`));
  try {
    const rootToml = await readFile(join(ROOT, "wrangler.toml"), "utf8");
    const date = /compatibility_date\s*=\s*"([^"]+)"/.exec(rootToml)![1]!;
    const rules = /\[\[rules\]\]\n(?:[^\n]+\n)+/.exec(rootToml)?.[0] ?? "";
    let main: string;
    if (typeof options.main === "string") {
      main = isAbsolute(options.main) ? options.main : join(ROOT, options.main);
    } else {
      main = join(dir, "entry.js");
      await writeFile(main, options.main.source);
    }
    await writeFile(join(dir, "wrangler.toml"), `name = "${options.name}"\nmain = "${main}"\ncompatibility_date = "${date}"\n\n${rules}`);
    const outDir = join(dir, "out");
    await run(join(ROOT, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", outDir, "--config", join(dir, "wrangler.toml")], {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
    });
    const mf = new Miniflare({
      modules: true,
      scriptPath: join(outDir, "entry.js"),
      modulesRoot: outDir,
      modulesRules: [
        { type: "CompiledWasm", include: ["**/*.wasm"] },
        { type: "Data", include: ["**/*.ttf"] },
      ],
      compatibilityDate: date,
    });
    await mf.ready;
    return {
      mf,
      outDir,
      async dispose() {
        await mf.dispose().catch(() => undefined);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
