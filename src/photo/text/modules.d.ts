// Module shapes that wrangler gives these imports in the Worker (functions/worker.ts): `.wasm` files become
// compiled WebAssembly.Modules, and `.ttf` files ArrayBuffers through the Data rule in wrangler.toml.
declare module "harfbuzzjs/dist/harfbuzz.wasm" {
  const module: WebAssembly.Module;
  export default module;
}

declare module "*.ttf" {
  const data: ArrayBuffer;
  export default data;
}
