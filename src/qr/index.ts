/**
 * Area A, QR codes: what the app and the entry points use.
 *
 * @example
 * app.route("/api/qr-code", createQrRoutes());   // src/app.ts
 * configureZxing(zxingWasmModule);                // functions/worker.ts and functions/node.ts, at start-up
 */
export { createQrRoutes, qrNotFoundHint } from "./routes";
export { configureZxing, isZxingConfigured, type ZxingWasmSource } from "./zxing-loader";
export { decodeQrImage } from "./decode";
export { renderQr, type QrDesign, type RenderedQr } from "./render";
export { buildPayload } from "./payloads";
