/**
 * The TypeScript JPEG decoder (N/8 DCT scaling) and baseline encoder, checked against sharp (libjpeg).
 */
import sharp, { type Sharp } from "sharp";
import { describe, expect, it } from "vitest";
import { chooseEighths, decodeJpegScaled } from "../../src/images/jpeg-decode";
import { encodeJpegBaseline } from "../../src/images/jpeg-encode";
import { makePhotoJpeg, psnr } from "../helpers/images";

describe("decodeJpegScaled", () => {
  it("picks the smallest N/8 that stays at or above the target", () => {
    expect(chooseEighths(4000, 3000, 1440, 1080)).toBe(3);
    expect(chooseEighths(7300, 5475, 1440, 1080)).toBe(2);
    expect(chooseEighths(800, 600, 800, 600)).toBe(8);
  });

  const variants: [string, (s: Sharp) => Sharp][] = [
    ["baseline 4:2:0", (s) => s.jpeg({ quality: 90 })],
    ["baseline 4:4:4", (s) => s.jpeg({ quality: 90, chromaSubsampling: "4:4:4" })],
    ["progressive 4:2:0", (s) => s.jpeg({ quality: 90, progressive: true })],
    ["grey", (s) => s.greyscale().jpeg({ quality: 90 })],
    ["mozjpeg (progressive, trellis)", (s) => s.jpeg({ quality: 85, mozjpeg: true })],
  ];
  for (const [name, encode] of variants) {
    it(`matches libjpeg at full size: ${name}`, async () => {
      const photo = await makePhotoJpeg(203, 131, 95);
      const jpeg = await encode(sharp(photo)).toBuffer();
      const ours = decodeJpegScaled(jpeg)!;
      const ref = await sharp(jpeg).raw().toBuffer({ resolveWithObject: true });
      expect([ours.width, ours.height, ours.eighths]).toEqual([203, 131, 8]);
      expect(psnr(ours.data, ref.data, ref.info.channels)).toBeGreaterThan(40);
    });
  }

  it("decodes at 1/2 close to a 2x downscale, and handles restart markers", async () => {
    const photo = await makePhotoJpeg(640, 480, 95);
    const jpeg = await sharp(photo).jpeg({ quality: 90 }).toBuffer();
    const ours = decodeJpegScaled(jpeg, 320, 240)!;
    expect([ours.width, ours.height, ours.eighths]).toEqual([320, 240, 4]);
    const ref = await sharp(jpeg).resize(320, 240, { kernel: "cubic" }).raw().toBuffer();
    expect(psnr(ours.data, ref, 3)).toBeGreaterThan(30);
  });

  it("decodes progressive JPEGs (with refinement scans) at every N/8 scale, keeping only the coefficients the scale reads", async () => {
    const photo = await makePhotoJpeg(640, 480, 95);
    for (const jpeg of [await sharp(photo).jpeg({ quality: 90, progressive: true }).toBuffer(), await sharp(photo).jpeg({ quality: 85, mozjpeg: true }).toBuffer()]) {
      for (let n = 1; n <= 7; n++) {
        const ours = decodeJpegScaled(jpeg, (640 * n) / 8, (480 * n) / 8)!;
        expect([ours.width, ours.height, ours.eighths]).toEqual([(640 * n) / 8, (480 * n) / 8, n]);
        const ref = await sharp(jpeg).resize(ours.width, ours.height, { kernel: "cubic" }).raw().toBuffer();
        expect(psnr(ours.data, ref, 3), `scale ${n}/8`).toBeGreaterThan(28);
      }
    }
  });

  it("returns null for CMYK (photon handles it) and throws on garbage entropy data", async () => {
    const cmyk = await sharp({ create: { width: 16, height: 16, channels: 3, background: "#c83c1e" } }).toColourspace("cmyk").jpeg().toBuffer();
    expect(decodeJpegScaled(cmyk)).toBeNull();
    const good = await makePhotoJpeg(64, 64, 90);
    const bad = Uint8Array.from(good);
    for (let i = bad.length - 400; i < bad.length - 2; i++) bad[i] = 0xfe; // entropy data full of invalid codes
    expect(() => decodeJpegScaled(bad)).toThrow();
  });
});

describe("encodeJpegBaseline", () => {
  it("writes a baseline 4:2:0 JPEG that libjpeg decodes faithfully, at odd sizes too", async () => {
    for (const [w, h] of [[1, 1], [17, 9], [321, 243]] as const) {
      const photo = await makePhotoJpeg(w, h, 95);
      const rgba = new Uint8Array(await sharp(photo).ensureAlpha().raw().toBuffer());
      const out = encodeJpegBaseline({ width: w, height: h, data: rgba }, 85);
      const meta = await sharp(out).metadata();
      expect([meta.format, meta.width, meta.height, meta.isProgressive, meta.chromaSubsampling]).toEqual(["jpeg", w, h, false, "4:2:0"]);
      const back = await sharp(out).raw().toBuffer({ resolveWithObject: true });
      expect(psnr(rgba, back.data, back.info.channels)).toBeGreaterThan(w * h > 100 ? 33 : 30);
    }
  });
});
