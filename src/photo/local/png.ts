/**
 * A fast PNG encoder for opaque scenes: 8-bit RGB rows with filter None, deflated as one zlib stream by a
 * native deflater, so neither a filter search per row nor a deflate in JavaScript sets the pace.
 *
 * The deflater is a port: by default the runtime's CompressionStream (zlib's default level 6, the only one
 * it offers; the Worker's choice), and on Node zlib at level 3 (configureSceneDeflate, set by the Node
 * service builder), which trades a somewhat larger file for a much faster encode (figures in
 * docs/performance.md).
 *
 * Why no filter: our scenes' gradients carry an ordered dither that repeats every 4 pixels, which deflate
 * matches directly in unfiltered rows, while Sub/Up/Paeth leave small noise-like residuals that its lazy
 * matching is slow on. So None encodes our scenes fastest, and to the smallest or nearly smallest file.
 *
 * @example
 * const png = await encodeScenePng(scene); // Uint8Array, a complete PNG file
 */
import type { RgbaImage } from "../../images";
import { assemblePng } from "../../images/codecs";

/** Compresses bytes, handed over in bands, as one zlib (RFC 1950) stream. */
export type SceneDeflate = (bands: Iterable<Uint8Array<ArrayBuffer>>) => Promise<Uint8Array>;

/** About this many bytes of scanlines per band. */
const BAND_BYTES = 1024 * 1024;

let deflate: SceneDeflate = compressionStreamDeflate;

/**
 * Sets the deflater encodeScenePng uses (process-wide configuration, like the text engine's fonts).
 *
 * @example
 * configureSceneDeflate(deflateBandsAtLevel3); // zlib at level 3, in functions/node/engines.ts
 */
export function configureSceneDeflate(fn: SceneDeflate): void {
  deflate = fn;
}

/**
 * Encodes an opaque RGBA image as an RGB PNG (alpha is dropped: the caller's image is opaque).
 *
 * @example
 * const png = await encodeScenePng({ width: 1, height: 1, data: new Uint8Array([255, 0, 0, 255]) });
 */
export async function encodeScenePng(img: RgbaImage): Promise<Uint8Array> {
  // CompressionStream has consumed a band once its write resolves, so one buffer serves every band; a
  // configured deflater may still hold a band when it asks for the next, so it gets a buffer per band.
  const bands = rgbScanlineBands(img, deflate === compressionStreamDeflate);
  return assemblePng(img.width, img.height, 8, 2, [["IDAT", await deflate(bands)]]); // 8-bit RGB
}

/**
 * The image's rows as PNG scanlines (filter byte 0, None, then R, G, B per pixel), in bands of about
 * BAND_BYTES, so the whole image's scanlines (3 bytes a pixel) never exist at once: each band in a
 * buffer of its own, or with `reuse` all in one buffer (the consumer is done with a band before it asks for
 * the next), so a scene's bands do not become the whole image's worth of garbage either (in a Worker, garbage counts against the
 * isolate until V8 collects it).
 */
function* rgbScanlineBands({ width: w, height: h, data }: RgbaImage, reuse: boolean): Generator<Uint8Array<ArrayBuffer>> {
  const stride = w * 3 + 1;
  const rowsPerBand = Math.max(1, Math.floor(BAND_BYTES / stride));
  const shared = reuse ? new Uint8Array(stride * Math.min(rowsPerBand, h)) : null;
  for (let y0 = 0, s = 0; y0 < h; y0 += rowsPerBand) {
    const rows = Math.min(rowsPerBand, h - y0);
    const out = shared ? shared.subarray(0, stride * rows) : new Uint8Array(stride * rows);
    for (let y = 0; y < rows; y++) {
      const end = (y + 1) * stride;
      out[y * stride] = 0;
      for (let o = y * stride + 1; o < end; o += 3, s += 4) {
        out[o] = data[s]!;
        out[o + 1] = data[s + 1]!;
        out[o + 2] = data[s + 2]!;
      }
    }
    yield out;
  }
}

async function compressionStreamDeflate(bands: Iterable<Uint8Array<ArrayBuffer>>): Promise<Uint8Array> {
  const stream = new CompressionStream("deflate");
  const writer = stream.writable.getWriter();
  const compressed = new Response(stream.readable).arrayBuffer();
  for (const band of bands) await writer.write(band);
  await writer.close();
  return new Uint8Array(await compressed);
}
