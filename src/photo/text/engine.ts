/**
 * Where the text engine's binaries come from: HarfBuzz's wasm and the four shipped fonts (Noto Sans and Noto
 * Sans Devanagari, regular and bold; TTF, OFL). As with ZXing (src/qr/zxing-loader.ts), src/ never reads files:
 * the entry point hands each binary over once, in the form its runtime allows, and nothing is loaded until
 * the first text is drawn.
 *
 * - Worker (functions/worker.ts): wrangler imports `.wasm` as a compiled `WebAssembly.Module` and, with the
 *   `Data` rule for `**\/*.ttf` in wrangler.toml, each font as an `ArrayBuffer` (a dynamic import, on first use).
 * - Node (functions/node/services.ts, tests): functions that read the files the packages ship.
 *
 * Text is rasterised by our own code (./raster.ts). resvg is needed only by rasterizeSvg, and is optional
 * for that reason: an entry point that wants SVG rendering passes `resvg: () => import("@cf-wasm/resvg")`
 * (the package picks its node or workerd build through its export conditions, as `@cf-wasm/photon` does).
 * The import lives in the entry point so that a Worker without it does not bundle resvg's 936 KiB (gzipped).
 *
 * Parsed fonts are immutable and cached per process/isolate; they hold no request data.
 *
 * @example
 * configureTextEngine({ harfbuzzWasm: hbModule, fonts: { "sans-400": sans400, "sans-700": sans700, "devanagari-400": deva400, "devanagari-700": deva700 } });
 * const { sans, devanagari } = await loadFonts(700);
 */
import { parseGlyf, type GlyphOutlines } from "./glyf";
import { instantiateHarfBuzz, type HarfBuzz, type HbFont, type WasmBinary } from "./harfbuzz";

export type FontKey = "sans-400" | "sans-700" | "devanagari-400" | "devanagari-700";
export type FontBytes = ArrayBuffer | Uint8Array;
/** A value, or a function that produces it on first use (so start-up does not pay for it). */
export type Source<T> = T | (() => T | Promise<T>);

export interface TextEngineSources {
  /** harfbuzzjs's `dist/harfbuzz.wasm`: a compiled Module (workerd) or its bytes (Node). */
  harfbuzzWasm: Source<WasmBinary>;
  fonts: Record<FontKey, Source<FontBytes>>;
  /** Optional, for rasterizeSvg only: `() => import("@cf-wasm/resvg")`. */
  resvg?: () => Promise<ResvgPackage>;
}

export type ResvgPackage = typeof import("@cf-wasm/resvg");

export interface LoadedFont {
  key: FontKey;
  hb: HbFont;
  outlines: GlyphOutlines;
}

let sources: TextEngineSources | null = null;
let harfbuzz: Promise<HarfBuzz> | null = null;
let resvg: Promise<ResvgPackage> | null = null;
const fonts = new Map<FontKey, Promise<LoadedFont>>();

/**
 * Sets where HarfBuzz and the fonts come from. Call once at start-up; calling again replaces them (tests).
 *
 * @example
 * configureTextEngine({ harfbuzzWasm: () => readFile(hbPath), fonts: { "sans-400": () => readFile(p1), ... } });
 */
export function configureTextEngine(next: TextEngineSources): void {
  sources = next;
  harfbuzz = null;
  resvg = null;
  fonts.clear();
}

/**
 * Whether an entry point has called configureTextEngine.
 *
 * @example
 * if (!isTextEngineConfigured()) configureTextEngine(nodeTextEngineSources());
 */
export function isTextEngineConfigured(): boolean {
  return sources !== null;
}

function configured(): TextEngineSources {
  if (!sources) {
    throw new Error("the text engine is not configured: the entry point must call configureTextEngine() (src/photo/text/engine.ts) before drawing text");
  }
  return sources;
}

async function resolve<T>(source: Source<T>): Promise<T> {
  return typeof source === "function" ? (source as () => T | Promise<T>)() : source;
}

/** Caches a promise but forgets it when it fails, so a transient read error is not remembered forever. */
function remember<T>(promise: Promise<T>, forget: () => void): Promise<T> {
  promise.catch(forget);
  return promise;
}

/**
 * The HarfBuzz instance, created on first use.
 *
 * @example
 * const hb = await loadHarfBuzz();
 */
export function loadHarfBuzz(): Promise<HarfBuzz> {
  if (!harfbuzz) {
    const wasm = configured().harfbuzzWasm;
    harfbuzz = remember(resolve(wasm).then(instantiateHarfBuzz), () => (harfbuzz = null));
  }
  return harfbuzz;
}

/**
 * The resvg package, imported on first use; throws when the entry point did not provide it.
 *
 * @example
 * const { Resvg } = await loadResvg();
 */
export function loadResvg(): Promise<ResvgPackage> {
  if (!resvg) {
    const load = configured().resvg;
    if (!load) {
      return Promise.reject(
        new Error('SVG rasterising is not configured on this runtime: pass resvg: () => import("@cf-wasm/resvg") to configureTextEngine()'),
      );
    }
    resvg = remember(load(), () => (resvg = null));
  }
  return resvg;
}

function loadFont(key: FontKey): Promise<LoadedFont> {
  let font = fonts.get(key);
  if (!font) {
    const source = configured().fonts[key];
    font = remember(
      (async () => {
        const raw = await resolve(source);
        const bytes = raw instanceof Uint8Array ? raw : new Uint8Array(raw);
        const hb = await loadHarfBuzz();
        return { key, hb: hb.loadFont(bytes), outlines: parseGlyf(bytes) };
      })(),
      () => fonts.delete(key),
    );
    fonts.set(key, font);
  }
  return font;
}

/**
 * The Latin (Noto Sans) and Devanagari fonts of one weight, with HarfBuzz ready.
 *
 * @example
 * const { hb, sans, devanagari } = await loadFonts(400);
 */
export async function loadFonts(weight: 400 | 700): Promise<{ hb: HarfBuzz; sans: LoadedFont; devanagari: LoadedFont }> {
  const [hb, sans, devanagari] = await Promise.all([loadHarfBuzz(), loadFont(`sans-${weight}`), loadFont(`devanagari-${weight}`)]);
  return { hb, sans, devanagari };
}
