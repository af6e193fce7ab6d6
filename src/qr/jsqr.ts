/**
 * jsQR, imported on its first use: its module is slow to load, which every heavy-work thread and the
 * server would otherwise pay at start, whatever the thread went on to do (most of a thread's
 * jobs never reach jsQR: media uploads, area B, and QR codes that ZXing-C++ reads first).
 *
 * @example
 * const jsQR = await loadJsQr();
 * const found = jsQR(rgba.data, rgba.width, rgba.height, { inversionAttempts: "dontInvert" });
 */
import type jsQRFunction from "jsqr";

let loading: Promise<typeof jsQRFunction> | undefined;

export function loadJsQr(): Promise<typeof jsQRFunction> {
  return (loading ??= import("jsqr").then((m) => m.default));
}
