/**
 * Area B test fixtures, made in code with sharp: a product photo on a plain background, an opaque logo in
 * a colour no scene uses, PNG/JPEG decoding of answers, and a harness that calls the photo API.
 *
 * @example
 * const h = await photoHarness();
 * const res = await h.post({ productImages: [{ dataUrl: await productDataUrl() }], promptId: "studio-white-sweep" });
 */
import sharp from "sharp";
import { expect } from "vitest";
import { createTestApp, type TestAppOptions } from "../helpers/harness";

export const MAGENTA = [255, 0, 255] as const;

/** A product photo: a teal rounded bottle with a cap, on an off-white background, as JPEG. */
export async function productJpeg(width = 600, height = 800): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <rect width="100%" height="100%" fill="#f4f3f0"/>
    <rect x="${width * 0.32}" y="${height * 0.25}" width="${width * 0.36}" height="${height * 0.6}" rx="${width * 0.06}" fill="#1f8a8a"/>
    <rect x="${width * 0.42}" y="${height * 0.14}" width="${width * 0.16}" height="${height * 0.12}" rx="8" fill="#333"/>
    <rect x="${width * 0.36}" y="${height * 0.45}" width="${width * 0.28}" height="${height * 0.18}" fill="#f7e7c4"/>
  </svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
}

export async function dataUrl(bytes: Buffer, mime = "image/jpeg"): Promise<string> {
  return `data:${mime};base64,${bytes.toString("base64")}`;
}

export async function productDataUrl(): Promise<string> {
  return dataUrl(await productJpeg());
}

/** An opaque magenta logo, 200 x 100 (2:1), as a PNG data URI. */
export async function logoDataUrl(width = 200, height = 100): Promise<string> {
  const png = await sharp({ create: { width, height, channels: 4, background: { r: 255, g: 0, b: 255, alpha: 1 } } })
    .png()
    .toBuffer();
  return dataUrl(png, "image/png");
}

export interface Decoded {
  width: number;
  height: number;
  channels: number;
  data: Buffer;
}

export async function decodePng(bytes: Buffer | Uint8Array): Promise<Decoded> {
  const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, channels: info.channels, data };
}

export function fromDataUri(uri: string): Buffer {
  const match = /^data:image\/png;base64,(.+)$/.exec(uri);
  if (!match) throw new Error(`not a PNG data URI: ${uri.slice(0, 40)}`);
  return Buffer.from(match[1]!, "base64");
}

/** Bounding box of the pixels within `tolerance` of `rgb`. */
export function bboxOf(img: Decoded, rgb: readonly [number, number, number], tolerance = 24) {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -1;
  let y1 = -1;
  let count = 0;
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      const i = (y * img.width + x) * img.channels;
      if (
        Math.abs(img.data[i]! - rgb[0]) <= tolerance &&
        Math.abs(img.data[i + 1]! - rgb[1]) <= tolerance &&
        Math.abs(img.data[i + 2]! - rgb[2]) <= tolerance
      ) {
        count++;
        if (x < x0) x0 = x;
        if (y < y0) y0 = y;
        if (x > x1) x1 = x;
        if (y > y1) y1 = y;
      }
    }
  }
  return count ? { x: x0, y: y0, width: x1 - x0 + 1, height: y1 - y0 + 1, count } : null;
}

export async function photoHarness(options: TestAppOptions = {}) {
  const h = await createTestApp({ ...options, env: { RATE_LIMIT_PHOTO: "1000", ...options.env } });
  const { apiKey, userId } = await h.createUser();
  const post = (body: unknown, headers: Record<string, string> = {}, key = apiKey) =>
    h.app.request("/api/image/product-photography", { method: "POST", headers: h.json(key, headers), body: JSON.stringify(body) });
  /** The `data` of a GET that must answer 200 (the credits, a job). */
  const get = async (path: string): Promise<Record<string, any>> => {
    const res = await h.app.request(path, { headers: h.auth(apiKey) });
    expect(res.status, path).toBe(200);
    return ((await res.json()) as { data: Record<string, any> }).data;
  };
  return { ...h, apiKey, userId, post, get };
}

export type PhotoHarness = Awaited<ReturnType<typeof photoHarness>>;
