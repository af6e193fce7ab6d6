/**
 * Real-world JPEGs: Debian's `libjxl-testdata` ships one photo (2268x1512) encoded with restart markers,
 * progressive scans, 4:2:0, 4:2:2, 4:4:0, 4:4:4, asymmetric and luma-only subsampling, greyscale, RGB-stored
 * components, and non- or partially interleaved scans, plus a 1x1 file with EXIF and XMP. `.ci/run` installs
 * the package; the files are never committed. Each one must be decoded by the hand-written decoder and
 * match libjpeg (through sharp), and be accepted by `POST /media` and normalised.
 *
 * Without the package (a developer machine) the suite is skipped with a note; under CI it is required.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeJpegScaled } from "../../src/images/jpeg-decode";
import { psnr } from "../helpers/images";
import { body, createSocialTestApp, type SocialTestApp } from "../helpers/social";

const ROOT = "/usr/share/libjxl-testdata/jxl";
const DIRS = ["flower", "jpeg_reconstruction"];

function corpus(): string[] {
  return DIRS.flatMap((dir) => {
    const path = join(ROOT, dir);
    return existsSync(path)
      ? readdirSync(path)
          .filter((f) => f.endsWith(".jpg"))
          .map((f) => join(path, f))
      : [];
  });
}

const files = corpus();
if (process.env.CI && files.length === 0) throw new Error(`the libjxl-testdata JPEGs are missing under ${ROOT}: .ci/run installs the package`);
if (files.length === 0) console.warn(`jpeg-corpus: skipped; apt-get install libjxl-testdata to run it`);

describe.skipIf(files.length === 0)("the libjxl-testdata JPEG corpus", () => {
  let h: SocialTestApp;
  beforeAll(async () => {
    h = await createSocialTestApp();
  });
  afterAll(async () => {
    await h?.close();
  });

  it("holds the variants this suite is about", () => {
    const names = files.map((f) => f.split("/").pop()!).join(" ");
    for (const variant of [
      "_420.jpg",
      "_R13B",
      "_progr",
      "_422",
      "_440",
      "_444.jpg",
      "_asymmetric",
      "_gray",
      "_rgb.jpg",
      "non_interleaved",
      "partially_interleaved",
      "exif_xmp",
    ]) {
      expect(names).toContain(variant);
    }
  });

  for (const file of files) {
    const name = file.split("/").pop()!;
    it(`decodes ${name} as libjpeg does`, async () => {
      const bytes = readFileSync(file);
      const ref = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
      const ours = decodeJpegScaled(new Uint8Array(bytes));
      expect(ours, "the hand-written decoder declined it").not.toBeNull();
      expect([ours!.width, ours!.height]).toEqual([ref.info.width, ref.info.height]);
      // Upsampling filters differ a little (libjpeg's "fancy" one is for 2x1 and 2x2 chroma only); luma-only
      // subsampling, the furthest from the common case, measures 36.7 dB. Decoding errors measure under 20.
      expect(psnr(ours!.data, ref.data, ref.info.channels)).toBeGreaterThan(35);
    });

    it(`POST /media accepts ${name} and normalises it`, async () => {
      const { apiKey } = await h.createUser();
      const bytes = readFileSync(file);
      const res = await h.createMedia(apiKey, { base64: bytes.toString("base64"), mimeType: "image/jpeg" });
      expect(res.status).toBe(201);
      const media = (await body(res)).data;
      const meta = await sharp(bytes).metadata();
      // At most 1440x1800; a width under 320 is enlarged to 320.
      const scale = meta.width! < 320 ? 320 / meta.width! : Math.min(1, 1440 / meta.width!, 1800 / meta.height!);
      expect(Math.abs(media.width - Math.round(meta.width! * scale))).toBeLessThanOrEqual(1);
      expect(Math.abs(media.height - Math.round(meta.height! * scale))).toBeLessThanOrEqual(1);
    });
  }
});
