/**
 * Photon (@cf-wasm/photon, Rust `image` compiled to WebAssembly) as the Node build's decoder of last resort
 * and its small PNGs' faster inflate: what the package.json import `#photon` resolves to everywhere but in
 * workerd (there it is src/images/photon-none.ts, so the Worker's bundle holds no photon at all). It lives with the Node
 * entry's code because it reads the package's file (node:fs).
 *
 * The module is compiled from the package's own `.wasm` file on the first decode. The package's Node entry
 * compiles it when imported, from a copy inlined in its JavaScript as Base64 and decoded by a callback per
 * character, a cost every heavy-work thread's start and the server's would pay; compiling the file is
 * several times cheaper, and paid only by a process that decodes with photon.
 *
 * Every PhotonImage lives in WebAssembly memory and must be freed; nothing here hands one out.
 */
import { initPhoton, PhotonImage } from "@cf-wasm/photon/others";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { PhotonCodec } from "../../src/images/types";

function ready(): void {
  if (initPhoton.ready) return;
  const file = createRequire(import.meta.url).resolve("@cf-wasm/photon/photon.wasm");
  initPhoton.sync({ module: new WebAssembly.Module(readFileSync(file)) });
}

/**
 * Photon's image class, set up, for code that uses photon itself (the benchmarks' peers): the package's own
 * Node entry would refuse to set up the module once this file has.
 */
export function photonImage(): typeof PhotonImage {
  ready();
  return PhotonImage;
}

export const photon: PhotonCodec | null = {
  decode(bytes) {
    ready();
    const img = PhotonImage.new_from_byteslice(bytes);
    try {
      return { width: img.get_width(), height: img.get_height(), data: img.get_raw_pixels() };
    } finally {
      img.free();
    }
  },
};
