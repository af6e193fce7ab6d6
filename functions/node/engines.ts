/**
 * The WASM and native pieces the image work needs on Node, configured once per thread (the request thread
 * and each heavy-work thread): ZXing's reader, the one-shot PNG deflater, Buffer's Base64 decoder, SHA-256, area B's
 * text engine and its scene PNGs' deflater.
 *
 * @example
 * configureNodeEngines(); // then a script, a bench or a worker thread can do what the server does
 */
import { createHash, createHmac } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { once } from "node:events";
import { createDeflate, deflateSync } from "node:zlib";
import { configurePngDeflate } from "../../src/images/codecs";
import { configureBase64Decoder, configureBase64Digits, configureSha256Hex } from "../../src/lib/encoding";
import { configureSceneDeflate } from "../../src/photo/local/png";
import { configureTextEngine, isTextEngineConfigured } from "../../src/photo/text/engine";
import { configureZxing } from "../../src/qr/zxing-loader";
import { configureHmacSha256 } from "../../src/webhooks/signing";

/**
 * Everything below. Safe to call more than once.
 *
 * @example
 * configureNodeEngines();
 */
export function configureNodeEngines(): void {
  // ZXing's reader .wasm comes from the package on disk, compiled on the first decode (never from a CDN).
  configureZxing(() => readFile(createRequire(import.meta.url).resolve("zxing-wasm/reader/zxing_reader.wasm")));
  // The QR codes' PNGs: Node's zlib in place of pako's port of it, same format, a fraction of the time.
  configurePngDeflate((data, level) => deflateSync(data, { level }));
  // Large clean Base64 (uploads): Buffer's decoder, several times the portable one's speed.
  configureBase64Decoder((text) => {
    const bytes = Buffer.from(text, "base64");
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  });
  // And a streamed upload's Base64 digits (Base64Stream), a request body's chunk at a time: Buffer skips
  // what is not a digit, so it wrote every byte only when every character was one; otherwise nothing is
  // taken and the portable loop decodes the chunk again, over the same bytes, and finds the error or the end.
  configureBase64Digits((src, start, end, out, at) => {
    const chars = (end - start) & ~3;
    const text = Buffer.from(src.buffer, src.byteOffset + start, chars).toString("latin1");
    const written = Buffer.from(out.buffer, out.byteOffset + at, out.length - at).write(text, "base64");
    return written === (chars / 4) * 3 ? chars : 0;
  });
  // SHA-256 (API key hashes, fingerprints): node:crypto's, synchronous, the same digest as WebCrypto's.
  configureSha256Hex((input) => createHash("sha256").update(input).digest("hex"));
  // Webhook signatures: node:crypto's HMAC, synchronous (WebCrypto's goes through the thread pool per message).
  configureHmacSha256((key, data) => createHmac("sha256", key).update(data).digest("base64"));
  configureNodePhoto();
}

/**
 * Area B on Node: the text engine (below) and the scene PNGs' deflater, zlib on the thread pool at level 3
 * (see src/photo/local/png.ts). Safe to call more than once.
 *
 * @example
 * configureNodePhoto(); // then a script or a bench can generate scenes as the server does
 */
export function configureNodePhoto(): void {
  configureNodeTextEngine();
  configureSceneDeflate(deflateBandsAtLevel3);
}

/** The scene's scanline bands through one zlib stream at level 3 (each write compressed on the thread pool). */
async function deflateBandsAtLevel3(bands: Iterable<Uint8Array>): Promise<Uint8Array> {
  const zlib = createDeflate({ level: 3 });
  const chunks: Buffer[] = [];
  zlib.on("data", (chunk: Buffer) => chunks.push(chunk));
  const ended = once(zlib, "end");
  ended.catch(() => {}); // a zlib error rejects the wait for "drain" below as well; it is thrown from there or here
  for (const band of bands) if (!zlib.write(band)) await once(zlib, "drain");
  zlib.end();
  await ended;
  return Buffer.concat(chunks);
}

/**
 * Area B's text engine on Node: HarfBuzz's wasm and the four Noto TTFs, read from the packages on the first
 * text drawn (once per process: a second harness keeps the fonts already parsed); resvg for rasterizeSvg,
 * imported on use. Safe to call more than once.
 *
 * @example
 * configureNodeTextEngine(); // then drawText(...) works in a script or a bench
 */
export function configureNodeTextEngine(): void {
  if (isTextEngineConfigured()) return;
  const resolvePackage = createRequire(import.meta.url).resolve;
  const packageFile = (path: string) => () => readFile(resolvePackage(path));
  configureTextEngine({
    harfbuzzWasm: packageFile("harfbuzzjs/dist/harfbuzz.wasm"),
    resvg: () => import("@cf-wasm/resvg"),
    fonts: {
      "sans-400": packageFile("@expo-google-fonts/noto-sans/400Regular/NotoSans_400Regular.ttf"),
      "sans-700": packageFile("@expo-google-fonts/noto-sans/700Bold/NotoSans_700Bold.ttf"),
      "devanagari-400": packageFile("@expo-google-fonts/noto-sans-devanagari/400Regular/NotoSansDevanagari_400Regular.ttf"),
      "devanagari-700": packageFile("@expo-google-fonts/noto-sans-devanagari/700Bold/NotoSansDevanagari_700Bold.ttf"),
    },
  });
}
