/**
 * Cheap structural checks run before photon sees the bytes. Photon aborts (a WASM trap) on corrupt input and
 * the memory it had allocated for that image is never returned, so we refuse what we can recognise as broken
 * (truncated files, PNG checksum errors) in JS first, and treat a trap as the last line of defence.
 */
import { ascii, invalid, u32be, u32le, type ImageHeader } from "./sniff";
import { crc32 } from "../lib/encoding";

/**
 * Throws INVALID_IMAGE when the file is visibly incomplete or corrupt.
 *
 * @example
 * checkComplete(bytes, readImageHeader(bytes));
 */
export function checkComplete(bytes: Uint8Array, header: ImageHeader): void {
  if (header.format === "jpeg") checkJpeg(bytes);
  else if (header.format === "png") checkPng(bytes);
  else checkWebp(bytes);
}

function checkJpeg(b: Uint8Array): void {
  // Trailing data after EOI is legal in practice (camera padding, polyglots), so look for EOI anywhere after SOS.
  const sos = findMarker(b, 0xda, 2);
  if (sos < 0) throw invalid("The JPEG is truncated: it has no image data (SOS).");
  for (let i = b.length - 2; i > sos; i--) {
    if (b[i] === 0xff && b[i + 1] === 0xd9) return;
  }
  throw invalid("The JPEG is truncated: it ends before its end-of-image marker.");
}

function findMarker(b: Uint8Array, marker: number, from: number): number {
  let pos = from;
  while (pos + 4 <= b.length) {
    if (b[pos] !== 0xff) return -1;
    const m = b[pos + 1]!;
    if (m === 0xff) {
      pos++;
      continue;
    }
    if (m === marker) return pos;
    if (m === 0xd8 || m === 0x01 || (m >= 0xd0 && m <= 0xd7)) {
      pos += 2;
      continue;
    }
    pos += 2 + ((b[pos + 2]! << 8) | b[pos + 3]!);
  }
  return -1;
}

function checkPng(b: Uint8Array): void {
  let pos = 8;
  let sawData = false;
  while (pos + 12 <= b.length) {
    const length = u32be(b, pos);
    const end = pos + 12 + length;
    if (end > b.length) break;
    const type = ascii(b, pos + 4, 4);
    if (crc32(b, pos + 4, pos + 8 + length) !== u32be(b, pos + 8 + length)) {
      throw invalid(`The PNG is corrupt: the checksum of its ${/^[A-Za-z]{4}$/.test(type) ? type : "unknown"} chunk does not match.`);
    }
    if (type === "IDAT") sawData = true;
    if (type === "IEND") {
      if (!sawData) throw invalid("The PNG has no image data (IDAT).");
      return;
    }
    pos = end;
  }
  throw invalid("The PNG is truncated: it ends before its IEND chunk.");
}

function checkWebp(b: Uint8Array): void {
  const declared = u32le(b, 4) + 8;
  if (declared > b.length) throw invalid("The WebP is truncated: the file is shorter than its header says.");
}
