/**
 * Image fixtures made in code (sharp for real encoders, hand-built bytes for hostile headers). Nothing is
 * committed as a binary file.
 *
 * @example
 * const jpeg = await makeJpeg(4000, 3000);
 * const bomb = pngHeaderOnly(100_000, 100_000);
 */
import sharp from "sharp";
import { crc32 } from "node:zlib";

export type Rgb = [number, number, number];

/** A solid-colour image, or quadrants (top-left, top-right, bottom-left, bottom-right) to see rotations. */
export function rawQuadrants(width: number, height: number, colours: [Rgb, Rgb, Rgb, Rgb], channels: 3 | 4 = 3): Buffer {
  const buf = Buffer.alloc(width * height * channels);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const c = colours[(y < height / 2 ? 0 : 2) + (x < width / 2 ? 0 : 1)]!;
      const i = (y * width + x) * channels;
      buf[i] = c[0];
      buf[i + 1] = c[1];
      buf[i + 2] = c[2];
      if (channels === 4) buf[i + 3] = 255;
    }
  }
  return buf;
}

export const RED: Rgb = [255, 0, 0];
export const GREEN: Rgb = [0, 255, 0];
export const BLUE: Rgb = [0, 0, 255];
export const YELLOW: Rgb = [255, 255, 0];
export const QUADRANTS: [Rgb, Rgb, Rgb, Rgb] = [RED, GREEN, BLUE, YELLOW];

/** A photo-like JPEG: smooth gradients plus mild noise, so it compresses and decodes like a real photo. */
export async function makePhotoJpeg(width: number, height: number, quality = 85): Promise<Buffer> {
  return sharp(await photoPixels(width, height), { raw: { width, height, channels: 3 } })
    .jpeg({ quality })
    .toBuffer();
}

/** Raw RGB (3 bytes per pixel) of a photo-like picture: smooth gradients plus blurred gaussian noise. */
export async function photoPixels(width: number, height: number): Promise<Buffer> {
  const noise = await sharp({ create: { width, height, channels: 3, background: "#000", noise: { type: "gaussian", mean: 128, sigma: 40 } } })
    .blur(1.2)
    .raw()
    .toBuffer();
  const pixels = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const n = noise[i]! - 128;
      pixels[i] = clamp((x / width) * 200 + 30 + n);
      pixels[i + 1] = clamp((y / height) * 180 + 40 + n);
      pixels[i + 2] = clamp(((x + y) / (width + height)) * 150 + 60 + n);
    }
  }
  return pixels;
}

export async function makeJpeg(
  width: number,
  height: number,
  options: { orientation?: number; colours?: [Rgb, Rgb, Rgb, Rgb]; progressive?: boolean; cmyk?: boolean; grey?: boolean } = {},
): Promise<Buffer> {
  let img = sharp(rawQuadrants(width, height, options.colours ?? QUADRANTS), { raw: { width, height, channels: 3 } });
  if (options.cmyk) img = img.toColourspace("cmyk");
  if (options.grey) img = img.toColourspace("b-w");
  img = img.jpeg({ quality: 90, progressive: options.progressive ?? false });
  if (options.orientation) img = img.withMetadata({ orientation: options.orientation });
  return img.toBuffer();
}

export async function makePng(
  width: number,
  height: number,
  options: { alpha?: number; depth16?: boolean; palette?: boolean; interlaced?: boolean; grey?: boolean; colour?: Rgb } = {},
): Promise<Buffer> {
  const [r, g, b] = options.colour ?? [200, 30, 60];
  let img = sharp({ create: { width, height, channels: 4, background: { r, g, b, alpha: options.alpha ?? 1 } } });
  if (options.grey) img = img.toColourspace("b-w");
  if (options.depth16) img = img.toColourspace("rgb16");
  return img.png({ palette: options.palette ?? false, progressive: options.interlaced ?? false }).toBuffer();
}

export async function makeWebp(width: number, height: number, options: { lossless?: boolean; alpha?: number } = {}): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 4, background: { r: 10, g: 120, b: 200, alpha: options.alpha ?? 1 } } })
    .webp({ lossless: options.lossless ?? false })
    .toBuffer();
}

/** A two-frame animated WebP (sharp joins the frames). */
export async function makeAnimatedWebp(): Promise<Buffer> {
  const frame = (r: number) =>
    sharp({ create: { width: 16, height: 16, channels: 4, background: { r, g: 0, b: 0, alpha: 1 } } })
      .png()
      .toBuffer();
  return sharp([await frame(255), await frame(0)], { join: { animated: true } })
    .webp({ loop: 0, delay: [100, 100] })
    .toBuffer();
}

export async function makeGif(): Promise<Buffer> {
  return sharp({ create: { width: 8, height: 8, channels: 3, background: "#0a0" } })
    .gif()
    .toBuffer();
}

export async function makeTiff(): Promise<Buffer> {
  return sharp({ create: { width: 8, height: 8, channels: 3, background: "#0a0" } })
    .tiff()
    .toBuffer();
}

/** A PNG chunk with a correct CRC. */
export function pngChunk(type: string, data: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const body = Buffer.concat([head.subarray(4), Buffer.from(data)]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body) >>> 0, 0);
  return Buffer.concat([head.subarray(0, 4), body, crc]);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Signature + IHDR (+ a tiny IDAT + IEND): a header that claims any size, as in a decompression bomb. */
export function pngHeaderOnly(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", new Uint8Array([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])),
    pngChunk("IEND", new Uint8Array()),
  ]);
}

/** Inserts an acTL chunk after IHDR: the file becomes an APNG as far as any reader is concerned. */
export function toApng(png: Buffer): Buffer {
  const ihdrEnd = 8 + 8 + 13 + 4;
  const actl = Buffer.alloc(8);
  actl.writeUInt32BE(2, 0); // frames
  return Buffer.concat([png.subarray(0, ihdrEnd), pngChunk("acTL", actl), png.subarray(ihdrEnd)]);
}

/** Rewrites the SOF dimensions of a JPEG (header says one size, data holds another). */
export function patchJpegSize(jpeg: Buffer, width: number, height: number): Buffer {
  const out = Buffer.from(jpeg);
  const sof = findSof(out);
  out.writeUInt16BE(height, sof + 5);
  out.writeUInt16BE(width, sof + 7);
  return out;
}

/** Changes the SOF marker type, e.g. to 0xc9 (arithmetic coding). */
export function patchJpegSofMarker(jpeg: Buffer, marker: number): Buffer {
  const out = Buffer.from(jpeg);
  out[findSof(out) + 1] = marker;
  return out;
}

function findSof(b: Buffer): number {
  let pos = 2;
  while (pos < b.length) {
    const marker = b[pos + 1]!;
    if (marker >= 0xc0 && marker <= 0xc2) return pos;
    pos += 2 + b.readUInt16BE(pos + 2);
  }
  throw new Error("no SOF in fixture");
}

/** Reads pixel (x, y) of an encoded image as RGB through sharp. */
export async function pixelAt(image: Uint8Array, x: number, y: number): Promise<Rgb> {
  const { data, info } = await sharp(image).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const i = (y * info.width + x) * info.channels;
  return [data[i]!, data[i + 1]!, data[i + 2]!];
}

/** True when two colours are within `tolerance` on every channel (JPEG is lossy). */
export function near(a: ArrayLike<number>, b: ArrayLike<number>, tolerance = 40): boolean {
  return [0, 1, 2].every((i) => Math.abs(a[i]! - b[i]!) <= tolerance);
}

function clamp(v: number): number {
  return v < 0 ? 0 : v > 255 ? 255 : Math.round(v);
}

/**
 * Peak signal-to-noise ratio (dB) of an RGBA image against reference pixels with `channels` per pixel (1 grey,
 * 3 RGB or 4 RGBA), over R, G and B; Infinity when identical.
 */
export function psnr(rgba: Uint8Array, reference: Uint8Array, channels: number): number {
  let se = 0;
  let n = 0;
  for (let i = 0, j = 0; i < rgba.length; i += 4, j += channels) {
    for (let c = 0; c < 3; c++) {
      const d = rgba[i + c]! - reference[j + (channels === 1 ? 0 : c)]!;
      se += d * d;
      n++;
    }
  }
  return se === 0 ? Infinity : 10 * Math.log10((255 * 255) / (se / n));
}

/**
 * Every route that takes an image in its body, as `[name, path, body with the image as a data URI, field
 * named in the 422 (null where the route names none)]`; area B's logo and reference ride with the product
 * photo `product()` gives when the body is built.
 */
export function imageEntryPoints(product: () => string): Array<[string, string, (image: string) => unknown, string | null]> {
  const photo = (extra: Record<string, unknown>) => ({ productImages: [{ dataUrl: product() }], scenePrompt: "on a wooden table", ...extra });
  return [
    ["area C media upload", "/api/v1/social/media", (image) => ({ base64: image }), null],
    ["area A QR reading", "/api/qr-code/decode", (image) => ({ base64: image }), null],
    ["area A QR logo", "/api/qr-code/generate", (image) => ({ type: "text", value: "hello", logoUrl: image }), "logoUrl"],
    [
      "area B product image",
      "/api/image/product-photography",
      (image) => ({ productImages: [{ dataUrl: image }], scenePrompt: "on a wooden table" }),
      "productImages.0.dataUrl",
    ],
    ["area B logo", "/api/image/product-photography", (image) => photo({ logoImage: image }), "logoImage"],
    ["area B reference image", "/api/image/product-photography", (image) => photo({ referenceImage: image }), "referenceImage"],
  ];
}
