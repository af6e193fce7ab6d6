/**
 * A corpus of bad images (oversized headers, truncated or corrupt data, polyglots, unusual encodings): each
 * input is refused with a clear 4xx ApiError or
 * processed correctly; never a 500, never a non-ApiError throw, never a hang.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../src/http/errors";
import { bytesFromBase64, decodeImage, normaliseToJpeg, sniffImage } from "../../src/images";
import {
  makeAnimatedWebp,
  makeGif,
  makeJpeg,
  makePhotoJpeg,
  makePng,
  makeTiff,
  makeWebp,
  patchJpegSize,
  patchJpegSofMarker,
  pngChunk,
  pngHeaderOnly,
  toApng,
} from "../helpers/images";
import { decodeJpegScaled } from "../../src/images/jpeg-decode";
import { decodeAtMost } from "../../src/images/scaled";

type Outcome = { refused: ApiError } | { ok: true };

async function attempt(run: () => unknown): Promise<Outcome> {
  try {
    await run();
    return { ok: true };
  } catch (err) {
    expect(err, `threw a non-ApiError: ${String(err)}`).toBeInstanceOf(ApiError);
    const api = err as ApiError;
    expect(api.status).toBeGreaterThanOrEqual(400);
    expect(api.status).toBeLessThan(500);
    expect(api.message.length).toBeGreaterThan(10);
    return { refused: api };
  }
}

function expectRefused(outcome: Outcome, code: string, pattern?: RegExp): void {
  expect("refused" in outcome, "expected a refusal").toBe(true);
  if (!("refused" in outcome)) return;
  expect(outcome.refused.code).toBe(code);
  if (pattern) expect(outcome.refused.message).toMatch(pattern);
}

let smallJpeg: Buffer;
let smallPng: Buffer;

beforeAll(async () => {
  smallJpeg = await makePhotoJpeg(64, 48);
  smallPng = await makePng(32, 32);
});

describe("refused before decoding (header rules)", () => {
  const cases: Array<[string, () => Promise<Uint8Array> | Uint8Array, string, RegExp]> = [
    ["empty", () => new Uint8Array(0), "INVALID_IMAGE", /empty/],
    ["one byte", () => new Uint8Array([0xff]), "INVALID_IMAGE", /not a recognised image/],
    ["random bytes", () => crypto.getRandomValues(new Uint8Array(4096)), "INVALID_IMAGE", /not a recognised image/],
    ["wrong magic (PNG with a bad first byte)", () => Object.assign(Buffer.from(smallPng), { 0: 0x88 }), "INVALID_IMAGE", /not a recognised/],
    ["truncated JPEG header (10 bytes)", () => smallJpeg.subarray(0, 10), "INVALID_IMAGE", /truncated/],
    ["truncated PNG header", () => smallPng.subarray(0, 20), "INVALID_IMAGE", /truncated/],
    ["truncated WebP header", async () => (await makeWebp(8, 8)).subarray(0, 16), "INVALID_IMAGE", /truncated|not a recognised/],
    ["PNG bomb header 100000x100000", () => pngHeaderOnly(100_000, 100_000), "INVALID_IMAGE", /40 million pixels/],
    ["JPEG header claiming 65000x65000", () => patchJpegSize(smallJpeg, 65000, 65000), "INVALID_IMAGE", /40 million pixels/],
    ["42 MP PNG (7000x6000)", () => makePng(7000, 6000), "INVALID_IMAGE", /7000x6000.*40 million/],
    ["0x0 PNG", () => pngHeaderOnly(0, 0), "INVALID_IMAGE", /no pixels/],
    ["0-wide JPEG", () => patchJpegSize(smallJpeg, 0, 48), "INVALID_IMAGE", /no pixels/],
    ["animated PNG (acTL)", async () => toApng(await makePng(16, 16)), "INVALID_IMAGE", /Animated PNG/],
    ["animated WebP", () => makeAnimatedWebp(), "INVALID_IMAGE", /Animated WebP/],
    ["GIF", () => makeGif(), "INVALID_IMAGE", /GIF images are not supported/],
    ["TIFF", () => makeTiff(), "INVALID_IMAGE", /TIFF/],
    ["BMP", () => Buffer.concat([Buffer.from("BM"), Buffer.alloc(60)]), "INVALID_IMAGE", /BMP/],
    ["SVG", () => Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><image href="file:///etc/passwd"/></svg>'), "INVALID_IMAGE", /SVG/],
    ["HEIC", () => Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from("ftypheic"), Buffer.alloc(40)]), "INVALID_IMAGE", /HEIC/],
    ["arithmetic-coded JPEG", () => patchJpegSofMarker(smallJpeg, 0xc9), "INVALID_IMAGE", /arithmetic-coded JPEG is not supported/i],
    ["over 10 MB", () => Buffer.concat([smallJpeg, Buffer.alloc(10 * 1024 * 1024)]), "PAYLOAD_TOO_LARGE", /10 MB/],
  ];
  for (const [name, make, code, pattern] of cases) {
    it(`${name}: sniff and decode refuse with ${code}`, async () => {
      const bytes = await make();
      const started = performance.now();
      expectRefused(await attempt(() => sniffImage(bytes)), code, pattern);
      expectRefused(await attempt(() => decodeImage(bytes)), code, pattern);
      expectRefused(await attempt(() => normaliseToJpeg(bytes)), code, pattern);
      expect(performance.now() - started).toBeLessThan(2000); // header rules never decode
    });
  }

  it("6000x6000 (36 MP) passes the header rules", async () => {
    expect(sniffImage(pngHeaderOnly(6000, 6000))).toMatchObject({ format: "png", width: 6000, height: 6000 });
  });
});

describe("refused at decode (corrupt data)", () => {
  it("truncated JPEG (60%): refused by photon's path and by our own decoder's (normalising, scaled decoding)", async () => {
    const jpeg = await makePhotoJpeg(800, 600);
    const cut = jpeg.subarray(0, Math.floor(jpeg.length * 0.6));
    expectRefused(await attempt(() => decodeImage(cut)), "INVALID_IMAGE", /truncated/);
    expectRefused(await attempt(() => normaliseToJpeg(cut)), "INVALID_IMAGE", /truncated/);
    expectRefused(await attempt(() => decodeAtMost(cut, 200)), "INVALID_IMAGE", /truncated/);
  });

  it("truncated PNG (no IEND)", async () => {
    const png = await makePng(300, 200, { colour: [1, 2, 3] });
    expectRefused(await attempt(() => decodeImage(png.subarray(0, png.length - 20))), "INVALID_IMAGE", /truncated|checksum/);
  });

  it("PNG with a corrupted data byte (checksum mismatch)", async () => {
    const png = Buffer.from(await makePng(300, 200));
    const idat = png.indexOf("IDAT");
    png[idat + 10] = png[idat + 10]! ^ 0xff;
    expectRefused(await attempt(() => decodeImage(png)), "INVALID_IMAGE", /checksum of its IDAT/);
  });

  it("PNG whose IDAT is not zlib data (valid checksums): 422 from the decoder, and photon still works after", async () => {
    const ihdr = Buffer.alloc(13);
    ihdr.writeUInt32BE(64, 0);
    ihdr.writeUInt32BE(64, 4);
    ihdr[8] = 8;
    ihdr[9] = 2;
    const bogus = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      pngChunk("IHDR", ihdr),
      pngChunk("IDAT", crypto.getRandomValues(new Uint8Array(200))),
      pngChunk("IEND", new Uint8Array()),
    ]);
    expectRefused(await attempt(() => decodeImage(bogus)), "INVALID_IMAGE", /corrupt/);
    expect(decodeImage(smallPng).width).toBe(32);
  });

  it("JPEG with garbage entropy data but intact markers: decoded or a 422, never a 500", async () => {
    const jpeg = Buffer.from(await makePhotoJpeg(400, 300));
    for (let i = Math.floor(jpeg.length / 3); i < jpeg.length - 10; i += 7) jpeg[i] = (jpeg[i]! * 31 + 7) & 0xff;
    await attempt(() => decodeImage(jpeg));
    // Our TypeScript decoder alone (no photon fallback), at full size and at 1/8: an image, null (garbage
    // that reads as a marker it does not handle, say a second frame, hands the file to photon), or its own
    // Error saying what is wrong (its callers turn that into a 422); never a TypeError or RangeError from a
    // bad index. Then the paths that use it.
    for (const [w, h] of [
      [Infinity, Infinity],
      [50, 38],
    ] as const) {
      let thrown: unknown = null;
      let decoded: ReturnType<typeof decodeJpegScaled> = null;
      try {
        decoded = decodeJpegScaled(jpeg, w, h);
      } catch (err) {
        thrown = err;
      }
      if (thrown === null) {
        if (decoded !== null) expect(decoded.width).toBeGreaterThan(0);
      } else {
        expect(thrown).toBeInstanceOf(Error);
        expect(thrown).not.toBeInstanceOf(TypeError);
        expect(thrown).not.toBeInstanceOf(RangeError);
      }
    }
    await attempt(() => normaliseToJpeg(jpeg));
    await attempt(() => decodeAtMost(jpeg, 100));
    expect(decodeImage(smallJpeg).width).toBe(64);
    expect(decodeJpegScaled(smallJpeg)?.width).toBe(64);
  });

  it("a polyglot (JPEG followed by HTML and a ZIP header) is accepted and re-encoded", async () => {
    const poly = Buffer.concat([smallJpeg, Buffer.from("<html><script>alert(1)</script></html>PK\x03\x04")]);
    const out = await normaliseToJpeg(poly);
    expect(Buffer.from(out.bytes).includes("<script>")).toBe(false);
  });
});

describe("unusual but valid encodings are decoded correctly", () => {
  it("CMYK JPEG decodes to the right sRGB colour", async () => {
    const rgba = decodeImage(
      await makeJpeg(64, 64, {
        cmyk: true,
        colours: [
          [255, 0, 0],
          [255, 0, 0],
          [255, 0, 0],
          [255, 0, 0],
        ],
      }),
    );
    expect(rgba.data[0]).toBeGreaterThan(200);
    expect(rgba.data[1]).toBeLessThan(60);
    expect(rgba.data[2]).toBeLessThan(60);
  });

  it("16-bit PNG, with alpha, decodes to 8-bit RGBA", async () => {
    const rgba = decodeImage(await makePng(20, 10, { depth16: true, colour: [0, 0, 255], alpha: 0.5 }));
    expect(rgba.data.length).toBe(20 * 10 * 4);
    expect(Array.from(rgba.data.slice(0, 4))).toEqual([0, 0, 255, expect.closeTo(128, 0)]);
  });

  it.each([
    [
      "grey JPEG",
      () =>
        makeJpeg(32, 32, {
          grey: true,
          colours: [
            [128, 128, 128],
            [128, 128, 128],
            [128, 128, 128],
            [128, 128, 128],
          ],
        }),
      [128, 128, 128],
    ],
    ["grey PNG", () => makePng(32, 32, { grey: true, colour: [100, 100, 100] }), [100, 100, 100]],
    ["palette PNG", () => makePng(32, 32, { palette: true, colour: [128, 128, 0] }), [128, 128, 0]],
    ["interlaced PNG", () => makePng(33, 17, { interlaced: true, colour: [0, 128, 128] }), [0, 128, 128]],
    [
      "progressive JPEG",
      () =>
        makeJpeg(32, 32, {
          progressive: true,
          colours: [
            [255, 128, 0],
            [255, 128, 0],
            [255, 128, 0],
            [255, 128, 0],
          ],
        }),
      [255, 128, 0],
    ],
    ["lossy WebP", () => makeWebp(32, 32), [10, 120, 200]],
    ["lossless WebP", () => makeWebp(32, 32, { lossless: true }), [10, 120, 200]],
  ] as const)("%s", async (_name, make, colour) => {
    const rgba = decodeImage(await make());
    for (let c = 0; c < 3; c++) expect(Math.abs(rgba.data[c]! - colour[c]!)).toBeLessThanOrEqual(6);
    expect(rgba.data[3]).toBe(255);
  });
});

describe("Base64 input", () => {
  it.each([
    ["bad characters", "iVBOR$$$w0KGgo=", /unexpected character at position 5/],
    ["bad padding", "iVBORw0KGgo===", /length or padding/],
    ["data after padding", "iVBO=Rw0K", /after padding/],
    ["length 4n+1", "iVBORw0KG", /length or padding/],
    ["empty", "", /empty/],
    ["data URI of another type", "data:text/html;base64,PGgxPg==", /must be an image/],
    ["data URI without base64", "data:image/png,abc", /Base64-encoded/],
  ])("%s -> 422 INVALID_IMAGE", async (_name, input, pattern) => {
    expectRefused(await attempt(() => bytesFromBase64(input)), "INVALID_IMAGE", pattern);
  });

  it("Base64 that decodes to 10 MB + 1 byte -> 413", async () => {
    const b64 = Buffer.alloc(10 * 1024 * 1024 + 1, 1).toString("base64");
    expectRefused(await attempt(() => bytesFromBase64(b64)), "PAYLOAD_TOO_LARGE", /10 MB/);
    expect(bytesFromBase64(Buffer.alloc(10 * 1024 * 1024, 1).toString("base64")).length).toBe(10 * 1024 * 1024);
  });

  it("decodes large clean Base64 (the fast path) exactly as wrapped Base64 (the character path)", () => {
    const bytes = new Uint8Array(100_002).map((_, i) => (i * 2654435761) >>> 13);
    const std = Buffer.from(bytes).toString("base64");
    for (const input of [std, std.replace(/(.{76})/g, "$1\n"), `data:image/jpeg;base64,${std}`, std.replace(/=+$/, "")]) {
      expect(Buffer.from(bytesFromBase64(input)).equals(Buffer.from(bytes))).toBe(true);
    }
    const bad = `${std.slice(0, 50000)}*${std.slice(50001)}`;
    expect(() => bytesFromBase64(bad)).toThrowError(/unexpected character at position 50000/);
    expect(() => bytesFromBase64(`${std.slice(0, 40000)}é${std.slice(40001)}`)).toThrowError(/unexpected character at position 40000/);
    expect(() => bytesFromBase64(`${std.slice(0, 100)}=${std.slice(101)}`)).toThrowError(/after padding/);
  });

  it("accepts data URIs, bare, URL-safe and line-wrapped Base64 alike", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(1000));
    const std = Buffer.from(bytes).toString("base64");
    const wrapped = std.replace(/(.{76})/g, "$1\r\n");
    for (const input of [std, `data:image/png;base64,${std}`, Buffer.from(bytes).toString("base64url"), wrapped, std.replace(/=+$/, "")]) {
      expect(Buffer.from(bytesFromBase64(input)).equals(Buffer.from(bytes))).toBe(true);
    }
  });
});
