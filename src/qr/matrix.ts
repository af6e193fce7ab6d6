/**
 * Text -> module matrix: npm `qrcode`'s `create` does the data encoding, Reed-Solomon and placement through
 * its public API, asked for mask 0 (`maskPattern: 0`, so it skips its own mask search), and mask.ts chooses
 * the mask. We choose the mode and the version ourselves (digits-only and QR-alphanumeric payloads use their
 * denser modes; anything else is byte mode over the UTF-8 bytes, never Kanji) so that capacity messages,
 * the logo's version bump and the encoder agree.
 *
 * @example
 * const m = encodeMatrix("https://example.com", { ecLevel: "M" });
 * m.modules[row * m.size + col]; // 1 = dark
 */
import { create, type QRCodeSegment } from "qrcode";
import { symbolLayout, type EcLevel } from "./layout";
import { chooseMask } from "./mask";

export interface QrMatrix {
  version: number;
  ecLevel: EcLevel;
  /** Modules per side (without quiet zone). */
  size: number;
  /** size * size, row-major, 1 = dark. */
  modules: Uint8Array;
}

type Mode = "Numeric" | "Alphanumeric" | "Byte";

interface Segment {
  mode: Mode;
  /** What the encoder receives. */
  data: QRCodeSegment;
  /** Characters (numeric, alphanumeric) or bytes (byte mode). */
  count: number;
}

const ALPHANUMERIC = /^[0-9A-Z $%*+\-./:]+$/;
const utf8 = new TextEncoder();

function segmentFor(text: string): Segment {
  if (/^[0-9]+$/.test(text)) return { mode: "Numeric", data: { mode: "numeric", data: text }, count: text.length };
  if (ALPHANUMERIC.test(text)) return { mode: "Alphanumeric", data: { mode: "alphanumeric", data: text }, count: text.length };
  const bytes = utf8.encode(text);
  return { mode: "Byte", data: { mode: "byte", data: bytes }, count: bytes.length };
}

function segmentBits(segment: Segment, version: number): number {
  const tier = version <= 9 ? 0 : version <= 26 ? 1 : 2;
  const n = segment.count;
  switch (segment.mode) {
    case "Numeric":
      return 4 + [10, 12, 14][tier]! + 10 * Math.floor(n / 3) + [0, 4, 7][n % 3]!;
    case "Alphanumeric":
      return 4 + [9, 11, 13][tier]! + 11 * Math.floor(n / 2) + 6 * (n % 2);
    case "Byte":
      return 4 + [8, 16, 16][tier]! + 8 * n;
  }
}

/**
 * The smallest version that holds `text` at `ecLevel`, or null when even version 40 is too small.
 *
 * @example
 * minimalVersion("https://example.com", "H"); // 3
 */
export function minimalVersion(text: string, ecLevel: EcLevel, from = 1): number | null {
  const segment = segmentFor(text);
  for (let v = Math.max(1, from); v <= 40; v++) {
    if (segmentBits(segment, v) <= symbolLayout(v, ecLevel).dataCodewords * 8) return v;
  }
  return null;
}

/**
 * Payload bytes in byte mode, for messages about capacity.
 *
 * @example
 * payloadBytes("€"); // 3
 */
export function payloadBytes(text: string): number {
  return utf8.encode(text).length;
}

/**
 * Encodes `text` at `ecLevel`, in `version` or the smallest version that holds it.
 * Throws RangeError when the text does not fit.
 *
 * @example
 * encodeMatrix("hello", { ecLevel: "H", version: 5 }).size; // 37
 */
export function encodeMatrix(text: string, options: { ecLevel: EcLevel; version?: number }): QrMatrix {
  const segment = segmentFor(text);
  const version = options.version ?? minimalVersion(text, options.ecLevel);
  if (version === null || segmentBits(segment, version) > symbolLayout(version, options.ecLevel).dataCodewords * 8) {
    throw new RangeError(`payload does not fit a QR code at level ${options.ecLevel}${options.version ? ` version ${options.version}` : ""}`);
  }
  const symbol = create([segment.data], { version, errorCorrectionLevel: options.ecLevel, maskPattern: 0 });
  const size = symbol.modules.size;
  const mask0 = Uint8Array.from(symbol.modules.data);
  const { modules } = chooseMask(mask0, symbolLayout(version, options.ecLevel));
  return { version, ecLevel: options.ecLevel, size, modules };
}
