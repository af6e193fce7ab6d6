/**
 * A minimal Worker around area A's engine, for test/qr/workerd.test.ts: proves the renderer, the decoders
 * (ZXing wasm imported as a module, jsQR) and the image pipeline run unchanged in workerd.
 */
import zxingWasm from "zxing-wasm/reader/zxing_reader.wasm";
import { decodeImage } from "../../../src/images";
import { parseHexColor } from "../../../src/qr/colors";
import { bytesToText, decodeQrImage } from "../../../src/qr/decode";
import { renderQr } from "../../../src/qr/render";
import { configureZxing } from "../../../src/qr/zxing-loader";

configureZxing(zxingWasm as unknown as WebAssembly.Module);

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const text = url.searchParams.get("text") ?? "hello";
    const logo = url.searchParams.has("logo")
      ? { width: 64, height: 64, data: new Uint8Array(64 * 64 * 4).map((_, i) => (i % 4 === 3 ? 255 : i % 4 === 0 ? 200 : 40)) }
      : null;
    const started = Date.now();
    const rendered = await renderQr(text, { size: 400, fg: parseHexColor("#000"), bg: parseHexColor("#fff"), transparent: false, logo, logoSizeRatio: 0.25 });
    const decoded = await decodeQrImage(decodeImage(rendered.png));
    return Response.json({
      text: decoded?.text ?? null,
      pass: decoded?.pass ?? null,
      bytes: rendered.png.length,
      version: rendered.version,
      ms: Date.now() - started,
      shiftJis: bytesToText(new Uint8Array([0x93, 0xfa, 0x96, 0x7b])),
    });
  },
};
