/**
 * Social normalisation and orientation: sizes, EXIF orientation for all eight values (checked against sharp's
 * autoOrient), transparency onto white, and output hygiene (JPEG, 8-bit sRGB, no EXIF).
 */
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import type { ApiError } from "../../src/http/errors";
import { decodeImage, encodePng, normaliseToJpeg, planSocialSize, readImageHeader, resizeRgba, sniffImage } from "../../src/images";
import { BLUE, GREEN, RED, YELLOW, makeJpeg, makePhotoJpeg, makePng, makeWebp, near, pixelAt } from "../helpers/images";

describe("planSocialSize", () => {
  it.each([
    [4000, 3000, 1440, 1080],
    [3000, 4000, 1350, 1800],
    [1440, 1800, 1440, 1800],
    [800, 600, 800, 600],
    [200, 300, 320, 480],
    [100, 562, 320, 1798],
    [10000, 100, 1440, 14],
  ])("%ix%i -> %ix%i", (w, h, ew, eh) => {
    expect(planSocialSize(w, h)).toEqual({ width: ew, height: eh });
  });

  it("refuses an image that would pass 1800 high when enlarged to 320 wide", () => {
    expect(() => planSocialSize(100, 1000)).toThrowError(/too narrow.*3200 pixels high/);
    try {
      planSocialSize(100, 1000);
    } catch (err) {
      expect((err as ApiError).code).toBe("INVALID_IMAGE");
      expect((err as ApiError).status).toBe(422);
    }
  });
});

describe("normaliseToJpeg", () => {
  it("scales a 12 MP JPEG down to fit 1440x1800 and stays under 8 MB", async () => {
    const out = await normaliseToJpeg(await makePhotoJpeg(4000, 3000));
    expect(out).toMatchObject({ width: 1440, height: 1080, mimeType: "image/jpeg" });
    expect(out.bytes.length).toBeLessThan(8 * 1024 * 1024);
    const meta = await sharp(out.bytes).metadata();
    expect(meta).toMatchObject({ format: "jpeg", width: 1440, height: 1080, channels: 3, space: "srgb", depth: "uchar" });
  });

  it("scales a portrait image to the 1800 height limit", async () => {
    const out = await normaliseToJpeg(await makePhotoJpeg(1500, 2400));
    expect([out.width, out.height]).toEqual([1125, 1800]);
  });

  it("enlarges a narrow image to 320 wide", async () => {
    const out = await normaliseToJpeg(await makePng(100, 150));
    expect([out.width, out.height]).toEqual([320, 480]);
    expect(sniffImage(out.bytes)).toMatchObject({ format: "jpeg", width: 320, height: 480 });
  });

  it("refuses a too-narrow image with 422", async () => {
    await expect(normaliseToJpeg(await makePng(50, 1000))).rejects.toMatchObject({ code: "INVALID_IMAGE", status: 422 });
  });

  it("applies EXIF orientation 6 (rotate 90 clockwise) and strips EXIF", async () => {
    // Stored 800x400: left half red/blue... quadrants TL red, TR green, BL blue, BR yellow.
    const jpeg = await makeJpeg(800, 400, { orientation: 6 });
    const out = await normaliseToJpeg(jpeg);
    expect([out.width, out.height]).toEqual([400, 800]);
    // Upright: what was bottom-left (blue) is now top-left; top-left (red) is now top-right.
    expect(near(await pixelAt(out.bytes, 50, 50), BLUE)).toBe(true);
    expect(near(await pixelAt(out.bytes, 350, 50), RED)).toBe(true);
    expect(near(await pixelAt(out.bytes, 50, 750), YELLOW)).toBe(true);
    expect(near(await pixelAt(out.bytes, 350, 750), GREEN)).toBe(true);
    const meta = await sharp(out.bytes).metadata();
    expect(meta.orientation).toBeUndefined();
    expect(meta.exif).toBeUndefined();
  });

  it("flattens a transparent PNG onto white, not black", async () => {
    const out = await normaliseToJpeg(await makePng(400, 400, { alpha: 0 }));
    expect(near(await pixelAt(out.bytes, 200, 200), [255, 255, 255], 3)).toBe(true);
    const half = await normaliseToJpeg(await makePng(400, 400, { alpha: 0.5, colour: [0, 0, 0] }));
    expect(near(await pixelAt(half.bytes, 200, 200), [128, 128, 128], 6)).toBe(true);
  });

  it("converts WebP and a 16-bit PNG to JPEG", async () => {
    for (const input of [await makeWebp(500, 400), await makePng(500, 400, { depth16: true })]) {
      const out = await normaliseToJpeg(input);
      expect((await sharp(out.bytes).metadata()).format).toBe("jpeg");
      expect([out.width, out.height]).toEqual([500, 400]);
    }
  });
});

describe("decodeImage orientation matches sharp's autoOrient for all eight EXIF values", () => {
  for (let orientation = 1; orientation <= 8; orientation++) {
    it(`orientation ${orientation}`, async () => {
      const jpeg = await makeJpeg(60, 40, { orientation });
      const ours = decodeImage(jpeg);
      const ref = await sharp(jpeg).rotate().raw().toBuffer({ resolveWithObject: true });
      expect([ours.width, ours.height]).toEqual([ref.info.width, ref.info.height]);
      for (const [fx, fy] of [
        [0.25, 0.25],
        [0.75, 0.25],
        [0.25, 0.75],
        [0.75, 0.75],
      ] as const) {
        const x = Math.floor(ours.width * fx);
        const y = Math.floor(ours.height * fy);
        const i = y * ours.width + x;
        expect(near(ours.data.subarray(i * 4, i * 4 + 3), ref.data.subarray(i * ref.info.channels, i * ref.info.channels + 3))).toBe(true);
      }
    });
  }
});

describe("helpers for other areas", () => {
  it("readImageHeader reports the EXIF orientation; sniffImage the stored size", async () => {
    const jpeg = await makeJpeg(60, 40, { orientation: 6 });
    expect(sniffImage(jpeg)).toEqual({ format: "jpeg", mimeType: "image/jpeg", width: 60, height: 40 });
    expect(readImageHeader(jpeg)).toMatchObject({ width: 60, height: 40, orientation: 6, components: 3 });
    expect(readImageHeader(await makePng(5, 5)).orientation).toBe(1);
  });

  it("resizeRgba and encodePng round-trip", async () => {
    const rgba = decodeImage(await makePng(64, 32, { colour: [10, 20, 30], alpha: 0.5 }));
    const small = resizeRgba(rgba, 16, 8);
    expect([small.width, small.height, small.data.length]).toEqual([16, 8, 16 * 8 * 4]);
    const png = encodePng(small);
    expect(sniffImage(png)).toMatchObject({ format: "png", width: 16, height: 8 });
    expect(Array.from(decodeImage(png).data.slice(0, 4))).toEqual([10, 20, 30, 128]);
  });
});

describe("resizeRgba", () => {
  const solid = (w: number, h: number, rgba: number[]) => ({ width: w, height: h, data: new Uint8Array(w * h * 4).map((_, i) => rgba[i % 4]!) });

  it.each([
    [4000, 3000, 1440, 1080],
    [1000, 10, 7, 3],
    [33, 17, 320, 165],
    [5000, 40, 20, 40],
  ])("keeps a flat colour exactly flat: %ix%i -> %ix%i", (sw, sh, dw, dh) => {
    const out = resizeRgba(solid(sw, sh, [12, 200, 77, 255]), dw, dh);
    expect([out.width, out.height]).toEqual([dw, dh]);
    expect(new Set(new Uint32Array(out.data.buffer)).size).toBe(1);
    expect(Array.from(out.data.slice(0, 4))).toEqual([12, 200, 77, 255]);
  });

  it("averages a 1-pixel checkerboard to grey (antialiased, no moire)", () => {
    const w = 1200;
    const board = { width: w, height: w, data: new Uint8Array(w * w * 4) };
    for (let i = 0; i < w * w; i++) {
      const v = ((i % w) + Math.floor(i / w)) % 2 ? 255 : 0;
      board.data.set([v, v, v, 255], i * 4);
    }
    const out = resizeRgba(board, 431, 431);
    for (let i = 0; i < out.data.length; i += 4) expect(Math.abs(out.data[i]! - 128)).toBeLessThanOrEqual(40);
  });

  it("is close to sharp's Lanczos3 on a photo (PSNR > 32 dB)", async () => {
    const photo = decodeImage(await makePhotoJpeg(2000, 1500));
    const ours = resizeRgba(photo, 700, 525);
    const ref = await sharp(Buffer.from(photo.data), { raw: { width: 2000, height: 1500, channels: 4 } })
      .resize(700, 525, { kernel: "lanczos3" })
      .raw()
      .toBuffer();
    let se = 0;
    for (let i = 0; i < ref.length; i++) if (i % 4 !== 3) se += (ours.data[i]! - ref[i]!) ** 2;
    const psnr = 10 * Math.log10((255 * 255) / (se / ((ref.length * 3) / 4)));
    expect(psnr).toBeGreaterThan(32);
  });
});
