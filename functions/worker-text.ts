/**
 * Area B's text engine on the Worker: HarfBuzz as a compiled module (wrangler imports .wasm that way); the
 * fonts as ArrayBuffers (the Data rule in wrangler.toml), imported on first use so an isolate that draws no
 * text never evaluates them, and a host that lists the bundle's modules by hand (.js and .wasm) still starts
 * the Worker. No resvg: text does not need it, and its wasm would add 936 KiB gzipped (rasterizeSvg then
 * refuses; add `resvg: () => import("@cf-wasm/resvg")` to use it). Used by functions/worker.ts and by the
 * text engine's workerd test.
 *
 * @example
 * configureWorkerTextEngine();
 */
import harfbuzzWasm from "harfbuzzjs/dist/harfbuzz.wasm";
import { configureTextEngine } from "../src/photo/text/engine";

export function configureWorkerTextEngine(): void {
  configureTextEngine({
    harfbuzzWasm,
    fonts: {
      "sans-400": () => import("@expo-google-fonts/noto-sans/400Regular/NotoSans_400Regular.ttf").then((m) => m.default),
      "sans-700": () => import("@expo-google-fonts/noto-sans/700Bold/NotoSans_700Bold.ttf").then((m) => m.default),
      "devanagari-400": () => import("@expo-google-fonts/noto-sans-devanagari/400Regular/NotoSansDevanagari_400Regular.ttf").then((m) => m.default),
      "devanagari-700": () => import("@expo-google-fonts/noto-sans-devanagari/700Bold/NotoSansDevanagari_700Bold.ttf").then((m) => m.default),
    },
  });
}
