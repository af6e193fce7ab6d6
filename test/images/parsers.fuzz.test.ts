/**
 * The parsers of untrusted bytes under a property-based mutation fuzzer (fast-check): JPEGs of every
 * variant sharp writes (baseline and progressive, 4:2:0, 4:4:4, greyscale, CMYK, with EXIF orientation)
 * and PNGs, mutated (bytes flipped, runs overwritten, cut short, bytes inserted, segments duplicated), go
 * through the header reader, the TypeScript JPEG decoder and the whole normalising path; base64 and EXIF
 * readers get arbitrary input. Every case must end in a result or an ApiError with a 4xx status (what the
 * API answers), never another throw (a 500). A bounded number of cases runs in `npm test`;
 * `npm run fuzz` runs FUZZ_RUNS (default 5000) per property. A hang fails the test by its timeout.
 */
import fc from "fast-check";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../src/http/errors";
import { bytesFromBase64, normaliseToJpeg, readImageHeader } from "../../src/images";
import { readJpegOrientation } from "../../src/images/exif";
import { decodeJpegScaled } from "../../src/images/jpeg-decode";
import { decodeAtMost } from "../../src/images/scaled";
import { photoPixels } from "../helpers/images";

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
let seeds: Uint8Array[] = [];

beforeAll(async () => {
  const raw = await photoPixels(96, 64);
  const base = () => sharp(raw, { raw: { width: 96, height: 64, channels: 3 } });
  seeds = (
    await Promise.all([
      base().jpeg({ quality: 80 }).toBuffer(),
      base().jpeg({ quality: 80, progressive: true }).toBuffer(),
      base().jpeg({ quality: 90, chromaSubsampling: "4:4:4" }).toBuffer(),
      base().greyscale().jpeg().toBuffer(),
      base().toColourspace("cmyk").jpeg().toBuffer(),
      base().jpeg().withMetadata({ orientation: 6 }).toBuffer(),
      base().jpeg({ quality: 70, optimiseCoding: false, quantisationTable: 3 }).toBuffer(),
      base().png().toBuffer(),
      base().ensureAlpha().png({ palette: true }).toBuffer(),
    ])
  ).map((b) => new Uint8Array(b));
}, 30_000);

/** One mutation of a seed: a few byte flips, an overwritten run, a cut, an insertion or a duplicated run. */
const mutated = () =>
  fc
    .record({
      seed: fc.nat(),
      kind: fc.constantFrom("flip", "run", "cut", "insert", "duplicate"),
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      len: fc.integer({ min: 1, max: 64 }),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
    })
    .map(({ seed, kind, at, len, bytes }) => {
      const src = seeds[seed % seeds.length]!;
      const p = Math.floor(at * src.length);
      const out = Uint8Array.from(src);
      switch (kind) {
        case "flip":
          for (let i = 0; i < bytes.length; i++) {
            const j = (p + i * 97) % out.length;
            out[j] = out[j]! ^ (bytes[i]! | 1);
          }
          return out;
        case "run":
          for (let i = 0; i < len && p + i < out.length; i++) out[p + i] = bytes[i % bytes.length]!;
          return out;
        case "cut":
          return out.subarray(0, Math.max(1, p));
        case "insert":
          return Uint8Array.from([...src.subarray(0, p), ...bytes, ...src.subarray(p)]);
        case "duplicate":
          return Uint8Array.from([...src.subarray(0, p + len), ...src.subarray(p, p + len), ...src.subarray(p + len)]);
      }
    });

/** What the API may do with an input: a result, or a 4xx ApiError. */
function only4xx(run: () => unknown): void {
  try {
    run();
  } catch (err) {
    expect(err, `threw ${String(err)}`).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBeGreaterThanOrEqual(400);
    expect((err as ApiError).status).toBeLessThan(500);
  }
}

describe("untrusted bytes under the fuzzer", () => {
  it("the header reader: a header or a 4xx", () => {
    fc.assert(fc.property(mutated(), (bytes) => only4xx(() => readImageHeader(bytes))), { numRuns: RUNS * 4, seed: SEED });
  });

  it("the TypeScript JPEG decoder: an image of the header's size, null (left to photon) or an Error, at every scale", () => {
    fc.assert(
      fc.property(mutated(), fc.integer({ min: 1, max: 8 }), (bytes, eighths) => {
        let header;
        try {
          header = readImageHeader(bytes);
        } catch {
          return; // refused before decoding, as the API does
        }
        if (header.format !== "jpeg") return;
        try {
          const img = decodeJpegScaled(bytes, Math.ceil((header.width * eighths) / 8), Math.ceil((header.height * eighths) / 8));
          if (img) {
            expect(img.data.length).toBe(img.width * img.height * 4);
            expect(img.width).toBeLessThanOrEqual(header.width);
          }
        } catch (err) {
          expect(err).toBeInstanceOf(Error); // callers catch this and let photon give the verdict
        }
      }),
      { numRuns: RUNS * 4, seed: SEED },
    );
  });

  it("the media path (normalise to the platforms' JPEG): a JPEG or a 4xx", async () => {
    await fc.assert(
      fc.asyncProperty(mutated(), async (bytes) => {
        try {
          const out = await normaliseToJpeg(bytes);
          expect(readImageHeader(out.bytes).format).toBe("jpeg");
        } catch (err) {
          expect(err, `threw ${String(err)}`).toBeInstanceOf(ApiError);
          expect((err as ApiError).status).toBeLessThan(500);
        }
      }),
      { numRuns: RUNS, seed: SEED },
    );
  }, 120_000);

  it("the scaled decode (QR logos, product photos): an image or a 4xx", () => {
    fc.assert(
      fc.property(mutated(), fc.integer({ min: 8, max: 128 }), (bytes, limit) =>
        only4xx(() => {
          const img = decodeAtMost(bytes, limit);
          expect(Math.max(img.width, img.height)).toBeLessThanOrEqual(limit);
        }),
      ),
      { numRuns: RUNS, seed: SEED },
    );
  }, 120_000);

  it("base64 and data URIs: bytes or a 4xx, for any string", () => {
    const b64ish = fc.stringMatching(/^(data:[a-z/+;=-]{0,30},)?[A-Za-z0-9+/=_\s-]{0,200}$/);
    fc.assert(fc.property(fc.oneof(fc.string(), b64ish), (text) => only4xx(() => bytesFromBase64(text, 1024))), { numRuns: RUNS * 10, seed: SEED });
  });

  it("EXIF: an orientation or null for any APP1 payload, never a throw", () => {
    const exifish = fc.uint8Array({ maxLength: 64 }).map((tail) => Uint8Array.from([0x45, 0x78, 0x69, 0x66, 0, 0, ...(tail[0]! & 1 ? [0x49, 0x49, 0x2a, 0] : [0x4d, 0x4d, 0, 0x2a]), ...tail]));
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 64 }), exifish), (app1) => {
        const o = readJpegOrientation(app1);
        expect(o === null || (Number.isInteger(o) && o >= 1 && o <= 8)).toBe(true);
      }),
      { numRuns: RUNS * 10, seed: SEED },
    );
  });
});
