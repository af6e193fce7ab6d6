/**
 * A minimal Worker around area B's text engine, for test/photo/workerd-text.test.ts: HarfBuzz's wasm imported
 * as a compiled module and the fonts as Data modules imported on first use (functions/worker-text.ts, as the Worker);
 * then Devanagari and Latin text shaped, laid out and rasterised inside workerd.
 */
import { configureWorkerTextEngine } from "../../../functions/worker-text";
import { drawText, renderTextBlock, shapeText } from "../../../src/photo/text";

configureWorkerTextEngine();

/** FNV-1a over the pixels, so the test can compare workerd's render with Node's without shipping PNGs. */
function fnv1a(bytes: Uint8Array): string {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h.toString(16);
}

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const text = url.searchParams.get("text") ?? "विचार कि हिंदी";
    const weight = url.searchParams.get("weight") === "700" ? 700 : 400;
    const shaped = await shapeText(text, weight);
    const block = await renderTextBlock(text, { maxWidth: 600, maxHeight: 300, fontSize: 64 }, { color: [0, 0, 0], weight, align: "center" });
    const canvas = { width: 400, height: 240, data: new Uint8Array(400 * 240 * 4).fill(255) };
    const covered = await drawText(
      canvas,
      text,
      { x: 20, y: 20, width: 360, height: 200 },
      { fontSize: 48, color: [255, 255, 255], weight, align: "center", anchor: "center" },
    );
    return Response.json({
      gids: shaped.glyphs.map((g) => g.gid),
      clusters: shaped.glyphs.map((g) => g.cluster),
      lines: block.lines,
      fontSize: block.fontSize,
      size: [block.image.width, block.image.height],
      hash: fnv1a(block.image.data),
      ink: block.image.data.filter((v, i) => i % 4 === 3 && v > 128).length,
      covered,
    });
  },
};
