/**
 * The JPEG -> JPEG fast path of normalisation (YCbCr planes: scaled decode, per-plane resize and orientation,
 * encode from the planes) against sharp, and the plane helpers on their own.
 */
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { normaliseToJpeg } from "../../src/images";
import { decodeJpegPlanes } from "../../src/images/jpeg-decode";
import { encodeJpegPlanes, encodeJpegRowsFrom } from "../../src/images/jpeg-encode";
import { orientPlane, resizePlane, type Plane } from "../../src/images/planes";
import { applyOrientation } from "../../src/images/exif";
import { makePhotoJpeg } from "../helpers/images";

async function psnrAgainst(ours: Uint8Array, ref: Uint8Array): Promise<number> {
  const a = await sharp(ours).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const b = await sharp(ref).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  expect([a.info.width, a.info.height]).toEqual([b.info.width, b.info.height]);
  let se = 0;
  for (let i = 0; i < a.data.length; i++) se += (a.data[i]! - b.data[i]!) ** 2;
  return 10 * Math.log10((255 * 255) / (se / a.data.length));
}

describe("normaliseToJpeg through YCbCr planes", () => {
  it("matches sharp's rotate + resize for all eight EXIF orientations", async () => {
    const photo = await makePhotoJpeg(1200, 800, 90);
    for (let orientation = 1; orientation <= 8; orientation++) {
      const jpeg = await sharp(photo).withMetadata({ orientation }).jpeg({ quality: 90 }).toBuffer();
      const out = await normaliseToJpeg(jpeg);
      const ref = await sharp(jpeg).rotate().jpeg({ quality: 95 }).toBuffer();
      expect([out.width, out.height]).toEqual(orientation >= 5 ? [800, 1200] : [1200, 800]);
      expect(await psnrAgainst(out.bytes, ref)).toBeGreaterThan(34);
    }
  });

  it.each(["4:2:0", "4:4:4"] as const)("downscales a %s JPEG at 3/8 scale close to sharp", async (chromaSubsampling) => {
    const jpeg = await sharp(await makePhotoJpeg(4000, 3000, 85))
      .jpeg({ quality: 90, chromaSubsampling })
      .toBuffer();
    const out = await normaliseToJpeg(jpeg);
    expect([out.width, out.height]).toEqual([1440, 1080]);
    const ref = await sharp(jpeg).resize(1440, 1080, { kernel: "lanczos3" }).jpeg({ quality: 95 }).toBuffer();
    expect(await psnrAgainst(out.bytes, ref)).toBeGreaterThan(32);
  });

  it("normalises a greyscale JPEG (neutral chroma)", async () => {
    const grey = await sharp(await makePhotoJpeg(900, 600))
      .greyscale()
      .jpeg({ quality: 90 })
      .toBuffer();
    const out = await normaliseToJpeg(grey);
    const { data, info } = await sharp(out.bytes).raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height]).toEqual([900, 600]);
    let maxChroma = 0;
    for (let i = 0; i < data.length; i += 3) maxChroma = Math.max(maxChroma, Math.abs(data[i]! - data[i + 1]!), Math.abs(data[i]! - data[i + 2]!));
    expect(maxChroma).toBeLessThanOrEqual(3);
    expect(await psnrAgainst(out.bytes, await sharp(grey).jpeg({ quality: 95 }).toBuffer())).toBeGreaterThan(34);
  });

  it("handles odd sizes (chroma rounded up) and small enlargements", async () => {
    const odd = await sharp(await makePhotoJpeg(600, 400))
      .resize(333, 201, { fit: "fill" })
      .jpeg({ quality: 90 })
      .toBuffer();
    const out = await normaliseToJpeg(odd);
    expect([out.width, out.height]).toEqual([333, 201]);
    expect(await psnrAgainst(out.bytes, await sharp(odd).jpeg({ quality: 95 }).toBuffer())).toBeGreaterThan(34);
    const narrow = await sharp(await makePhotoJpeg(600, 400))
      .resize(201, 301, { fit: "fill" })
      .jpeg({ quality: 90 })
      .toBuffer();
    const up = await normaliseToJpeg(narrow);
    expect([up.width, up.height]).toEqual([320, 479]);
  });
});

describe("plane helpers", () => {
  const plane = (width: number, height: number, f: (x: number, y: number) => number): Plane => {
    const data = new Uint8Array(width * height);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data[y * width + x] = f(x, y);
    return { width, height, stride: width, data };
  };

  it.each([
    [1500, 1125, 1440, 1080],
    [4000, 3000, 1440, 1080],
    [750, 563, 720, 540],
    [100, 150, 320, 480],
    [3, 2, 1, 1],
  ])("resizePlane keeps a flat plane exactly flat: %ix%i -> %ix%i", (sw, sh, dw, dh) => {
    const out = resizePlane(
      plane(sw, sh, () => 173),
      dw,
      dh,
    );
    expect([out.width, out.height, out.stride]).toEqual([dw, dh, dw]);
    expect(out.data.subarray(0, dw * dh).every((v) => v === 173)).toBe(true);
  });

  it("resizePlane honours the source stride", () => {
    const src = plane(20, 10, (x) => (x < 16 ? 50 : 250)); // columns 16.. are padding
    const out = resizePlane({ ...src, width: 16 }, 8, 5);
    expect(out.data.every((v) => v === 50)).toBe(true);
  });

  it("orientPlane matches applyOrientation on RGBA for all eight values", () => {
    const p = plane(7, 4, (x, y) => y * 7 + x);
    const rgba = new Uint8Array(7 * 4 * 4);
    for (let i = 0; i < 28; i++) rgba[i * 4] = i;
    for (let orientation = 1; orientation <= 8; orientation++) {
      const a = orientPlane(p, orientation);
      const b = applyOrientation({ width: 7, height: 4, data: rgba }, orientation);
      expect([a.width, a.height]).toEqual([b.width, b.height]);
      expect(Array.from(a.data.subarray(0, a.width * a.height))).toEqual(Array.from({ length: 28 }, (_, i) => b.data[i * 4]));
    }
  });

  it("decodeJpegPlanes -> encodeJpegPlanes round-trips a photo", async () => {
    const jpeg = await makePhotoJpeg(640, 480, 90);
    const img = decodeJpegPlanes(jpeg)!;
    expect([img.width, img.height, img.cb.width, img.cb.height]).toEqual([640, 480, 320, 240]);
    const out = encodeJpegPlanes({ ...img, cb: resizePlane(img.cb, 320, 240), cr: resizePlane(img.cr, 320, 240) }, 90);
    expect(await psnrAgainst(out, jpeg)).toBeGreaterThan(36);
    expect(() => encodeJpegPlanes({ ...img, cb: { width: 10, height: 10, stride: 10, data: new Uint8Array(100) } })).toThrow(RangeError);
  });

  it("codes each MCU row as its own restart interval, so a first part and encodeJpegRowsFrom's rest make the whole file", async () => {
    const jpeg = await makePhotoJpeg(1001, 733, 90);
    const img = decodeJpegPlanes(jpeg)!;
    const planes = { ...img, cb: resizePlane(img.cb, 501, 367), cr: resizePlane(img.cr, 501, 367) };
    const whole = Buffer.from(encodeJpegPlanes(planes, 85));
    // DRI: 63 MCUs (one row of 1001 / 16) per interval; 46 rows, so RST0..7 cycle through 45 markers.
    expect(whole.includes(Buffer.from([0xff, 0xdd, 0, 4, 0, 63]))).toBe(true);
    let markers = 0;
    for (let i = whole.indexOf(Buffer.from([0xff, 0xda])); i < whole.length - 1; i++)
      if (whole[i] === 0xff && whole[i + 1]! >= 0xd0 && whole[i + 1]! <= 0xd7) markers++;
    expect(markers).toBe(45);
    expect(await psnrAgainst(whole, jpeg)).toBeGreaterThan(34);
    for (const cut of [1, 2, 9, 22, 45]) {
      const first = encodeJpegPlanes(planes, 85, (my) => my < cut);
      expect(first.subarray(-2), `cut ${cut}`).not.toEqual(new Uint8Array([0xff, 0xd9]));
      // The rest reads no row above its own (the thread that makes it never fills them).
      const above = (p: Plane, rows: number): Plane => {
        const data = p.data.slice();
        data.fill(0, 0, rows * p.stride);
        return { ...p, data };
      };
      const lower = { ...planes, y: above(planes.y, 16 * cut), cb: above(planes.cb, 8 * cut), cr: above(planes.cr, 8 * cut) };
      const joined = Buffer.concat([first, encodeJpegRowsFrom(lower, 85, cut)]);
      expect(joined.equals(whole), `cut ${cut}`).toBe(true);
    }
    expect(() => encodeJpegRowsFrom(planes, 85, 0)).toThrow(RangeError);
    expect(() => encodeJpegRowsFrom(planes, 85, 46)).toThrow(RangeError);
  });
});
