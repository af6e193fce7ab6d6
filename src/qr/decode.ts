/**
 * Reading a QR code from a photo or screenshot.
 *
 * The image is reduced once to gray at a working size (box filter, alpha over white) so a 12 MP photo costs
 * one pass over its pixels. Then passes run, cheapest first, until one reads:
 * 1. ZXing-C++ on the working image (its own rotations, inversion and downscaling enabled);
 * 2. our re-binarisation at 400 px (local-mean threshold after a small blur) fed to ZXing-C++ and jsQR: it
 *    rescues sensor noise, uneven light and low contrast, which defeat ZXing's own binarizer;
 * 3. ZXing-C++ at 800 px (blur and noise average out) and, for big photos, at twice the working resolution
 *    (a small code in a large frame);
 * 4. jsQR (both polarities), never on more than 1024 px: its run time explodes on large noisy images
 *    (its run time grows far faster than the pixels);
 * 5. re-binarisation at 800 px, and ZXing-C++ at 400 px.
 * Since ZXing-C++ runs first on at least the resolution it would get alone, everything it reads we read.
 *
 * Text: ZXing transcodes by ECI or its character-set guess (Shift_JIS included). jsQR returns "" for bytes
 * that are not UTF-8, so its raw bytes are decoded here: UTF-8, else Shift_JIS, else ISO-8859-1.
 *
 * @example
 * const result = await decodeQrImage(decodeImage(bytes));
 * result?.text; // "https://example.com"
 */
import type { ReaderOptions } from "zxing-wasm/reader";
import { resizeGray } from "../images/resize";
import type { GrayImage, LumaImage, RgbaImage } from "../images/types";
import { grayToRgba, toGray } from "./raster";
import { loadJsQr } from "./jsqr";
import { readWithZxing } from "./zxing-loader";

/** Longest side of the first working image. */
export const WORKING_SIDE = 1600;
/** jsQR never gets more than this (its cost grows badly with size and noise). */
const JSQR_SIDE = 1024;

export interface DecodedQr {
  text: string;
  /** Which pass read it, for logs and the bench. */
  pass: string;
}

const ZXING_OPTIONS: ReaderOptions = {
  formats: ["QRCode", "MicroQRCode", "RMQRCode"],
  tryHarder: true,
  tryRotate: true,
  tryInvert: true,
  tryDownscale: true,
  maxNumberOfSymbols: 1,
  textMode: "Plain",
};

export interface DecodeQrOptions {
  passes?: "all" | "zxing-only";
  /**
   * The same picture with more pixels, for the pass that looks for a small code in a big photo; made only
   * when that pass runs (the request's upload decoded again at twice the working side, so the passes before
   * it never hold the larger image). Default: `image` itself.
   */
  sharper?: () => RgbaImage | LumaImage;
}

/**
 * Decodes the first QR code in `image` (RGBA, or a JPEG's luma alone), or returns null.
 *
 * @example
 * await decodeQrImage({ width, height, data }); // { text: "hello", pass: "zxing" }
 */
export async function decodeQrImage(image: RgbaImage | LumaImage, options: DecodeQrOptions = {}): Promise<DecodedQr | null> {
  const longest = Math.max(image.width, image.height);
  const factor = Math.max(1, Math.ceil(longest / WORKING_SIDE));
  const working = toGray(image, factor);

  const z = await zxing(working);
  if (z !== null) return { text: z, pass: "zxing" };
  if (options.passes === "zxing-only") return null;

  // Cheapest first; each pass returns text or null.
  const passes: Array<[string, () => Promise<string | null> | string | null]> = [
    ["binarised@400", () => readBinarised(fit(working, 400))],
    ["zxing@800", () => (Math.max(working.width, working.height) > 1000 ? zxing(fit(working, 800)) : null)],
    [
      "zxing-sharp",
      // A small code in a big photo may need more pixels than the working image kept.
      () => {
        if (factor === 1) return null;
        const big = options.sharper?.() ?? image;
        return zxing(toGray(big, Math.max(1, Math.ceil(Math.max(big.width, big.height) / (WORKING_SIDE * 2)))));
      },
    ],
    ["jsqr", () => readJsQr(fit(working, JSQR_SIDE))],
    ["binarised@800", () => (Math.max(working.width, working.height) > 500 ? readBinarised(fit(working, 800)) : null)],
    ["zxing@400", () => (Math.max(working.width, working.height) > 500 ? zxing(fit(working, 400)) : null)],
  ];
  for (const [pass, run] of passes) {
    const text = await run();
    if (text !== null) return { text, pass };
  }
  return null;
}

async function readBinarised(gray: GrayImage): Promise<string | null> {
  const binary = binarise(gray);
  return (await zxing(binary, { binarizer: "FixedThreshold", tryDownscale: false })) ?? readJsQr(binary);
}

async function zxing(gray: GrayImage, extra: ReaderOptions = {}): Promise<string | null> {
  const [result] = await readWithZxing(grayToRgba(gray), { ...ZXING_OPTIONS, ...extra });
  return result?.isValid ? result.text : null;
}

async function readJsQr(gray: GrayImage): Promise<string | null> {
  const jsQR = await loadJsQr();
  const rgba = grayToRgba(gray);
  // Options on every call: jsQR 1.4 keeps the last call's options as module-wide defaults.
  const result = jsQR(rgba.data, rgba.width, rgba.height, { inversionAttempts: "attemptBoth" });
  if (!result || result.binaryData.length === 0) return null;
  return bytesToText(Uint8Array.from(result.binaryData));
}

/** Shrinks (never enlarges) so the longest side is at most `side`. */
function fit(gray: GrayImage, side: number): GrayImage {
  const longest = Math.max(gray.width, gray.height);
  if (longest <= side) return gray;
  const scale = side / longest;
  return resizeGray(gray, Math.max(1, Math.round(gray.width * scale)), Math.max(1, Math.round(gray.height * scale)));
}

/**
 * Local-mean threshold on a lightly blurred copy: each pixel is compared with the mean of a window about an
 * eighth of the image wide (a few modules), which removes shading gradients and most sensor noise.
 *
 * @example
 * const binary = binarise(gray); // 0 or 255 per pixel
 */
export function binarise(gray: GrayImage): GrayImage {
  const { width, height } = gray;
  const blurred = boxBlur(gray, 1);
  const radius = Math.max(4, Math.round(Math.min(width, height) / 16));
  const integral = new Float64Array((width + 1) * (height + 1));
  for (let y = 0; y < height; y++) {
    let rowSum = 0;
    for (let x = 0; x < width; x++) {
      rowSum += blurred[y * width + x]!;
      integral[(y + 1) * (width + 1) + x + 1] = integral[y * (width + 1) + x + 1]! + rowSum;
    }
  }
  const out = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    const y0 = Math.max(0, y - radius);
    const y1 = Math.min(height, y + radius + 1);
    for (let x = 0; x < width; x++) {
      const x0 = Math.max(0, x - radius);
      const x1 = Math.min(width, x + radius + 1);
      const sum = integral[y1 * (width + 1) + x1]! - integral[y0 * (width + 1) + x1]! - integral[y1 * (width + 1) + x0]! + integral[y0 * (width + 1) + x0]!;
      const mean = sum / ((x1 - x0) * (y1 - y0));
      // A small bias keeps flat regions (quiet zone, paper) white instead of salt-and-pepper.
      out[y * width + x] = blurred[y * width + x]! < mean - 4 ? 0 : 255;
    }
  }
  return { width, height, data: out };
}

function boxBlur(gray: GrayImage, radius: number): Uint8Array {
  const { width, height, data } = gray;
  const tmp = new Uint16Array(width * height);
  const out = new Uint8Array(width * height);
  const span = 2 * radius + 1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let sum = 0;
      for (let k = -radius; k <= radius; k++) sum += data[y * width + Math.min(width - 1, Math.max(0, x + k))]!;
      tmp[y * width + x] = sum;
    }
  }
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let sum = 0;
      for (let k = -radius; k <= radius; k++) sum += tmp[Math.min(height - 1, Math.max(0, y + k)) * width + x]!;
      out[y * width + x] = Math.round(sum / (span * span));
    }
  }
  return out;
}

const decoders: Array<() => TextDecoder> = [() => new TextDecoder("utf-8", { fatal: true }), () => new TextDecoder("shift_jis", { fatal: true })];

/**
 * Bytes of a byte-mode segment to text: UTF-8 if valid, else Shift_JIS if valid (and the runtime has it),
 * else ISO-8859-1 (the QR standard's default).
 *
 * @example
 * bytesToText(new Uint8Array([0x93, 0xfa, 0x96, 0x7b])); // "日本"
 */
export function bytesToText(bytes: Uint8Array): string {
  for (const make of decoders) {
    try {
      return make().decode(bytes);
    } catch {
      // not this encoding (or the runtime lacks it): try the next
    }
  }
  let out = "";
  for (const b of bytes) out += String.fromCharCode(b);
  return out;
}
