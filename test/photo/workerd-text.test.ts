/**
 * Area B's text engine in workerd: a small Worker (workerd-text/entry.ts) built by wrangler like the real one
 * (harfbuzz.wasm as a compiled module, fonts through a Data rule, no resvg), run in Miniflare. Shaping and
 * pixels must match what Node produces, and the bundle's size is reported.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestWorker, type TestWorker } from "../helpers/workerd";
import { configureTextEngine, renderTextBlock, shapeText, type FontKey } from "../../src/photo/text";

const resolve = createRequire(import.meta.url).resolve;
let worker: TestWorker;

function fnv1a(bytes: Uint8Array): string {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h.toString(16);
}

beforeAll(async () => {
  const fonts: Record<FontKey, string> = {
    "sans-400": "@expo-google-fonts/noto-sans/400Regular/NotoSans_400Regular.ttf",
    "sans-700": "@expo-google-fonts/noto-sans/700Bold/NotoSans_700Bold.ttf",
    "devanagari-400": "@expo-google-fonts/noto-sans-devanagari/400Regular/NotoSansDevanagari_400Regular.ttf",
    "devanagari-700": "@expo-google-fonts/noto-sans-devanagari/700Bold/NotoSansDevanagari_700Bold.ttf",
  };
  configureTextEngine({
    harfbuzzWasm: () => readFile(resolve("harfbuzzjs/dist/harfbuzz.wasm")),
    fonts: Object.fromEntries(Object.entries(fonts).map(([key, path]) => [key, () => readFile(resolve(path))])) as Record<FontKey, () => Promise<Buffer>>,
  });

  worker = await startTestWorker({ name: "text-workerd-test", main: "test/photo/workerd-text/entry.ts" });
}, 180_000);

afterAll(() => worker?.dispose());

interface WorkerResult {
  gids: number[];
  clusters: number[];
  lines: string[];
  fontSize: number;
  size: [number, number];
  hash: string;
  ink: number;
  covered: { x: number; y: number; width: number; height: number };
}

describe("text engine in workerd", () => {
  it("shapes and renders Devanagari and Latin exactly as in Node", async () => {
    for (const [text, weight] of [
      ["विचार कि हिंदी", 400],
      ["दिवाली सेल ₹499 — श्री क्षत्रिय", 700],
    ] as const) {
      const res = await worker.mf.dispatchFetch(`http://text.test/?text=${encodeURIComponent(text)}&weight=${weight}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as WorkerResult;
      const node = await renderTextBlock(text, { maxWidth: 600, maxHeight: 300, fontSize: 64 }, { color: [0, 0, 0], weight, align: "center" });
      const shaped = await shapeText(text, weight);
      expect(body.gids).toEqual(shaped.glyphs.map((g) => g.gid));
      expect(body.gids).not.toContain(0);
      expect(body.lines).toEqual(node.lines);
      expect(body.size).toEqual([node.image.width, node.image.height]);
      expect(body.hash).toBe(fnv1a(node.image.data));
      expect(body.ink).toBeGreaterThan(500);
      expect(body.covered.x + body.covered.width).toBeLessThanOrEqual(400);
    }
  });

  it("reports the bundle's size", async () => {
    const files = await readdir(worker.outDir);
    const sizes = await Promise.all(
      files
        .filter((f) => /\.(js|wasm|ttf)$/.test(f))
        .map(async (f) => ({ f, raw: (await stat(join(worker.outDir, f))).size, gz: gzipSync(await readFile(join(worker.outDir, f))).length })),
    );
    const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
    for (const { f, raw, gz } of sizes) console.log(`  ${f}: ${kib(raw)} (${kib(gz)} gz)`);
    const total = sizes.reduce((sum, s) => sum + s.gz, 0);
    console.log(`text engine worker: ${kib(total)} gzipped in all`);
    expect(sizes.filter((s) => s.f.endsWith(".ttf"))).toHaveLength(4);
    // Text does not need resvg, so a Worker that does not configure it does not carry its 2.4 MB wasm.
    expect(sizes.filter((s) => /resvg/.test(s.f))).toEqual([]);
    expect(total).toBeLessThan(10 * 1024 * 1024);
  });
});
