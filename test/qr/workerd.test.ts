/**
 * Area A in workerd: a small Worker (workerd/entry.ts) built by wrangler like the real one, run in Miniflare.
 * Renders codes (plain and with a logo), decodes them with ZXing (wasm imported as a module) and checks the
 * Shift_JIS fallback, all inside the Workers runtime.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestWorker, type TestWorker } from "../helpers/workerd";

let worker: TestWorker;

beforeAll(async () => {
  worker = await startTestWorker({ name: "qr-workerd-test", main: "test/qr/workerd/entry.ts" });
}, 180_000);

afterAll(() => worker?.dispose());

describe("area A in workerd", () => {
  it("renders and decodes a plain code and a logo code", async () => {
    for (const query of ["?text=https%3A%2F%2Fexample.com%2Fw%C3%BCrker", "?text=logo%20code&logo"]) {
      const res = await worker.mf.dispatchFetch(`http://qr.test/${query}`);
      const body = (await res.json()) as { text: string; bytes: number; ms: number; shiftJis: string };
      expect(res.status).toBe(200);
      expect(body.text).toBe(new URLSearchParams(query.slice(1)).get("text"));
      expect(body.shiftJis).toBe("日本");
      console.log(`workerd ${query}: ${body.bytes} B PNG, render + decode ${body.ms} ms`);
    }
  });

  it("bundles the reader-only ZXing build", async () => {
    const files = await readdir(worker.outDir);
    const wasm = files.filter((f) => f.endsWith(".wasm"));
    const sizes = await Promise.all(wasm.map(async (f) => [f, gzipSync(await readFile(join(worker.outDir, f))).length] as const));
    console.log(`wasm modules: ${sizes.map(([f, n]) => `${f} ${(n / 1024).toFixed(0)} KiB gz`).join(", ")}`);
    const zxing = sizes.filter(([f]) => /zxing/.test(f));
    expect(zxing).toHaveLength(1);
    expect(zxing[0]![0]).toMatch(/reader/);
  });
});
