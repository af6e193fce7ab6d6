/**
 * Where ZXing-C++'s WebAssembly comes from. zxing-wasm fetches its .wasm from a CDN unless told otherwise;
 * a server must not depend on a CDN at request time, and Workers may not compile WebAssembly from bytes at
 * all. So the entry point hands the binary over once, at start-up, in the form its runtime allows:
 *
 * - Worker (functions/worker.ts): wrangler imports `.wasm` files as compiled `WebAssembly.Module`s:
 *   `import zxingWasm from "zxing-wasm/reader/zxing_reader.wasm"; configureZxing(zxingWasm);`
 * - Node (functions/node.ts, tests, bench): read the file the package ships, lazily:
 *   `configureZxing(() => readFile(createRequire(import.meta.url).resolve("zxing-wasm/reader/zxing_reader.wasm")))`
 *
 * We use the reader-only build, much smaller than the full build with the writer: QR generation is ours,
 * ZXing only reads.
 *
 * @example
 * configureZxing(wasmModule);
 * const results = await readWithZxing(imageData, { formats: ["QRCode"] });
 */
import { prepareZXingModule, readBarcodes, type ReaderOptions, type ReadResult } from "zxing-wasm/reader";

export type ZxingWasmBinary = WebAssembly.Module | ArrayBuffer | Uint8Array;
/** The binary itself, or a function that produces it on first use (so start-up does not pay for it). */
export type ZxingWasmSource = ZxingWasmBinary | (() => ZxingWasmBinary | Promise<ZxingWasmBinary>);

let source: ZxingWasmSource | null = null;
let ready: Promise<void> | null = null;

/**
 * Sets where the ZXing wasm comes from. Call once at start-up; calling again replaces it (tests).
 *
 * @example
 * configureZxing(() => readFile(wasmPath));
 */
export function configureZxing(wasm: ZxingWasmSource): void {
  source = wasm;
  ready = null;
}

/**
 * Whether an entry point has called configureZxing.
 *
 * @example
 * if (!isZxingConfigured()) configureZxing(() => readFile(wasmPath));
 */
export function isZxingConfigured(): boolean {
  return source !== null;
}

async function instantiate(binary: ZxingWasmBinary, imports: WebAssembly.Imports): Promise<WebAssembly.Instance> {
  if (binary instanceof WebAssembly.Module) return WebAssembly.instantiate(binary, imports);
  const bytes = binary instanceof Uint8Array ? binary : new Uint8Array(binary);
  const { instance } = await WebAssembly.instantiate(bytes as Uint8Array<ArrayBuffer>, imports);
  return instance;
}

function prepare(): Promise<void> {
  if (ready) return ready;
  const wasm = source;
  if (!wasm) {
    return Promise.reject(new Error("ZXing wasm is not configured: the entry point must call configureZxing() (src/qr/zxing-loader.ts) before decoding"));
  }
  ready = (async () => {
    const binary = typeof wasm === "function" ? await wasm() : wasm;
    // Emscripten never settles its promise when instantiateWasm fails, so the failure races it.
    let fail!: (err: unknown) => void;
    const failed = new Promise<never>((_, reject) => (fail = reject));
    const module = prepareZXingModule({
      overrides: {
        instantiateWasm(imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance) => void) {
          instantiate(binary, imports).then(done, fail);
          return {};
        },
      },
      equalityFn: () => false,
      fireImmediately: true,
    });
    await Promise.race([module, failed]);
  })();
  ready.catch(() => {
    ready = null;
  });
  return ready;
}

/** Image input in the shape zxing-wasm reads (duck-typed ImageData: RGBA bytes). */
export interface ZxingImage {
  width: number;
  height: number;
  data: Uint8ClampedArray;
}

/**
 * Reads barcodes with ZXing-C++, instantiating the wasm on first use.
 *
 * @example
 * const [first] = await readWithZxing(image, { formats: ["QRCode"], tryHarder: true });
 */
export async function readWithZxing(image: ZxingImage, options: ReaderOptions): Promise<ReadResult[]> {
  await prepare();
  return readBarcodes(image as unknown as ImageData, options);
}
