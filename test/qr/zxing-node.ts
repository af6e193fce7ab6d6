/**
 * Test and bench wiring for ZXing's wasm on Node: the same call functions/node.ts makes at start-up.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { configureZxing } from "../../src/qr/zxing-loader";

export const ZXING_READER_WASM = createRequire(import.meta.url).resolve("zxing-wasm/reader/zxing_reader.wasm");

/** Points the loader at the package's reader .wasm (read lazily, compiled on first decode). */
export function useNodeZxing(): void {
  configureZxing(() => readFile(ZXING_READER_WASM));
}
