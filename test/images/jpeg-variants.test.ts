/**
 * The JPEG variants that are easy to get wrong, through every entry point of untrusted images (the image
 * pipeline, QR logos and QR decoding, area B inputs): CMYK and YCCK are decoded as sharp (libjpeg-turbo)
 * decodes the same bytes (colour conversion without an ICC profile, see againstSharpCmyk); 12-bit and arithmetic-coded JPEGs, which sharp cannot write, are made by patching
 * a baseline JPEG's frame header, and each is refused with a 422 that says what is wrong.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PhotonImage } from "@cf-wasm/photon/others";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ApiError } from "../../src/http/errors";
import { decodeImage, normaliseToJpeg, readImageHeader, sniffImage } from "../../src/images";
import { decodeWhole } from "../../src/images/codec";
import { decodeAtMost } from "../../src/images/scaled";
import { loadInputs } from "../../src/photo/generate";
import type { PhotoRequest } from "../../src/photo/request";
import { parseGenerateRequest } from "../../src/qr/schemas";
import { decodeQrCode, generateQrCode } from "../../src/qr/service";
import { fuzzServices } from "../fuzz/properties";
import { patchJpegSize, photoPixels, psnr } from "../helpers/images";
import { EDGE_DECODE_LIMITS } from "../../src/edge-services";
import { checkDecodeLimits } from "../../src/images/limits";
import { useNodeZxing } from "../qr/zxing-node";

let baseline: Buffer;
let cmyk: Buffer;

beforeAll(async () => {
  useNodeZxing();
  const raw = await photoPixels(96, 64);
  const base = () => sharp(raw, { raw: { width: 96, height: 64, channels: 3 } });
  baseline = await base().jpeg({ quality: 90 }).toBuffer();
  cmyk = await base().toColourspace("cmyk").jpeg({ quality: 90 }).toBuffer();
});

/** Offset of the first marker segment of `type` (its 0xFF byte). */
function segment(jpeg: Buffer, type: (marker: number) => boolean): number {
  for (let pos = 2; pos + 4 <= jpeg.length; pos += 2 + jpeg.readUInt16BE(pos + 2)) {
    if (type(jpeg[pos + 1]!)) return pos;
  }
  throw new Error("segment not found");
}

/** The frame header rewritten: its marker (0xC1 extended, 0xC9 arithmetic...) and sample precision. */
function patchFrame(jpeg: Buffer, marker: number, precision = 8): Buffer {
  const out = Buffer.from(jpeg);
  const sof = segment(out, (m) => m >= 0xc0 && m <= 0xc2);
  out[sof + 1] = marker;
  out[sof + 4] = precision;
  return out;
}

/** Our decode against sharp's of the same bytes, in dB over R, G and B. */
async function againstSharp(bytes: Buffer): Promise<number> {
  const ours = decodeImage(bytes);
  const { data, info } = await sharp(bytes).toColourspace("srgb").removeAlpha().raw().toBuffer({ resolveWithObject: true });
  expect([ours.width, ours.height]).toEqual([info.width, info.height]);
  return psnr(ours.data, data, info.channels);
}

/**
 * Our decode of a four-component JPEG against libjpeg's CMYK (sharp's, before any colour management: YCCK
 * already made CMYK, Adobe inversion undone), turned into RGB as we do, without an ICC profile:
 * R = (255 - C)(255 - K) / 255. (sharp's own sRGB goes through a CMYK ICC profile, which we do not apply.)
 */
async function againstSharpCmyk(bytes: Buffer): Promise<number> {
  const ours = decodeImage(bytes);
  const { data, info } = await sharp(bytes).pipelineColourspace("cmyk").toColourspace("cmyk").raw().toBuffer({ resolveWithObject: true });
  expect([ours.width, ours.height, info.channels]).toEqual([info.width, info.height, 4]);
  const rgb = new Uint8Array(info.width * info.height * 3);
  for (let i = 0, j = 0; i < data.length; i += 4, j += 3) {
    for (let c = 0; c < 3; c++) rgb[j + c] = Math.round(((255 - data[i + c]!) * (255 - data[i + 3]!)) / 255);
  }
  return psnr(ours.data, rgb, 3);
}

const dataUri = (b: Uint8Array) => `data:image/jpeg;base64,${Buffer.from(b).toString("base64")}`;

/** Every entry point's answer to `bytes`: "ok", or the refusal's status and message. */
async function everyEntryPoint(bytes: Uint8Array): Promise<Record<string, string>> {
  const outcome = async (run: () => unknown) => {
    try {
      await run();
      return "ok";
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return `${err.status} ${err.code}: ${err.message}`;
    }
  };
  const photo = { products: [{ source: dataUri(bytes), label: null }] } as unknown as PhotoRequest;
  return {
    sniff: await outcome(() => sniffImage(bytes)),
    decode: await outcome(() => decodeImage(bytes)),
    scaled: await outcome(() => decodeAtMost(bytes, 32)),
    normalise: await outcome(() => normaliseToJpeg(bytes)),
    qrLogo: await outcome(() => generateQrCode(fuzzServices, "u", parseGenerateRequest({ type: "text", value: "x", logoUrl: dataUri(bytes) }))),
    qrDecode: await outcome(() => decodeQrCode(fuzzServices, "u", { base64: dataUri(bytes) })),
    photoProduct: await outcome(() => loadInputs(fuzzServices, photo)),
  };
}

describe("decoded as sharp decodes them", () => {
  it("a CMYK JPEG (Adobe transform 0)", async () => {
    expect(readImageHeader(cmyk)).toMatchObject({ format: "jpeg", components: 4 });
    expect(await againstSharpCmyk(cmyk)).toBeGreaterThan(40);
    expect(Object.values(await everyEntryPoint(cmyk)).filter((o) => o !== "ok" && !o.includes("QR_NOT_FOUND"))).toEqual([]);
  });

  it("a YCCK JPEG (the same data marked as YCCK: Adobe transform 2)", async () => {
    const ycck = Buffer.from(cmyk);
    const adobe = segment(ycck, (m) => m === 0xee);
    expect(ycck.toString("latin1", adobe + 4, adobe + 9)).toBe("Adobe");
    expect(ycck[adobe + 15]).toBe(0);
    ycck[adobe + 15] = 2;
    // Read as YCCK the colours change; both decoders must change them the same way.
    expect(await againstSharpCmyk(ycck)).toBeGreaterThan(40);
    expect(Buffer.from(decodeImage(ycck).data).equals(Buffer.from(decodeImage(cmyk).data))).toBe(false);
    expect(Object.values(await everyEntryPoint(ycck)).filter((o) => o !== "ok" && !o.includes("QR_NOT_FOUND"))).toEqual([]);
  });

  it("an 8-bit extended sequential JPEG (SOF1) decodes as its baseline twin", async () => {
    const sof1 = patchFrame(baseline, 0xc1);
    expect(await againstSharp(sof1)).toBeGreaterThan(30);
    expect(Buffer.from(decodeImage(sof1).data).equals(Buffer.from(decodeImage(baseline).data))).toBe(true);
    expect(Object.values(await everyEntryPoint(sof1)).filter((o) => o !== "ok" && !o.includes("QR_NOT_FOUND"))).toEqual([]);
  });
});

describe("refused with a 422 that names the variant, at every entry point", () => {
  it.each([
    ["12-bit (SOF1, precision 12)", 0xc1, 12, /^422 INVALID_IMAGE: .*12-bit JPEG is not supported/],
    ["12-bit progressive (SOF2, precision 12)", 0xc2, 12, /^422 INVALID_IMAGE: .*12-bit JPEG is not supported/],
    ["arithmetic-coded (SOF9)", 0xc9, 8, /^422 INVALID_IMAGE: .*Arithmetic-coded JPEG is not supported/],
    ["arithmetic-coded progressive (SOF10)", 0xca, 8, /^422 INVALID_IMAGE: .*Arithmetic-coded progressive JPEG is not supported/],
    ["lossless (SOF3)", 0xc3, 8, /^422 INVALID_IMAGE: .*Lossless JPEG is not supported/],
  ])("%s", async (_name, marker, precision, refusal) => {
    const outcomes = await everyEntryPoint(patchFrame(baseline, marker, precision));
    for (const [entry, outcome] of Object.entries(outcomes)) expect(outcome, entry).toMatch(refusal);
  });
});

describe("the edge's limits for CMYK JPEGs", () => {
  it("takes a baseline CMYK JPEG up to the pixel limit, and refuses a progressive one above the whole-decode limit by name", async () => {
    const raw = await photoPixels(96, 64);
    const base = () => sharp(raw, { raw: { width: 96, height: 64, channels: 3 } }).toColourspace("cmyk");
    // Headers that say 3000x2000 (6 MP): above the 2 MP whole-decode limit, under the 12.5 MP pixel limit.
    const baseline = patchJpegSize(await base().jpeg({ quality: 90 }).toBuffer(), 3000, 2000);
    const progressive = patchJpegSize(await base().jpeg({ quality: 90, progressive: true }).toBuffer(), 3000, 2000);
    expect(() => checkDecodeLimits(readImageHeader(baseline), EDGE_DECODE_LIMITS)).not.toThrow();
    const refusal = (() => {
      try {
        checkDecodeLimits(readImageHeader(progressive), EDGE_DECODE_LIMITS);
      } catch (err) {
        return err as ApiError;
      }
      return null;
    })();
    expect(refusal?.code).toBe("INVALID_IMAGE");
    expect(refusal?.message).toMatch(
      /^The image is a progressive CMYK JPEG of 3000x2000 \(6 million pixels\); this server decodes such images only up to 2 million pixels\./,
    );
    // Node decodes both kinds whatever their size.
    expect(() => checkDecodeLimits(readImageHeader(progressive))).not.toThrow();
  });
});

describe("chroma subsampled by 4 (libjpeg-turbo's cjpeg) and by 3", () => {
  // cjpeg writes any sampling factors; Debian's libjpeg-turbo-progs, which .ci/run installs.
  const haveCjpeg = spawnSync("cjpeg", ["-version"]).status === 0;
  if (process.env.CI && !haveCjpeg) throw new Error("cjpeg is missing: .ci/run installs Debian's libjpeg-turbo-progs");
  if (!haveCjpeg) console.warn("jpeg-variants: the cjpeg cases are skipped; apt-get install libjpeg-turbo-progs to run them");
  const withCjpeg = it.skipIf(!haveCjpeg);
  const dir = mkdtempSync(join(tmpdir(), "cjpeg-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function cjpeg(sample: string, progressive = false): Promise<Buffer> {
    const [width, height] = [203, 131];
    const ppm = join(dir, "in.ppm");
    writeFileSync(ppm, Buffer.concat([Buffer.from(`P6\n${width} ${height}\n255\n`), await photoPixels(width, height)]));
    const out = join(dir, "out.jpg");
    execFileSync("cjpeg", ["-quality", "90", "-sample", sample, ...(progressive ? ["-progressive"] : []), "-outfile", out, ppm]);
    return readFileSync(out);
  }

  withCjpeg("decodes 4:1:1, 1x4, 4x2 and 4x1 + 2x1 (baseline and progressive) as libjpeg does, at full size and scaled, on the edge too", async () => {
    for (const sample of ["4x1,1x1,1x1", "1x4,1x1,1x1", "4x2,1x1,1x1", "4x1,2x1,1x1"]) {
      for (const progressive of [false, true]) {
        const jpeg = await cjpeg(sample, progressive);
        const photon = vi.spyOn(PhotonImage, "new_from_byteslice");
        try {
          const ours = decodeImage(jpeg, EDGE_DECODE_LIMITS);
          const reference = await sharp(jpeg).ensureAlpha().raw().toBuffer();
          expect(psnr(ours.data, reference, 4), `${sample}${progressive ? " progressive" : ""}`).toBeGreaterThan(50);
          expect(decodeAtMost(jpeg, 60, EDGE_DECODE_LIMITS).width).toBeLessThanOrEqual(60);
          expect((await normaliseToJpeg(jpeg, EDGE_DECODE_LIMITS)).width).toBeGreaterThanOrEqual(203);
          expect(photon).not.toHaveBeenCalled();
        } finally {
          photon.mockRestore();
        }
      }
    }
  });

  withCjpeg("refuses 3:1 subsampling from the header on the edge (photon would decode it), and decodes it through photon on Node", async () => {
    const jpeg = await cjpeg("3x1,1x1,1x1");
    expect(() => checkDecodeLimits(readImageHeader(jpeg), EDGE_DECODE_LIMITS)).toThrow(
      /^The image is a JPEG with unusual chroma subsampling \(3x1, 1x1, 1x1\); this server does not decode those\. Re-save it as a standard JPEG/,
    );
    expect(() => sniffImage(jpeg, EDGE_DECODE_LIMITS)).toThrow(ApiError);
    const photon = vi.spyOn(PhotonImage, "new_from_byteslice");
    try {
      expect(() => decodeWhole(jpeg, readImageHeader(jpeg), EDGE_DECODE_LIMITS)).toThrow(/unusual chroma subsampling/);
      // photon, the last resort for what our decoders refuse, never runs on the edge: a 422 instead.
      expect(() => decodeWhole(baseline, readImageHeader(baseline), EDGE_DECODE_LIMITS)).toThrow(/corrupt or uses a feature we cannot decode/);
      expect(photon).not.toHaveBeenCalled();
      expect(psnr(decodeImage(jpeg).data, await sharp(jpeg).ensureAlpha().raw().toBuffer(), 4)).toBeGreaterThan(45);
      expect(photon).toHaveBeenCalledTimes(1);
    } finally {
      photon.mockRestore();
    }
  });
});
