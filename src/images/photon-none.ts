/**
 * The Worker build's `#photon` (package.json imports, condition "workerd"): no photon. Its WebAssembly
 * memory grows with each decode and never shrinks, which a 128 MB isolate cannot afford, so the edge
 * decodes with our decoders only (`DecodeLimits.photon` is off there too) and its bundle carries none of
 * photon's WebAssembly.
 */
import type { PhotonCodec } from "./types";

export const photon: PhotonCodec | null = null;
