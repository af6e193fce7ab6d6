/**
 * The fuzz properties over every parser of untrusted bytes, in one place: the fixed-seed slice in `npm test`
 * (test/images/parsers.fuzz.test.ts) and the timed runner (`npm run fuzz`, scripts/fuzz.ts) both run these,
 * case by case in a worker thread (test/fuzz/runner.ts) that is ended when a case hangs or takes too much
 * memory.
 *
 * Inputs are mutations (bytes flipped, runs overwritten, header bytes rewritten, cut short, bytes inserted,
 * runs duplicated, PNG checksums made right again) of a corpus sharp writes: JPEGs of every variant (baseline,
 * progressive, 4:2:0, 4:4:4, greyscale, CMYK, EXIF orientation, unoptimised tables; a photo large enough for
 * the entropy split, whose answer must be one thread's), PNGs (RGB, palette with
 * alpha, grey, 16-bit, interlaced), WebP and QR codes; base64 and EXIF get arbitrary input. Each case must
 * end in what the API may answer: a result, or an ApiError with a 4xx status (never another throw, a 500);
 * the two internal decoders may also give up with an Error, which their callers turn into a 4xx.
 *
 * @example
 * const corpus = await buildCorpus();
 * await fc.assert(fc.asyncProperty(PROPERTIES[0].arbitrary(corpus), PROPERTIES[0].check), { seed: 1 });
 */
import { InlineBodyReader } from "../../src/http/inline-images";
import { crc32 } from "node:zlib";
import fc from "fast-check";
import QRCode from "qrcode";
import sharp from "sharp";
import { ApiError } from "../../src/http/errors";
import { HubError } from "../../src/hub/errors";
import { HUB_MAX_BODY_BYTES, HUB_MAX_FIELD_CHARS, HUB_MAX_FIELDS, HUB_MAX_NAME_CHARS, readForm } from "../../src/hub/form";
import type { HeavyInput, HeavyTaskName } from "../../src/heavy";
import { HEAVY_TASKS } from "../../src/heavy/tasks";
import { bytesFromBase64, decodePngAtMost, normaliseToJpeg, readImageHeader, sniffImage } from "../../src/images";
import { readJpegOrientation } from "../../src/images/exif";
import { decodeJpegScaled } from "../../src/images/jpeg-decode";
import { decodeAtMost } from "../../src/images/scaled";
import { decodeWebp, decodeWebpLuma } from "../../src/images/webp-decode";
import { loadInputs } from "../../src/photo/generate";
import { parseModelCatalog } from "../../src/lib/model-catalog";
import type { PhotoRequest } from "../../src/photo/request";
import { GenerationError } from "../../src/photo/types";
import { parseGenerateRequest } from "../../src/qr/schemas";
import { decodeQrCode, generateQrCode } from "../../src/qr/service";
import type { Services } from "../../src/services";
import { decodeAlone, decodeWithSplit } from "../helpers/entropy-split";
import { photoPixels } from "../helpers/images";

/** The seed images mutations start from. */
export interface Corpus {
  images: Uint8Array[];
  pngs: Uint8Array[];
  /** Lossy, lossy with alpha, lossless and lossless palette WebPs (the corpus's `images` hold the first). */
  webps: Uint8Array[];
  /** QR codes (PNG and JPEG), so the decode path also reads codes. */
  codes: Uint8Array[];
  /** A photo large enough for the entropy split (src/images/entropy-split.ts): 1600x1200, 4:2:0. */
  splittable: Uint8Array[];
}

export interface FuzzProperty<T = any> {
  name: string;
  /** What untrusted input reaches it, and where from. */
  covers: string;
  /** Relative number of cases in the fixed-seed slice (weight x FUZZ_RUNS); the timed runner gives every property the same time. */
  weight: number;
  arbitrary(corpus: Corpus): fc.Arbitrary<T>;
  /** Runs one case; throws a FuzzFailure (or whatever escaped the code under test) when the outcome is not allowed. */
  check(input: T): void | Promise<void>;
}

/** An outcome the API must never give. */
export class FuzzFailure extends Error {
  override name = "FuzzFailure";
}

/** Builds the corpus with sharp (about a second). */
export async function buildCorpus(): Promise<Corpus> {
  const raw = await photoPixels(96, 64);
  const base = () => sharp(raw, { raw: { width: 96, height: 64, channels: 3 } });
  const bytes = async (items: Array<Promise<Buffer>>) => (await Promise.all(items)).map((b) => new Uint8Array(b));
  const jpegs = await bytes([
    base().jpeg({ quality: 80 }).toBuffer(),
    base().jpeg({ quality: 80, progressive: true }).toBuffer(),
    base().jpeg({ quality: 90, chromaSubsampling: "4:4:4" }).toBuffer(),
    base().greyscale().jpeg().toBuffer(),
    base().toColourspace("cmyk").jpeg().toBuffer(),
    base().jpeg().withMetadata({ orientation: 6 }).toBuffer(),
    base().jpeg({ quality: 70, optimiseCoding: false, quantisationTable: 3 }).toBuffer(),
  ]);
  const pngs = await bytes([
    base().png().toBuffer(),
    base().ensureAlpha().png({ palette: true }).toBuffer(),
    base().greyscale().png().toBuffer(),
    base().toColourspace("rgb16").png().toBuffer(),
    base().png({ progressive: true }).toBuffer(),
  ]);
  const webps = await bytes([
    base().webp({ quality: 70 }).toBuffer(),
    base().ensureAlpha(0.5).webp({ quality: 60, alphaQuality: 80 }).toBuffer(),
    base().webp({ lossless: true }).toBuffer(),
    base()
      .ensureAlpha()
      .png({ palette: true, colours: 6 })
      .toBuffer()
      .then((png) => sharp(png).webp({ lossless: true }).toBuffer()),
  ]);
  const code = await QRCode.toBuffer("https://example.com/fuzz", { width: 120, margin: 2 });
  const codes = await bytes([Promise.resolve(code), sharp(code).jpeg({ quality: 85 }).toBuffer()]);
  const photo = await photoPixels(1600, 1200);
  const splittable = await bytes([
    sharp(photo, { raw: { width: 1600, height: 1200, channels: 3 } })
      .jpeg({ quality: 90 })
      .toBuffer(),
  ]);
  return { images: [...jpegs, ...pngs, webps[0]!], pngs, webps, codes, splittable };
}

// --- mutations ----------------------------------------------------------------------------------------------

/** One mutation of a corpus image: bytes flipped, a run or header bytes overwritten, a cut, an insertion or a duplicated run. */
export function mutated(seeds: Uint8Array[]): fc.Arbitrary<Uint8Array> {
  return fc
    .record({
      seed: fc.nat(),
      kind: fc.constantFrom("flip", "run", "header", "cut", "insert", "duplicate"),
      // Unbiased: fast-check's default bias puts nine doubles in ten below 0.01, i.e. on the magic bytes.
      at: fc.noBias(fc.nat({ max: 999_999 })).map((n) => n / 1_000_000),
      len: fc.integer({ min: 1, max: 64 }),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
      fixCrc: fc.boolean(),
    })
    .map(({ seed, kind, at, len, bytes, fixCrc }) => {
      const out = mutate(seeds[seed % seeds.length]!, kind, at, len, bytes);
      return fixCrc ? withPngChecksums(out) : out;
    });
}

function mutate(src: Uint8Array, kind: string, at: number, len: number, bytes: Uint8Array): Uint8Array {
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
    case "header": {
      // Frame and chunk headers (sizes, precision, marker types, IHDR fields) sit in the first bytes.
      const h = Math.floor(at * Math.min(out.length, 256));
      for (let i = 0; i < Math.min(4, bytes.length) && h + i < out.length; i++) out[h + i] = bytes[i]!;
      return out;
    }
    case "cut":
      return out.subarray(0, Math.max(1, p));
    case "insert":
      return Uint8Array.from([...src.subarray(0, p), ...bytes, ...src.subarray(p)]);
    default:
      return Uint8Array.from([...src.subarray(0, p + len), ...src.subarray(p, p + len), ...src.subarray(p + len)]);
  }
}

/** A PNG's chunk checksums recomputed, so a mutation reaches the decoder past the CRC check; other bytes unchanged. */
function withPngChecksums(b: Uint8Array): Uint8Array {
  if (b.length < 8 || b[0] !== 0x89 || b[1] !== 0x50) return b;
  const out = Uint8Array.from(b);
  const view = new DataView(out.buffer);
  for (let pos = 8; pos + 12 <= out.length; ) {
    const length = view.getUint32(pos);
    if (pos + 12 + length > out.length) break;
    view.setUint32(pos + 8 + length, crc32(out.subarray(pos + 4, pos + 8 + length)));
    pos += 12 + length;
  }
  return out;
}

// --- outcomes -----------------------------------------------------------------------------------------------

/** A 4xx ApiError passes; anything else thrown is a failure (the API would answer 500). */
export function allowed4xx(err: unknown): void {
  if (err instanceof ApiError && err.status >= 400 && err.status < 500) return;
  if (err instanceof ApiError) throw new FuzzFailure(`an ApiError with status ${err.status}: ${err.code} ${err.message}`);
  throw new FuzzFailure(`threw ${err instanceof Error ? `${err.name}: ${err.message}\n${err.stack ?? ""}` : String(err)}`);
}

async function only4xx(run: () => unknown): Promise<void> {
  try {
    await run();
  } catch (err) {
    allowed4xx(err);
  }
}

function ensure(condition: boolean, what: string): void {
  if (!condition) throw new FuzzFailure(what);
}

function wellFormed(img: { width: number; height: number; data: Uint8Array }, maxSide: number, what: string): void {
  ensure(img.width >= 1 && img.height >= 1 && Math.max(img.width, img.height) <= maxSide, `${what}: ${img.width}x${img.height} for a limit of ${maxSide}`);
  ensure(img.data.length === img.width * img.height * 4, `${what}: ${img.data.length} bytes for ${img.width}x${img.height} RGBA`);
}

const dataUri = (bytes: Uint8Array, mime = "image/png") => `data:${mime};base64,${Buffer.from(bytes).toString("base64")}`;

/** The services the QR and photo entry points use for inline images: heavy work runs inline, no fetches. */
export const fuzzServices = {
  fetcher: { fetch: () => Promise.reject(new Error("the fuzzer sends inline images only")) },
  heavy: {
    run: <N extends HeavyTaskName>(_user: string, name: N, input: HeavyInput<N>) => (HEAVY_TASKS[name] as (i: HeavyInput<N>) => Promise<unknown>)(input),
    load: () => ({ running: 0, waiting: 0 }),
  },
  imageLimits: undefined,
} as unknown as Services;

const MODEL = parseModelCatalog(undefined, undefined).models[0]!;

// --- the properties -----------------------------------------------------------------------------------------

export const PROPERTIES: FuzzProperty[] = [
  {
    name: "header",
    covers: "image sniffing and header reading (readImageHeader, sniffImage): every image input, before decoding",
    weight: 4,
    arbitrary: (c) => mutated(c.images),
    check: (bytes: Uint8Array) =>
      only4xx(() => {
        readImageHeader(bytes);
        sniffImage(bytes);
      }),
  },
  {
    name: "jpeg-decoder",
    covers: "the TypeScript JPEG decoder (decodeJpegScaled) at every N/8 scale: an image, null (left to photon) or an Error",
    weight: 4,
    arbitrary: (c) => fc.record({ bytes: mutated(c.images), eighths: fc.integer({ min: 1, max: 8 }) }),
    check: ({ bytes, eighths }: { bytes: Uint8Array; eighths: number }) => {
      let header: ReturnType<typeof readImageHeader>;
      try {
        header = readImageHeader(bytes);
      } catch {
        return; // refused before decoding, as the API does
      }
      if (header.format !== "jpeg") return;
      try {
        const img = decodeJpegScaled(bytes, Math.ceil((header.width * eighths) / 8), Math.ceil((header.height * eighths) / 8));
        if (img) wellFormed(img, Math.max(header.width, header.height), "decodeJpegScaled");
      } catch (err) {
        if (err instanceof FuzzFailure || !(err instanceof Error)) throw err; // callers catch Errors and let photon decide
      }
    },
  },
  {
    name: "jpeg-split",
    covers: "the JPEG decoder with its entropy split (the media pipeline's two threads, run in turn): one thread's planes or error",
    weight: 1,
    arbitrary: (c) => fc.record({ bytes: mutated(c.splittable), min: fc.constantFrom(700, 520, 330, 150) }),
    check: ({ bytes, min }: { bytes: Uint8Array; min: number }) => {
      const one = decodeAlone(bytes, min);
      const two = decodeWithSplit(bytes, min);
      if (two.error !== one.error || two.planes !== one.planes) {
        throw new FuzzFailure(`with the split: ${two.error ?? two.planes}; one thread: ${one.error ?? one.planes}`);
      }
    },
  },
  {
    name: "webp-decoder",
    covers: "the TypeScript WebP decoder (decodeWebp, decodeWebpLuma): lossy, alpha, lossless and palette files; an image or an Error",
    weight: 3,
    arbitrary: (c) => mutated(c.webps),
    check: (bytes: Uint8Array) => {
      try {
        wellFormed(decodeWebp(bytes), 1 << 14, "decodeWebp");
      } catch (err) {
        if (err instanceof FuzzFailure || !(err instanceof Error)) throw err; // decodeWhole turns an Error into a 422
      }
      try {
        const luma = decodeWebpLuma(bytes);
        if (luma) ensure(luma.data.length === luma.width * luma.height, `decodeWebpLuma: ${luma.data.length} bytes for ${luma.width}x${luma.height}`);
      } catch (err) {
        if (err instanceof FuzzFailure || !(err instanceof Error)) throw err;
      }
    },
  },
  {
    name: "png-decoder",
    covers: "the streaming PNG decoder (decodePngAtMost), interlaced files too: an image or an Error",
    weight: 3,
    arbitrary: (c) => fc.record({ bytes: mutated(c.pngs), maxSide: fc.integer({ min: 1, max: 128 }) }),
    check: ({ bytes, maxSide }: { bytes: Uint8Array; maxSide: number }) => {
      try {
        const img = decodePngAtMost(bytes, maxSide);
        if (img) wellFormed(img, maxSide, "decodePngAtMost");
      } catch (err) {
        if (err instanceof FuzzFailure || !(err instanceof Error)) throw err; // callers turn an Error into a 422
      }
    },
  },
  {
    name: "exif",
    covers: "EXIF (readJpegOrientation) on any APP1 payload: an orientation 1-8 or null, never a throw",
    weight: 10,
    arbitrary: () =>
      fc.oneof(
        fc.uint8Array({ maxLength: 64 }),
        fc
          .uint8Array({ maxLength: 64 })
          .map((tail) => Uint8Array.from([0x45, 0x78, 0x69, 0x66, 0, 0, ...(tail[0]! & 1 ? [0x49, 0x49, 0x2a, 0] : [0x4d, 0x4d, 0, 0x2a]), ...tail])),
      ),
    check: (app1: Uint8Array) => {
      const o = readJpegOrientation(app1);
      ensure(o === null || (Number.isInteger(o) && o >= 1 && o <= 8), `orientation ${String(o)}`);
    },
  },
  {
    name: "base64",
    covers: "base64 and data URIs (bytesFromBase64), for any string: bytes or a 4xx",
    weight: 10,
    arbitrary: () => fc.oneof(fc.string(), fc.stringMatching(/^(data:[a-z/+;=-]{0,30},)?[A-Za-z0-9+/=_\s-]{0,200}$/)),
    check: (text: string) => only4xx(() => bytesFromBase64(text, 1024)),
  },
  {
    name: "inline-body",
    covers:
      "JSON bodies with inline images read as they stream in (InlineBodyReader), for any bytes in any chunks: a value with its images' bytes or errors, or a 4xx",
    weight: 5,
    arbitrary: () =>
      fc.record({
        body: fc.oneof(
          fc.uint8Array({ maxLength: 2000 }),
          fc
            .tuple(
              fc.stringMatching(/^[{}[\],:" \\a-z0-9/+=\n-]{0,40}$/),
              fc.stringMatching(/^[A-Za-z0-9+/=\\"u ]{0,600}$/),
              fc.stringMatching(/^[{}[\],:" a-z0-9]{0,20}$/),
            )
            .map(([a, b, c]) => new TextEncoder().encode(`{"images":[${a}"data:image/png;base64,${b}${c}`)),
        ),
        cuts: fc.array(fc.nat(), { maxLength: 8 }),
      }),
    check: ({ body, cuts }: { body: Uint8Array; cuts: number[] }) =>
      only4xx(() => {
        const reader = new InlineBodyReader(
          [
            { path: [], kind: "image-or-url" },
            { path: ["base64"], kind: "base64" },
            { path: ["images", "*"], kind: "image-or-url" },
          ],
          body.length,
        );
        let from = 0;
        for (const cut of [...cuts.map((c) => c % (body.length + 1)), body.length].sort((a, b) => a - b)) {
          reader.push(body.subarray(from, cut));
          from = cut;
        }
        const { value, images } = reader.end();
        const visit = (v: unknown): void => {
          if (typeof v === "string") {
            try {
              images.bytes(v);
            } catch (err) {
              allowed4xx(err);
            }
          } else if (v && typeof v === "object") Object.values(v).forEach(visit);
        };
        visit(value);
      }),
  },
  {
    name: "hub-form",
    covers:
      "the hub's form reader (readForm, behind csrfGuard and every hub POST): any bytes or urlencoded text, any content type, in any chunks; one string per field or a 4xx HubError",
    weight: 5,
    arbitrary: () => {
      const text = fc.oneof(
        fc.string({ maxLength: 12 }),
        fc.string({ unit: "grapheme", maxLength: 12 }),
        fc.constantFrom("", "_csrf", "token", "name", "__proto__", "constructor", "a\u0000b", "%", "%E0%A4", "%ZZ", "+", "=", "&"),
      );
      const field = fc.record({
        name: text,
        value: fc.oneof(
          text,
          fc.nat({ max: 4200 }).map((n) => "v".repeat(n)),
        ),
        raw: fc.boolean(),
      });
      const form = fc
        .array(field, { maxLength: 40 })
        .map((fields) => fields.map((f) => (f.raw ? `${f.name}=${f.value}` : new URLSearchParams([[f.name, f.value]]).toString())).join("&"))
        .map((s) => new TextEncoder().encode(s));
      const near = fc
        .record({ fill: fc.constantFrom("a", "%41", "&", "=", "a=b&"), bytes: fc.integer({ min: 60_000, max: 70_000 }) })
        .map(({ fill, bytes }) => new TextEncoder().encode(`token=${fill.repeat(Math.ceil(bytes / fill.length))}`.slice(0, bytes)));
      return fc.record({
        body: fc.oneof({ arbitrary: fc.uint8Array({ maxLength: 2000 }), weight: 2 }, { arbitrary: form, weight: 4 }, { arbitrary: near, weight: 1 }),
        type: fc.oneof(
          {
            arbitrary: fc.constantFrom(
              "application/x-www-form-urlencoded",
              "application/x-www-form-urlencoded; charset=UTF-8",
              'Application/X-WWW-Form-Urlencoded;charset="utf-8"',
            ),
            weight: 6,
          },
          {
            arbitrary: fc.constantFrom(
              undefined,
              "application/x-www-form-urlencoded; charset=latin1",
              "multipart/form-data; boundary=x",
              "text/plain",
              "",
              ";",
            ),
            weight: 1,
          },
        ),
        declare: fc.constantFrom("none", "true", "short", "huge"),
        cuts: fc.array(fc.nat(), { maxLength: 8 }),
      });
    },
    check: async ({
      body,
      type,
      declare,
      cuts,
    }: {
      body: Uint8Array;
      type: string | undefined;
      declare: "none" | "true" | "short" | "huge";
      cuts: number[];
    }) => {
      const chunks: Uint8Array[] = [];
      let from = 0;
      for (const cut of [...cuts.map((c) => c % (body.length + 1)), body.length].sort((a, b) => a - b)) {
        chunks.push(body.subarray(from, cut));
        from = cut;
      }
      const headers = new Headers();
      if (type !== undefined) headers.set("content-type", type);
      if (declare !== "none")
        headers.set("content-length", String(declare === "true" ? body.length : declare === "short" ? Math.max(0, body.length - 1) : 1 << 30));
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          const next = chunks.shift();
          if (next) controller.enqueue(next);
          else controller.close();
        },
      });
      const request = new Request("http://127.0.0.1:8787/hub/login", { method: "POST", headers, body: stream, duplex: "half" } as RequestInit);
      let form: Readonly<Record<string, string>>;
      try {
        form = await readForm(request);
      } catch (err) {
        if (err instanceof HubError && err.status >= 400 && err.status < 500) return;
        throw err;
      }
      ensure(Object.isFrozen(form), "the form is not frozen");
      const entries = Object.entries(form);
      ensure(entries.length <= HUB_MAX_FIELDS, `${entries.length} fields`);
      for (const [name, value] of entries) {
        ensure(
          typeof value === "string" && value.length <= HUB_MAX_FIELD_CHARS && name.length <= HUB_MAX_NAME_CHARS,
          `field ${JSON.stringify(name.slice(0, 40))}`,
        );
        ensure(!name.includes("\u0000") && !value.includes("\u0000"), "a NUL passed");
      }
      ensure(body.length <= HUB_MAX_BODY_BYTES, `${body.length} bytes were read`);
      // What was accepted is what the platform's parser reads, field for field.
      const byName = (a: [string, string], b: [string, string]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
      const expected = body.length ? [...new URLSearchParams(new TextDecoder().decode(body))] : [];
      ensure(JSON.stringify(entries.sort(byName)) === JSON.stringify(expected.sort(byName)), "the fields differ from URLSearchParams' reading");
    },
  },
  {
    name: "normalise",
    covers: "the media path (normaliseToJpeg, area C uploads and post images): a JPEG or a 4xx",
    weight: 1,
    arbitrary: (c) => mutated(c.images),
    check: (bytes: Uint8Array) =>
      only4xx(async () => {
        const out = await normaliseToJpeg(bytes);
        ensure(readImageHeader(out.bytes).format === "jpeg", "normaliseToJpeg did not give a JPEG");
      }),
  },
  {
    name: "scaled-decode",
    covers: "the scaled decode (decodeAtMost: photo logos and references): an image within the limit or a 4xx",
    weight: 1,
    arbitrary: (c) => fc.record({ bytes: mutated(c.images), limit: fc.integer({ min: 8, max: 128 }) }),
    check: ({ bytes, limit }: { bytes: Uint8Array; limit: number }) => only4xx(() => wellFormed(decodeAtMost(bytes, limit), limit, "decodeAtMost")),
  },
  {
    name: "qr-logo",
    covers: "a QR code's logo as a data URI (generateQrCode, behind POST /api/qr-code/generate): a PNG or a 4xx",
    weight: 1,
    arbitrary: (c) => mutated(c.images),
    check: (bytes: Uint8Array) =>
      only4xx(async () => {
        const request = parseGenerateRequest({ type: "text", value: "fuzz", size: 256, logoUrl: dataUri(bytes) });
        const { png } = await generateQrCode(fuzzServices, "fuzz", request);
        ensure(readImageHeader(png).format === "png", "generateQrCode did not give a PNG");
      }),
  },
  {
    name: "qr-decode",
    covers: "QR decode input (decodeQrCode, behind POST /api/qr-code/decode): text or a 4xx",
    weight: 1,
    arbitrary: (c) => mutated([...c.codes, ...c.images]),
    check: (bytes: Uint8Array) =>
      only4xx(async () => {
        const { decodedText } = await decodeQrCode(fuzzServices, "fuzz", { base64: dataUri(bytes) });
        ensure(typeof decodedText === "string", "decodeQrCode gave no text");
      }),
  },
  {
    name: "photo-inputs",
    covers: "area B product, logo and reference images (loadInputs, then the photoLogo and photoFinish heavy tasks): an image, a 4xx or a product's own error",
    weight: 1,
    arbitrary: (c) =>
      fc.record({ bytes: mutated(c.images), role: fc.constantFrom("product", "logo", "reference"), other: fc.constantFrom(...c.images.slice(0, 2)) }),
    check: (input: { bytes: Uint8Array; role: "product" | "logo" | "reference"; other: Uint8Array }) => only4xx(() => photoInputs(input)),
  },
  {
    name: "sandbox-inputs",
    covers:
      "the platform sandbox's routes (consent dialog, token exchange, Graph edges and nodes, control routes) through app.request(): random forms, JSON, multipart, raw bodies, query strings, path segments and cookies mixed with real tokens; a whole answer below 500 within 7 s (test/fuzz/sandbox-inputs.ts)",
    weight: 1,
    arbitrary: () => {
      const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: "binary", maxLength: 40 }), fc.string({ unit: "grapheme", maxLength: 12 }));
      return fc.record({
        route: fc.nat(),
        method: fc.nat(),
        segments: fc.array(text, { maxLength: 3 }),
        params: fc.array(
          fc.tuple(
            fc.oneof({ arbitrary: fc.nat(), weight: 4 }, { arbitrary: text, weight: 1 }),
            fc.oneof({ arbitrary: fc.nat(), weight: 2 }, { arbitrary: text, weight: 1 }),
          ),
          { maxLength: 8 },
        ),
        body: fc.nat(),
        raw: fc.oneof(text, fc.string({ unit: "binary", maxLength: 400 })),
        json: fc.jsonValue({ maxDepth: 3 }),
        session: fc.nat(),
        auth: fc.nat(),
      });
    },
    // The fuzz worker loads this module through tsx's CommonJS hook, where only require resolves a .ts path.
    check: async (input) =>
      (typeof require === "function" ? (require("./sandbox-inputs") as typeof import("./sandbox-inputs")) : await import("./sandbox-inputs")).checkSandboxCase(
        input,
      ),
  },
];

/** One area B request at 128 x 128 with the fuzzed image in `role` and a good corpus image in the others. */
async function photoInputs({ bytes, role, other }: { bytes: Uint8Array; role: "product" | "logo" | "reference"; other: Uint8Array }): Promise<void> {
  const source = (r: string) => dataUri(r === role ? bytes : other, "image/jpeg");
  const request = { products: [{ source: source("product"), label: null }], logo: source("logo"), reference: source("reference") } as unknown as PhotoRequest;
  const loaded = await loadInputs(fuzzServices, request);
  const product = loaded.products[0]!;
  if (!("bytes" in product)) return; // the product's own error (one product: loadInputs throws instead)
  const logo = await HEAVY_TASKS.photoLogo({ bytes: loaded.logo!.bytes, canvas: { width: 128, height: 128 }, size: 0.2 });
  try {
    const out = await HEAVY_TASKS.photoFinish({
      scene: {
        local: {
          product: { ...product, url: "" },
          reference: { ...loaded.reference!, url: "" },
          prompt: "on a table",
          model: MODEL,
          resolution: "1K",
          aspectRatio: "1:1",
          width: 128,
          height: 128,
        },
      },
      width: 128,
      height: 128,
      logo: { image: logo, placement: "bottom-right", size: 0.2 },
      texts: {},
    });
    ensure(readImageHeader(out.bytes).format === "png", "photoFinish did not give a PNG");
  } catch (err) {
    // The item fails with its own code (GenerationError), which the answer reports; GENERATION_FAILED is our fault.
    if (err instanceof GenerationError && err.code !== "GENERATION_FAILED") return;
    throw err;
  }
}

// --- saving and replaying inputs ----------------------------------------------------------------------------

/** A case's input as JSON (byte arrays as base64), for the failure files. */
export function inputToJson(input: unknown): string {
  return JSON.stringify(input, (_k, v) => (v instanceof Uint8Array ? { $bytes: Buffer.from(v).toString("base64") } : v), 2);
}

/** The input inputToJson wrote. */
export function inputFromJson(text: string): unknown {
  return JSON.parse(text, (_k, v) => (v && typeof v === "object" && typeof v.$bytes === "string" ? new Uint8Array(Buffer.from(v.$bytes, "base64")) : v));
}

export function propertyNamed(name: string): FuzzProperty {
  const p = PROPERTIES.find((x) => x.name === name);
  if (!p) throw new Error(`no fuzz property "${name}"; there are ${PROPERTIES.map((x) => x.name).join(", ")}`);
  return p;
}
