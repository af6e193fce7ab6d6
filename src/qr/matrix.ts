/**
 * Text -> module matrix, with qrcode-generator doing the data encoding, Reed-Solomon and placement, and
 * mask.ts choosing the mask (qrcode-generator's own mask search is most of its run time; see there).
 *
 * qrcode-generator turns each character into `charCode & 0xff` (research/qr.md 0.3), so "€" would become
 * 0xAC. Rather than replace its module-global `stringToBytes` (shared with anyone else who imports it), we
 * hand it a "binary string" whose characters are the UTF-8 bytes, which its default maps one to one.
 * Digits-only and QR-alphanumeric payloads use their denser modes.
 *
 * @example
 * const m = encodeMatrix("https://example.com", { ecLevel: "M" });
 * m.modules[row * m.size + col]; // 1 = dark
 */
import qrcode from "qrcode-generator";
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
  /** What qrcode-generator receives. */
  data: string;
  /** Characters (numeric, alphanumeric) or bytes (byte mode). */
  count: number;
}

const ALPHANUMERIC = /^[0-9A-Z $%*+\-./:]+$/;
const utf8 = new TextEncoder();

function segmentFor(text: string): Segment {
  if (/^[0-9]+$/.test(text)) return { mode: "Numeric", data: text, count: text.length };
  if (ALPHANUMERIC.test(text)) return { mode: "Alphanumeric", data: text, count: text.length };
  const bytes = utf8.encode(text);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 4096) binary += String.fromCharCode(...bytes.subarray(i, i + 4096));
  return { mode: "Byte", data: binary, count: bytes.length };
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
  const qr = qrcode(version as Parameters<typeof qrcode>[0], options.ecLevel);
  qr.addData(segment.data, segment.mode);
  // make() scores its 8 masks through getModuleCount()/isDark() on this object. Answering 0 modules while it
  // runs makes every score NaN, so it keeps mask 0 without scanning; we choose the real mask below.
  // (Every code is decoded after rendering, so a change in this library's internals cannot slip through.)
  const getModuleCount = qr.getModuleCount;
  qr.getModuleCount = () => 0;
  try {
    qr.make();
  } finally {
    qr.getModuleCount = getModuleCount;
  }
  const size = qr.getModuleCount();
  const mask0 = new Uint8Array(size * size);
  for (let r = 0; r < size; r++) {
    for (let c = 0; c < size; c++) if (qr.isDark(r, c)) mask0[r * size + c] = 1;
  }
  const { modules } = chooseMask(mask0, symbolLayout(version, options.ecLevel));
  return { version, ecLevel: options.ecLevel, size, modules };
}
