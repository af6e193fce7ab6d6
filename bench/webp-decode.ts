/**
 * Decoding a 2 MP WebP (the most the edge decodes whole) to RGBA: our TypeScript decoder (webp-decode.ts)
 * beside photon (Rust `image-webp` in WebAssembly, which decoded WebP before) and sharp (libwebp, native),
 * lossy and lossless, medians of several runs in one process, and the ratios. Photon's WebAssembly memory
 * grows for its decodes and is never given back; ours is ordinary garbage-collected memory (the workerd
 * memory suite measures that side).
 *
 * Run alone: `npx tsx bench/webp-decode.ts`; or with the others: `npm run bench -- webp`.
 */
import { pathToFileURL } from "node:url";
import sharp from "sharp";
import { photonImage } from "../functions/node/photon";
import { decodeWebp } from "../src/images/webp-decode";
import { photoPixels } from "../test/helpers/images";
import { medianMs } from "./timing";

const PhotonImage = photonImage();

const WIDTH = 1732;
const HEIGHT = 1154;

export async function benchWebpDecode(): Promise<void> {
  const raw = await photoPixels(WIDTH, HEIGHT);
  const image = () => sharp(raw, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } });
  const inputs: Array<[string, Uint8Array]> = [
    ["lossy, quality 85", new Uint8Array(await image().webp({ quality: 85 }).toBuffer())],
    ["lossless", new Uint8Array(await image().webp({ lossless: true }).toBuffer())],
  ];
  for (const [label, webp] of inputs) {
    const ours = await medianMs(() => decodeWebp(webp));
    const photon = await medianMs(() => {
      const img = PhotonImage.new_from_byteslice(webp);
      img.get_raw_pixels();
      img.free();
    });
    const peer = await medianMs(() => sharp(webp).raw().toBuffer());
    console.log(`webp-decode: ${WIDTH}x${HEIGHT} ${label}, ${(webp.length / 1e3).toFixed(0)} KB, to RGBA; median of 7`);
    console.log(`  ours (TypeScript)        ${ours.toFixed(1).padStart(7)} ms`);
    console.log(`  photon (WebAssembly)     ${photon.toFixed(1).padStart(7)} ms   ours/photon ${(ours / photon).toFixed(2)}x`);
    console.log(`  sharp (libwebp, native)  ${peer.toFixed(1).padStart(7)} ms   ours/sharp  ${(ours / peer).toFixed(2)}x`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) await benchWebpDecode();
