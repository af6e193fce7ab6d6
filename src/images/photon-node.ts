/**
 * Photon (@cf-wasm/photon, Rust `image` compiled to WebAssembly) as the Node build's decoder of last resort
 * and its small PNGs' faster inflate: what the package.json import `#photon` resolves to everywhere but in
 * workerd (there it is photon-none.ts, so the Worker's bundle holds no photon at all).
 *
 * Every PhotonImage lives in WebAssembly memory and must be freed; nothing here hands one out.
 */
import { PhotonImage } from "@cf-wasm/photon";
import type { PhotonCodec } from "./types";

export const photon: PhotonCodec | null = {
  decode(bytes) {
    const img = PhotonImage.new_from_byteslice(bytes);
    try {
      return { width: img.get_width(), height: img.get_height(), data: img.get_raw_pixels() };
    } finally {
      img.free();
    }
  },
};
