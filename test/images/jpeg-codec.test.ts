/**
 * The TypeScript JPEG decoder (N/8 DCT scaling) and baseline encoder, checked against sharp (libjpeg).
 */
import sharp, { type Sharp } from "sharp";
import { describe, expect, it } from "vitest";
import { decodeImage } from "../../src/images";
import { chooseEighths, decodeJpegGray, decodeJpegScaled } from "../../src/images/jpeg-decode";
import { toGray } from "../../src/qr/raster";
import { encodeJpegBaseline } from "../../src/images/jpeg-encode";
import { makePhotoJpeg, psnr } from "../helpers/images";

/** The YCbCr and grey JPEGs libjpeg writes, as sharp's options name them. */
const variants: [string, (s: Sharp) => Sharp][] = [
  ["baseline 4:2:0", (s) => s.jpeg({ quality: 90 })],
  ["baseline 4:4:4", (s) => s.jpeg({ quality: 90, chromaSubsampling: "4:4:4" })],
  ["progressive 4:2:0", (s) => s.jpeg({ quality: 90, progressive: true })],
  ["grey", (s) => s.greyscale().jpeg({ quality: 90 })],
  ["mozjpeg (progressive, trellis)", (s) => s.jpeg({ quality: 85, mozjpeg: true })],
];

describe("decodeJpegScaled", () => {
  it("picks the smallest N/8 that stays at or above the target", () => {
    expect(chooseEighths(4000, 3000, 1440, 1080)).toBe(3);
    expect(chooseEighths(7300, 5475, 1440, 1080)).toBe(2);
    expect(chooseEighths(800, 600, 800, 600)).toBe(8);
  });

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
    for (const jpeg of [
      await sharp(photo).jpeg({ quality: 90, progressive: true }).toBuffer(),
      await sharp(photo).jpeg({ quality: 85, mozjpeg: true }).toBuffer(),
    ]) {
      for (let n = 1; n <= 7; n++) {
        const ours = decodeJpegScaled(jpeg, (640 * n) / 8, (480 * n) / 8)!;
        expect([ours.width, ours.height, ours.eighths]).toEqual([(640 * n) / 8, (480 * n) / 8, n]);
        const ref = await sharp(jpeg).resize(ours.width, ours.height, { kernel: "cubic" }).raw().toBuffer();
        expect(psnr(ours.data, ref, 3), `scale ${n}/8`).toBeGreaterThan(28);
      }
    }
  });

  it("decodes CMYK and YCCK, baseline and progressive, as photon does, at full size and at every N/8 scale", async () => {
    const photo = await makePhotoJpeg(320, 240, 95);
    for (const progressive of [false, true]) {
      const cmyk = await sharp(photo).toColourspace("cmyk").jpeg({ quality: 90, progressive }).toBuffer();
      const ycck = Buffer.from(cmyk);
      const adobe = ycck.indexOf(Buffer.from("Adobe"));
      expect(ycck[adobe + 11]).toBe(0);
      ycck[adobe + 11] = 2; // the same data read as YCCK: other colours, which photon must agree on
      for (const [name, jpeg] of [
        ["cmyk", cmyk],
        ["ycck", ycck],
      ] as const) {
        const photon = decodeImage(jpeg);
        const ours = decodeJpegScaled(jpeg)!;
        expect([ours.width, ours.height, ours.eighths]).toEqual([320, 240, 8]);
        expect(psnr(ours.data, photon.data, 4), `${name}, progressive ${progressive}`).toBeGreaterThan(45);
        for (let n = 1; n <= 7; n++) {
          const scaled = decodeJpegScaled(jpeg, (320 * n) / 8, (240 * n) / 8)!;
          expect([scaled.width, scaled.height, scaled.eighths]).toEqual([(320 * n) / 8, (240 * n) / 8, n]);
          const ref = await sharp(Buffer.from(photon.data), { raw: { width: 320, height: 240, channels: 4 } })
            .resize(scaled.width, scaled.height, { kernel: "cubic" })
            .raw()
            .toBuffer();
          expect(psnr(scaled.data, ref, 4), `${name} at ${n}/8, progressive ${progressive}`).toBeGreaterThan(28);
        }
      }
      expect(Buffer.from(decodeJpegScaled(ycck)!.data).equals(Buffer.from(decodeJpegScaled(cmyk)!.data))).toBe(false);
    }
  });

  it("reads entropy data many times longer than its 64 KiB window, baseline and progressive", async () => {
    const { width, height } = { width: 1200, height: 900 };
    const noise = Buffer.alloc(width * height * 3);
    let seed = 7;
    for (let i = 0; i < noise.length; i++) noise[i] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
    for (const progressive of [false, true]) {
      // 4:4:4: on noise, libjpeg's smoothing chroma upsampling and ours would differ more than the decoders do.
      const jpeg = await sharp(noise, { raw: { width, height, channels: 3 } })
        .jpeg({ quality: 95, progressive, chromaSubsampling: "4:4:4" })
        .toBuffer();
      expect(jpeg.length).toBeGreaterThan(8 * 64 * 1024);
      const ours = decodeJpegScaled(jpeg)!;
      const ref = await sharp(jpeg).raw().toBuffer({ resolveWithObject: true });
      expect(psnr(ours.data, ref.data, ref.info.channels), `progressive ${progressive}`).toBeGreaterThan(40);
    }
  });

  it("throws on garbage entropy data", async () => {
    const good = await makePhotoJpeg(64, 64, 90);
    const bad = Uint8Array.from(good);
    for (let i = bad.length - 400; i < bad.length - 2; i++) bad[i] = 0xfe; // entropy data full of invalid codes
    expect(() => decodeJpegScaled(bad)).toThrow();
  });
});

describe("decodeJpegGray", () => {
  for (const [name, encode] of variants) {
    it(`gives the luma of the colour decode at every N/8 scale: ${name}`, async () => {
      const jpeg = await encode(sharp(await makePhotoJpeg(203, 131, 95))).toBuffer();
      for (let n = 1; n <= 8; n++) {
        const min = Math.ceil((203 * n) / 8);
        const gray = decodeJpegGray(jpeg, min, 1)!;
        const colour = decodeJpegScaled(jpeg, min, 1)!;
        expect([gray.width, gray.height, gray.eighths]).toEqual([colour.width, colour.height, n]);
        expect(gray.data.length).toBe(gray.width * gray.height);
        // Y against BT.601 luma of the RGB made from Y, Cb and Cr: equal but for rounding, and for clamping
        // where a colour is out of RGB's range.
        const luma = toGray(colour).data;
        let worst = 0;
        let total = 0;
        for (let i = 0; i < luma.length; i++) {
          const d = Math.abs(gray.data[i]! - luma[i]!);
          worst = Math.max(worst, d);
          total += d;
        }
        expect(worst, `${n}/8`).toBeLessThanOrEqual(8);
        expect(total / luma.length, `${n}/8`).toBeLessThan(1);
      }
    });
  }

  it("never reads a progressive file's chroma scans: damage there changes nothing", async () => {
    const jpeg = await sharp(await makePhotoJpeg(320, 240, 95))
      .jpeg({ quality: 90, progressive: true })
      .toBuffer();
    // The scans as libjpeg writes them: the first names all three components (DC), later ones one each.
    // Each scan's entropy data: from the end of its SOS segment to the next marker.
    const scans: { chroma: boolean; start: number; end: number }[] = [];
    for (let pos = 2; pos + 4 <= jpeg.length; ) {
      if (jpeg[pos] !== 0xff || jpeg[pos + 1] === 0x00 || (jpeg[pos + 1]! >= 0xd0 && jpeg[pos + 1]! <= 0xd7)) {
        pos++;
        continue;
      }
      const last = scans.at(-1);
      if (last && !last.end) last.end = pos;
      if (jpeg[pos + 1] === 0xd9) break;
      const length = jpeg.readUInt16BE(pos + 2);
      if (jpeg[pos + 1] === 0xda) scans.push({ chroma: jpeg[pos + 4] === 1 && jpeg[pos + 5] !== 1, start: pos + 2 + length, end: 0 });
      else scans.push({ chroma: false, start: 0, end: -1 });
      pos += 2 + length;
    }
    const chroma = scans.filter((scan) => scan.chroma);
    expect(chroma.length).toBeGreaterThan(1);
    const damaged = Buffer.from(jpeg);
    for (const scan of chroma) damaged.fill(0xfe, scan.start, scan.end);
    const before = decodeJpegGray(jpeg)!;
    expect(Buffer.from(decodeJpegGray(damaged)!.data).equals(Buffer.from(before.data))).toBe(true);
    // The colour decode reads those scans, and does not come out the same.
    let same: boolean;
    try {
      same = Buffer.from(decodeJpegScaled(damaged)!.data).equals(Buffer.from(decodeJpegScaled(jpeg)!.data));
    } catch {
      same = false;
    }
    expect(same).toBe(false);
  });

  it("gives a CMYK or YCCK JPEG's luma exactly as the reader's grey of its colours, at every N/8 scale", async () => {
    const cmyk = await sharp(await makePhotoJpeg(203, 131, 95))
      .toColourspace("cmyk")
      .jpeg({ quality: 90 })
      .toBuffer();
    const ycck = Buffer.from(cmyk);
    ycck[ycck.indexOf(Buffer.from("Adobe")) + 11] = 2;
    for (const jpeg of [cmyk, ycck]) {
      for (let n = 1; n <= 8; n++) {
        const min = Math.ceil((203 * n) / 8);
        const gray = decodeJpegGray(jpeg, min, 1)!;
        const colour = decodeJpegScaled(jpeg, min, 1)!;
        expect([gray.width, gray.height, gray.eighths]).toEqual([colour.width, colour.height, n]);
        expect(Buffer.from(gray.data).equals(Buffer.from(toGray(colour).data)), `${n}/8`).toBe(true);
      }
    }
  });

  it("returns null for RGB stored as it is", async () => {
    const photo = await makePhotoJpeg(64, 48, 95);
    const rgb = Buffer.from(await sharp(photo).jpeg({ quality: 90, chromaSubsampling: "4:4:4" }).toBuffer());
    // Component ids 'R', 'G', 'B', in the frame and in the scan.
    const sof = rgb.indexOf(Buffer.from([0xff, 0xc0]));
    const sos = rgb.indexOf(Buffer.from([0xff, 0xda]));
    for (const [i, id] of [0x52, 0x47, 0x42].entries()) {
      rgb[sof + 10 + 3 * i] = id;
      rgb[sos + 5 + 2 * i] = id;
    }
    expect(decodeJpegScaled(rgb)).not.toBeNull();
    expect(decodeJpegGray(rgb)).toBeNull();
  });
});

describe("encodeJpegBaseline", () => {
  it("writes a baseline 4:2:0 JPEG that libjpeg decodes faithfully, at odd sizes too", async () => {
    for (const [w, h] of [
      [1, 1],
      [17, 9],
      [321, 243],
    ] as const) {
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
