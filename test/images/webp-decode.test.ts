/**
 * The TypeScript WebP decoder (lossy VP8, lossless VP8L, the alpha chunk, the RIFF container), checked
 * pixel for pixel against libwebp (through sharp) on files libwebp's own encoder writes: cwebp (Debian's
 * `webp` package, which .ci/run installs) for every encoder setting that changes what the decoder meets,
 * sharp for the rest. Without cwebp (a developer machine) those cases are skipped with a note; under CI
 * they are required.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeImage } from "../../src/images";
import { decodeWebp, decodeWebpLuma } from "../../src/images/webp-decode";
import { photoPixels } from "../helpers/images";

const haveTools = ["cwebp", "dwebp"].every((tool) => spawnSync(tool, ["-version"]).status === 0);
if (process.env.CI && !haveTools) throw new Error("cwebp and dwebp are missing: .ci/run installs Debian's webp package");
if (!haveTools) console.warn("webp-decode: the cwebp cases are skipped; apt-get install webp to run them");
/** A case that needs cwebp or dwebp. */
const withTools = it.skipIf(!haveTools);

const dir = mkdtempSync(join(tmpdir(), "webp-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let photoPng: string;
let alphaPng: string;
let palettePng: string;

beforeAll(async () => {
  const [w, h] = [203, 131];
  const rgb = await photoPixels(w, h);
  const rgba = Buffer.alloc(w * h * 4);
  for (let i = 0; i < w * h; i++) {
    rgb.copy(rgba, i * 4, i * 3, i * 3 + 3);
    const x = i % w;
    const y = Math.floor(i / w);
    rgba[i * 4 + 3] = Math.min(255, Math.hypot(x - w / 2, y - h / 2) * 3); // a transparent centre, a soft edge
  }
  photoPng = join(dir, "photo.png");
  alphaPng = join(dir, "alpha.png");
  palettePng = join(dir, "palette.png");
  await sharp(rgb, { raw: { width: w, height: h, channels: 3 } })
    .png()
    .toFile(photoPng);
  await sharp(rgba, { raw: { width: w, height: h, channels: 4 } })
    .png()
    .toFile(alphaPng);
  await sharp(rgba, { raw: { width: w, height: h, channels: 4 } })
    .png({ palette: true, colours: 12 })
    .toFile(palettePng);
});

/** cwebp's output for `input` with `args`. */
function cwebp(input: string, args: string[]): Uint8Array {
  const out = join(dir, "out.webp");
  execFileSync("cwebp", ["-quiet", ...args, input, "-o", out]);
  return new Uint8Array(readFileSync(out));
}

async function libwebpRgba(webp: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await sharp(webp).ensureAlpha().raw().toBuffer());
}

/** The number of bytes that differ (0 when the decodes are identical). */
function differing(a: Uint8Array, b: Uint8Array): number {
  expect(a.length).toBe(b.length);
  let n = 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) n++;
  return n;
}

async function expectSameAsLibwebp(webp: Uint8Array): Promise<void> {
  const ours = decodeWebp(webp);
  const ref = await sharp(webp).metadata();
  expect([ours.width, ours.height]).toEqual([ref.width, ref.height]);
  expect(differing(ours.data, await libwebpRgba(webp))).toBe(0);
}

describe("decodeWebp: lossy (VP8), identical to libwebp", () => {
  const settings: [string, string[]][] = [
    ["quality 75, normal filter, 4 segments", ["-q", "75"]],
    ["quality 5 (coarse quantisers, large coefficients)", ["-q", "5"]],
    ["quality 100 (fine quantisers)", ["-q", "100"]],
    ["simple loop filter", ["-q", "60", "-nostrong"]],
    ["no loop filter", ["-q", "60", "-f", "0"]],
    ["strongest filter, sharpness 7", ["-q", "40", "-f", "100", "-sharpness", "7"]],
    ["sharpness 3, auto filter", ["-q", "50", "-sharpness", "3", "-af"]],
    ["one segment, no noise shaping", ["-q", "70", "-segments", "1", "-sns", "0"]],
    ["strongest noise shaping (segment quantisers differ most)", ["-q", "70", "-sns", "100"]],
    ["fastest method (m 0)", ["-q", "80", "-m", "0"]],
    ["slowest method (m 6, trellis)", ["-q", "80", "-m", "6"]],
    ["sharp YUV conversion", ["-q", "80", "-sharp_yuv"]],
  ];
  for (const [name, args] of settings) {
    withTools(name, async () => {
      await expectSameAsLibwebp(cwebp(photoPng, args));
    });
  }

  it("odd and tiny sizes (partial macroblocks, one pixel)", async () => {
    const raw = await photoPixels(67, 45);
    for (const [w, h] of [
      [1, 1],
      [17, 9],
      [16, 16],
      [67, 45],
    ] as const) {
      const webp = await sharp(raw, { raw: { width: 67, height: 45, channels: 3 } })
        .extract({ left: 0, top: 0, width: w, height: h })
        .webp({ quality: 80 })
        .toBuffer();
      await expectSameAsLibwebp(new Uint8Array(webp));
    }
  });

  it("a larger photo across many macroblock rows", async () => {
    const raw = await photoPixels(800, 600);
    await expectSameAsLibwebp(
      new Uint8Array(
        await sharp(raw, { raw: { width: 800, height: 600, channels: 3 } })
          .webp({ quality: 85 })
          .toBuffer(),
      ),
    );
  });
});

describe("decodeWebp: lossy with an alpha chunk, identical to libwebp", () => {
  const settings: [string, string[]][] = [
    ["alpha compressed losslessly (default)", ["-q", "75"]],
    ["alpha stored raw", ["-q", "75", "-alpha_method", "0"]],
    ["alpha, no filter", ["-q", "75", "-alpha_filter", "none"]],
    ["alpha, fast filter", ["-q", "75", "-alpha_filter", "fast"]],
    ["alpha, best filter", ["-q", "75", "-alpha_filter", "best"]],
    ["alpha quantised (alpha_q 40)", ["-q", "75", "-alpha_q", "40"]],
    ["exact (colour kept under transparency)", ["-q", "75", "-exact"]],
  ];
  for (const [name, args] of settings) {
    withTools(name, async () => {
      const webp = cwebp(alphaPng, args);
      await expectSameAsLibwebp(webp);
      expect(new Set(Array.from(decodeWebp(webp).data.filter((_, i) => i % 4 === 3))).size).toBeGreaterThan(5);
    });
  }
});

describe("decodeWebp: lossless (VP8L), identical to libwebp", () => {
  const settings: [string, string, string[]][] = [
    ["photo, default", "photo", ["-lossless"]],
    ["photo, z 0 (fewest transforms)", "photo", ["-lossless", "-z", "0"]],
    ["photo, z 6 (colour cache)", "photo", ["-lossless", "-z", "6"]],
    ["photo, z 9 (entropy groups)", "photo", ["-lossless", "-z", "9"]],
    ["alpha, exact", "alpha", ["-lossless", "-exact"]],
    ["near-lossless 40", "alpha", ["-lossless", "-near_lossless", "40"]],
    ["12-colour palette (colour indexing, 4 pixels a byte)", "palette", ["-lossless"]],
  ];
  for (const [name, source, args] of settings) {
    withTools(name, async () => {
      await expectSameAsLibwebp(cwebp(source === "photo" ? photoPng : source === "alpha" ? alphaPng : palettePng, args));
    });
  }

  it("palettes of 2, 3 and 200 colours (8, 4 and 1 pixels a byte)", async () => {
    for (const colours of [2, 3, 200]) {
      const raw = Buffer.alloc(61 * 37 * 3);
      for (let i = 0; i < 61 * 37; i++) {
        const c = (i * 7 + Math.floor(i / 61)) % colours;
        raw.set([c * 37, 255 - c, (c * 11) & 255], i * 3);
      }
      await expectSameAsLibwebp(
        new Uint8Array(
          await sharp(raw, { raw: { width: 61, height: 37, channels: 3 } })
            .webp({ lossless: true })
            .toBuffer(),
        ),
      );
    }
  });
});

describe("decodeWebp: a lossless file that declares 65,536 entropy groups and uses one", () => {
  /** Writes bits least significant first, as VP8L reads them. */
  class BitWriter {
    private bytes: number[] = [];
    private bit = 0;
    write(value: number, count: number): this {
      for (let i = 0; i < count; i++) {
        if (this.bit === 0) this.bytes.push(0);
        this.bytes[this.bytes.length - 1]! |= ((value >> i) & 1) << this.bit;
        this.bit = (this.bit + 1) & 7;
      }
      return this;
    }
    /** A simple prefix code of one 8-bit symbol: no bits per pixel. */
    symbol(value: number): this {
      return this.write(1, 1).write(0, 1).write(1, 1).write(value, 8);
    }
    done(): Uint8Array {
      return Uint8Array.from(this.bytes);
    }
  }

  it("reads every group's codes, builds the used one's, and maps the pixels to it", () => {
    const w = new BitWriter().write(0x2f, 8).write(15, 14).write(15, 14).write(1, 1).write(0, 3); // 16x16
    w.write(0, 1); // no transform
    w.write(0, 1); // no colour cache
    w.write(1, 1).write(0, 3); // entropy groups, 4x4 blocks: a 4x4 entropy image follows
    // The entropy image: no cache, one group whose codes give every pixel red 0xff, green 0xff (group 65535).
    w.write(0, 1).symbol(0xff).symbol(0xff).symbol(0).symbol(0).symbol(0);
    // Groups 0..65534 (unused): five simple codes of one 1-bit symbol each.
    for (let g = 0; g < 65535 * 5; g++) w.write(1, 1).write(0, 1).write(0, 1).write(1, 1);
    // Group 65535: green 0x80, red 0x40, blue 0x20, alpha 0xc0, distance 0.
    w.symbol(0x80).symbol(0x40).symbol(0x20).symbol(0xc0).symbol(0);
    const vp8l = w.done();
    const riff = new Uint8Array(20 + vp8l.length + (vp8l.length & 1));
    const view = new DataView(riff.buffer);
    riff.set(new TextEncoder().encode("RIFF"), 0);
    view.setUint32(4, riff.length - 8, true);
    riff.set(new TextEncoder().encode("WEBPVP8L"), 8);
    view.setUint32(16, vp8l.length, true);
    riff.set(vp8l, 20);
    const img = decodeWebp(riff);
    expect([img.width, img.height]).toEqual([16, 16]);
    for (let i = 0; i < 256; i++) expect(Array.from(img.data.subarray(i * 4, i * 4 + 4))).toEqual([0x40, 0x80, 0x20, 0xc0]);
    // The same file cut inside the unused groups' codes is truncated, not read as zeros.
    const cut = riff.slice(0, 20 + 1000);
    new DataView(cut.buffer).setUint32(4, cut.length - 8, true);
    new DataView(cut.buffer).setUint32(16, 1000, true);
    expect(() => decodeWebp(cut)).toThrow(/VP8L data ends early/);
  });
});

describe("the container and the entry points", () => {
  withTools("reads an extended (VP8X) file with an ICC profile chunk before the image", async () => {
    const webp = new Uint8Array(await sharp(photoPng).withIccProfile("p3").webp({ quality: 80 }).toBuffer());
    expect(String.fromCharCode(...webp.subarray(12, 16))).toBe("VP8X");
    // sharp would apply the profile; dwebp gives the stored pixels, as this decoder does.
    const pam = join(dir, "out.pam");
    writeFileSync(join(dir, "icc.webp"), webp);
    execFileSync("dwebp", ["-quiet", join(dir, "icc.webp"), "-pam", "-o", pam]);
    const file = readFileSync(pam);
    const header = file.subarray(0, file.indexOf("ENDHDR\n") + 7).toString();
    expect(header).toMatch(/WIDTH 203\nHEIGHT 131\nDEPTH 4/);
    expect(differing(decodeWebp(webp).data, new Uint8Array(file.subarray(header.length)))).toBe(0);
  });

  withTools("decodeImage sends WebP through this decoder (same pixels)", async () => {
    const webp = cwebp(alphaPng, ["-q", "70"]);
    expect(differing(decodeImage(webp).data, decodeWebp(webp).data)).toBe(0);
  });

  withTools("gives a lossy file's luma without making RGBA, and null where there is alpha or no luma plane", async () => {
    const webp = cwebp(photoPng, ["-q", "90"]);
    const luma = decodeWebpLuma(webp)!;
    expect([luma.kind, luma.width, luma.height]).toEqual(["luma", 203, 131]);
    // Studio-range luma of libwebp's RGB: within rounding and chroma upsampling of the stored plane.
    const rgb = await libwebpRgba(webp);
    let sum = 0;
    for (let i = 0; i < luma.data.length; i++) {
      const y = 16 + (65.481 * rgb[i * 4]! + 128.553 * rgb[i * 4 + 1]! + 24.966 * rgb[i * 4 + 2]!) / 255;
      sum += Math.abs(luma.data[i]! - y);
    }
    expect(sum / luma.data.length).toBeLessThan(1.5);
    expect(decodeWebpLuma(cwebp(alphaPng, ["-q", "90"]))).toBeNull();
    expect(decodeWebpLuma(cwebp(photoPng, ["-lossless"]))).toBeNull();
  });

  withTools("throws an Error for truncated and damaged files, never hangs or returns garbage sizes", async () => {
    const files = [cwebp(photoPng, ["-q", "75"]), cwebp(alphaPng, ["-q", "75"]), cwebp(photoPng, ["-lossless"])];
    for (const file of files) {
      const riffLength = (b: Uint8Array) => (b[4]! | (b[5]! << 8) | (b[6]! << 16) | (b[7]! << 24)) >>> 0;
      // Cut to half, with the RIFF size patched so the cut is in the image data, not the container.
      const cut = file.slice(0, file.length >> 1);
      new DataView(cut.buffer).setUint32(4, cut.length - 8, true);
      expect(riffLength(cut)).toBe(cut.length - 8);
      expect(() => decodeWebp(cut)).toThrow(Error);
    }
    // An extended file whose frame claims far more than its canvas (which the caller checked): refused
    // from the frame header, before planes for 16383x16383 are allocated.
    const extended = Buffer.from(await sharp(photoPng).withIccProfile("p3").webp({ quality: 80 }).toBuffer());
    const frame = extended.indexOf("VP8 ");
    extended.writeUInt16LE(16383, frame + 8 + 6);
    extended.writeUInt16LE(16383, frame + 8 + 8);
    expect(() => decodeWebp(extended)).toThrow(/canvas 203x131 differs from its image 16383x16383/);
    const notWebp = new TextEncoder().encode("RIFF\u0004\u0000\u0000\u0000WAVEfmt ");
    expect(() => decodeWebp(notWebp)).toThrow(/not a WebP/);
  });
});
