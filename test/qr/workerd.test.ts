/**
 * Area A in workerd: a small Worker (workerd/entry.ts) built by wrangler like the real one, run in Miniflare.
 * Renders codes (plain and with a logo), decodes them with ZXing (wasm imported as a module) and checks the
 * Shift_JIS fallback, all inside the Workers runtime.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const ROOT = new URL("../..", import.meta.url).pathname;
let dir: string;
let mf: Miniflare;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "qr-workerd-"));
  const rootToml = await readFile(join(ROOT, "wrangler.toml"), "utf8");
  const date = /compatibility_date\s*=\s*"([^"]+)"/.exec(rootToml)![1]!;
  await writeFile(join(dir, "wrangler.toml"), `name = "qr-workerd-test"\nmain = "${join(ROOT, "test/qr/workerd/entry.ts")}"\ncompatibility_date = "${date}"\n`);
  await run(join(ROOT, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", join(dir, "out"), "--config", join(dir, "wrangler.toml")], {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
  });
  mf = new Miniflare({
    modules: true,
    scriptPath: join(dir, "out", "entry.js"),
    modulesRoot: join(dir, "out"),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: date,
  });
  await mf.ready;
}, 180_000);

afterAll(async () => {
  await mf?.dispose().catch(() => {});
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("area A in workerd", () => {
  it("renders and decodes a plain code and a logo code", async () => {
    for (const query of ["?text=https%3A%2F%2Fexample.com%2Fw%C3%BCrker", "?text=logo%20code&logo"]) {
      const res = await mf.dispatchFetch(`http://qr.test/${query}`);
      const body = (await res.json()) as { text: string; bytes: number; ms: number; shiftJis: string };
      expect(res.status).toBe(200);
      expect(body.text).toBe(new URLSearchParams(query.slice(1)).get("text"));
      expect(body.shiftJis).toBe("日本");
      console.log(`workerd ${query}: ${body.bytes} B PNG, render + decode ${body.ms} ms`);
    }
  });

  it("bundles the reader-only ZXing build", async () => {
    const files = await readdir(join(dir, "out"));
    const wasm = files.filter((f) => f.endsWith(".wasm"));
    const sizes = await Promise.all(wasm.map(async (f) => [f, gzipSync(await readFile(join(dir, "out", f))).length] as const));
    console.log(`wasm modules: ${sizes.map(([f, n]) => `${f} ${(n / 1024).toFixed(0)} KiB gz`).join(", ")}`);
    const zxing = sizes.filter(([f]) => /zxing/.test(f));
    expect(zxing).toHaveLength(1);
    expect(zxing[0]![0]).toMatch(/reader/);
  });
});
