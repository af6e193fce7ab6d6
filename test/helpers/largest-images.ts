/**
 * The largest images the limits accept, made at run time: a photo-like picture (seeded, so every run makes
 * the same bytes) at a given pixel count, encoded as PNG, progressive JPEG, CMYK JPEG (baseline or progressive)
 * or WebP, with as much
 * texture as fits under a byte cap. Texture is what makes a file large and its decode real: a flat picture
 * compresses to nothing and never exercises the inflate or the entropy decoder.
 *
 * How it lands near the cap: the picture is smooth gradients plus seeded noise over the left `f` of every
 * row, so the encoded size grows about linearly with `f` (each row costs the same). Two strips (`f` = 0 and
 * 1) give the slope, the whole image is encoded at the `f` that aims at `aim` x cap, and `f` is lowered if
 * the result is still over the cap.
 *
 * @example
 * const png = await largestImage("png", { width: 7300, height: 5479, maxBytes: 10 * 1024 * 1024 });
 * png.bytes.length; // a little under 10 MiB
 */
import QRCode from "qrcode";
import sharp, { type Sharp } from "sharp";
import { seeded } from "../../src/photo/local/raster";

export type LargeFormat = "png" | "png-interlaced" | "jpeg-progressive" | "jpeg-cmyk" | "jpeg-cmyk-progressive" | "webp";

export interface LargeImage {
  format: LargeFormat;
  mimeType: string;
  width: number;
  height: number;
  bytes: Buffer;
  /** The textured fraction of each row that was used. */
  texture: number;
}

export interface LargeImageOptions {
  width: number;
  height: number;
  /** The byte cap the file must stay under. */
  maxBytes: number;
  /** The fraction of the cap to aim at (default 0.95). */
  aim?: number;
  seed?: number;
  /** A QR code of this text drawn on the right half (untextured), `side` pixels with its quiet zone. */
  qr?: QrMark;
}

export interface QrMark {
  text: string;
  side: number;
}

const MIME: Record<LargeFormat, string> = {
  png: "image/png",
  "png-interlaced": "image/png",
  "jpeg-progressive": "image/jpeg",
  "jpeg-cmyk": "image/jpeg",
  "jpeg-cmyk-progressive": "image/jpeg",
  webp: "image/webp",
};

/** How each format is written: sharp's encoders as a camera or an editor would use them. */
function encoder(format: LargeFormat): (img: Sharp) => Sharp {
  switch (format) {
    case "png":
      return (img) => img.png({ compressionLevel: 6, adaptiveFiltering: true });
    case "png-interlaced":
      return (img) => img.png({ compressionLevel: 6, adaptiveFiltering: true, progressive: true });
    case "jpeg-progressive":
      return (img) => img.jpeg({ quality: 90, progressive: true });
    case "jpeg-cmyk":
      return (img) => img.toColourspace("cmyk").jpeg({ quality: 90 });
    case "jpeg-cmyk-progressive":
      return (img) => img.toColourspace("cmyk").jpeg({ quality: 90, progressive: true });
    case "webp":
      return (img) => img.webp({ quality: 80, effort: 0 });
  }
}

/**
 * Raw RGB of the photo-like picture: diagonal colour gradients and soft waves of light, with seeded
 * noise of amplitude 48 over the left `texture` of each row, and optionally a QR code on the right.
 */
export function texturedPixels(width: number, height: number, texture: number, seed = 1, qr?: QrMark): Buffer {
  const rng = seeded(seed);
  const out = Buffer.alloc(width * height * 3);
  const noisy = Math.round(width * Math.max(0, Math.min(1, texture)));
  const phase = rng() * Math.PI * 2;
  const column = Float64Array.from({ length: width }, (_, x) => 30 * Math.sin((x / width) * 7 + phase));
  const row = Float64Array.from({ length: height }, (_, y) => 25 * Math.cos((y / height) * 5 + phase));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const lift = column[x]! + row[y]!;
      const n = x < noisy ? (rng() - 0.5) * 96 : 0;
      const i = (y * width + x) * 3;
      out[i] = clamp((x / width) * 160 + 40 + lift + n);
      out[i + 1] = clamp((y / height) * 150 + 50 + lift * 0.5 + n);
      out[i + 2] = clamp(((x + y) / (width + height)) * 120 + 70 - lift * 0.3 + n);
    }
  }
  if (qr) drawQr(out, width, height, qr);
  return out;
}

/** Black modules on a white square (4-module quiet zone), centred in the right half. */
function drawQr(out: Buffer, width: number, height: number, qr: QrMark): void {
  const { size, data } = QRCode.create(qr.text, { errorCorrectionLevel: "M" }).modules;
  const cells = size + 8;
  const scale = Math.floor(Math.min(qr.side, height, width / 2) / cells);
  if (scale < 1) throw new Error(`a QR code of ${cells} modules does not fit in ${qr.side} pixels`);
  const side = cells * scale;
  const x0 = Math.floor(width * 0.75 - side / 2);
  const y0 = Math.floor((height - side) / 2);
  for (let y = 0; y < side; y++) {
    const my = Math.floor(y / scale) - 4;
    for (let x = 0; x < side; x++) {
      const mx = Math.floor(x / scale) - 4;
      const dark = mx >= 0 && my >= 0 && mx < size && my < size && data[my * size + mx] === 1;
      out.fill(dark ? 0 : 255, ((y0 + y) * width + x0 + x) * 3, ((y0 + y) * width + x0 + x) * 3 + 3);
    }
  }
}

async function encode(format: LargeFormat, width: number, height: number, texture: number, seed: number, qr?: QrMark): Promise<Buffer> {
  const raw = sharp(texturedPixels(width, height, texture, seed, qr), { raw: { width, height, channels: 3 } });
  return encoder(format)(raw).toBuffer();
}

/**
 * The image at `width` x `height` with as much texture as keeps it under `maxBytes` (near `aim` of it).
 * Throws when even the untextured picture is over the cap.
 */
export async function largestImage(format: LargeFormat, options: LargeImageOptions): Promise<LargeImage> {
  const { width, height, maxBytes, aim = 0.95, seed = 1, qr } = options;
  const strip = Math.min(height, 256);
  const [plain, full] = await Promise.all([encode(format, width, strip, 0, seed), encode(format, width, strip, 1, seed)]);
  const perRow = (b: Buffer) => b.length / strip;
  const slope = perRow(full) - perRow(plain);
  let texture = slope > 0 ? Math.min(1, (maxBytes * aim - perRow(plain) * height) / (slope * height)) : 1;
  if (texture < 0) throw new Error(`${format} at ${width}x${height} is over ${maxBytes} bytes even without texture`);
  for (let attempt = 0; attempt < 6; attempt++) {
    const bytes = await encode(format, width, height, texture, seed, qr);
    if (bytes.length <= maxBytes) return { format, mimeType: MIME[format], width, height, bytes, texture };
    texture *= (maxBytes * aim) / bytes.length;
  }
  throw new Error(`could not bring a ${format} at ${width}x${height} under ${maxBytes} bytes`);
}

function clamp(v: number): number {
  return v < 0 ? 0 : v > 255 ? 255 : Math.round(v);
}
