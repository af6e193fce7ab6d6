/**
 * Inline images read as the body streams in (src/http/inline-images.ts). The property: for any body, split
 * into chunks anywhere, the reader gives what JSON.parse and `bytesFromBase64` on the whole text give: the
 * same value outside the image fields, the same bytes or the same error for each image, and 400 for exactly
 * the bodies JSON.parse refuses. Then the routes that read bodies this way, through HTTP: media (by a
 * chunked upload without Content-Length too), post images and their Idempotency-Key, the QR reader and the
 * QR logo, and their errors (area B's images: test/photo/generate.test.ts).
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InlineBodyReader, type InlineImageField } from "../../src/http/inline-images";
import { ApiError } from "../../src/http/errors";
import { bytesFromBase64 } from "../../src/images";
import { makeJpeg, makePng } from "../helpers/images";
import { body, createSocialTestApp, type SocialTestApp } from "../helpers/social";

const FIELDS: InlineImageField[] = [
  { path: [], kind: "image-or-url" },
  { path: ["base64"], kind: "base64" },
  { path: ["images", "*"], kind: "image-or-url" },
  { path: ["images", "*", "base64"], kind: "base64" },
];

type Outcome = { bytes: number[] } | { code: string; message: string };

function outcome(run: () => Uint8Array): Outcome {
  try {
    return { bytes: [...run()] };
  } catch (err) {
    if (err instanceof ApiError) return { code: err.code, message: err.message };
    throw err;
  }
}

/** The reader on `chunks`: the value with each placeholder replaced by its image's outcome, or the error. */
function read(chunks: Uint8Array[]): { value: unknown } | { code: string; message: string } {
  const reader = new InlineBodyReader(
    FIELDS,
    chunks.reduce((n, c) => n + c.length, 0),
  );
  try {
    for (const chunk of chunks) reader.push(chunk);
    const { value, images } = reader.end();
    const resolve = (v: unknown): unknown => {
      if (typeof v === "string") {
        if (!v.includes("\u0000inline-image:")) return v;
        return { image: outcome(() => images.bytes(v)!), dataUri: /^\s*data:/i.test(v) };
      }
      if (Array.isArray(v)) return v.map(resolve);
      if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolve(x)]));
      return v;
    };
    return { value: resolve(value) };
  } catch (err) {
    if (err instanceof ApiError) return { code: err.code, message: err.message };
    throw err;
  }
}

/** What the old path gave: JSON.parse of the text, and each long image string through bytesFromBase64. */
function oracle(text: string): { value: unknown } | { code: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { code: "INVALID_JSON" };
  }
  const image = (v: unknown, trims: boolean): unknown => {
    if (typeof v !== "string" || v.length <= 256) return v;
    const s = trims ? v.trim() : v;
    if (trims && !/^data:/i.test(s) && /^[a-z][a-z0-9+.-]*:/i.test(s)) return v; // a URL stays a string
    return new Image(v, { image: outcome(() => bytesFromBase64(s)), dataUri: /^data:/i.test(s) });
  };
  const at = (o: unknown, key: string) => (o && typeof o === "object" && !Array.isArray(o) && key in o ? (o as Record<string, unknown>)[key] : undefined);
  if (typeof parsed === "string") return { value: image(parsed, true) };
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return { value: parsed };
  const out: Record<string, unknown> = { ...(parsed as Record<string, unknown>) };
  if ("base64" in out) out.base64 = image(out.base64, false);
  const images = at(parsed, "images");
  if (Array.isArray(images)) {
    out.images = images.map((item) => {
      if (typeof item === "string") return image(item, true);
      if (item && typeof item === "object" && !Array.isArray(item) && "base64" in item)
        return { ...item, base64: image((item as { base64: unknown }).base64, false) };
      return item;
    });
  }
  return { value: out };
}

/** An image string as the old path read it; the reader may also keep the string as sent (`original`). */
class Image {
  constructor(
    readonly original: string,
    readonly read: { image: Outcome; dataUri: boolean },
  ) {}
}

/**
 * `expected` with each `Image` replaced by what the reader did with it: its string kept as sent, or the
 * old path's reading (which the caller then compares). Counts both.
 */
function settle(expected: unknown, actual: unknown, count: { kept: number; read: number }): unknown {
  if (expected instanceof Image) {
    if (actual === expected.original) {
      count.kept++;
      return actual;
    }
    count.read++;
    return expected.read;
  }
  if (Array.isArray(expected)) return expected.map((e, i) => settle(e, Array.isArray(actual) ? actual[i] : undefined, count));
  if (expected && typeof expected === "object") {
    const a = (actual && typeof actual === "object" ? actual : {}) as Record<string, unknown>;
    return Object.fromEntries(Object.entries(expected).map(([k, e]) => [k, settle(e, a[k], count)]));
  }
  return expected;
}

const latin = new TextEncoder();

/** Base64 of `bytes` spelled in one of the ways clients send it, or broken in one of the ways they break it. */
const base64Text = fc
  .record({
    // Mostly long enough to be read as an image (over 256 characters), sometimes not.
    bytes: fc
      .oneof({ arbitrary: fc.integer({ min: 190, max: 1500 }), weight: 4 }, { arbitrary: fc.integer({ min: 0, max: 200 }), weight: 1 })
      .chain((n) => fc.uint8Array({ minLength: n, maxLength: n })),
    urlSafe: fc.boolean(),
    unpadded: fc.boolean(),
    wrap: fc.constantFrom(0, 60, 76),
    header: fc.constantFrom(
      "",
      "data:image/png;base64,",
      "DATA:image/jpeg;charset=x;base64,",
      "data:text/plain;base64,",
      "data:image/png,",
      "data:image/png;base64",
      "data:;base64,",
    ),
    lead: fc.constantFrom("", " ", "\n  "),
    breakage: fc.option(
      fc.record({
        at: fc.nat(),
        what: fc.constantFrom("*", "=", "==A", "é", "😀", '"', "\u0001", "\\x", "\\u00zz", "\\u0041", "\\u00e9", "\\/", "\\n", "\\\\", "\\b"),
      }),
    ),
    escapeSlashes: fc.boolean(),
  })
  .map(({ bytes, urlSafe, unpadded, wrap, header, lead, breakage, escapeSlashes }) => {
    let text = Buffer.from(bytes).toString(urlSafe ? "base64url" : "base64");
    if (unpadded) text = text.replace(/=+$/, "");
    if (wrap) text = text.replace(new RegExp(`(.{${wrap}})`, "g"), "$1\\r\\n");
    if (escapeSlashes) text = text.replaceAll("/", "\\/");
    let json = lead.replaceAll("\n", "\\n") + header + text;
    if (breakage) {
      // Never inside an escape sequence: a break between a backslash and its letter is another test.
      let at = breakage.at % (json.length + 1);
      while (at > 0 && json[at - 1] === "\\") at--;
      json = json.slice(0, at) + breakage.what + json.slice(at);
    }
    return `"${json}"`;
  });

/** Bodies with image strings in every field the reader knows, and look-alikes in fields it must not touch. */
const bodyText = fc.oneof(
  base64Text,
  base64Text.map((s) => `{"base64":${s}}`),
  fc
    .tuple(base64Text, base64Text)
    .map(([a, b]) => ` { "url" : "https://x.example/a.png", "nested": {"base64": ${b}}, "base64" : ${a}, "n": [1, true, null, {"base64": "x"}] } `),
  fc
    .tuple(base64Text, base64Text)
    .map(
      ([a, b]) =>
        `{"images":[${a}, {"base64":${b}, "mimeType":"image/png"}, "https://x.example/b.png"], "caption": "a \\"quoted\\" [caption], {with} brackets"}`,
    ),
  fc
    .tuple(base64Text, fc.constantFrom("", "   ", "x", `https://x.example/${"a".repeat(300)}`, ` ftp://x/${"a".repeat(300)}`))
    .map(([a, b]) => `{"images":["${b}", ${a}]}`),
  fc.constantFrom("", "   ", "{", "[", '{"base64":', '{"base64":"abc', "null", "42", `"${"QUJD".repeat(100)}`),
);

function chunked(text: string, cuts: number[]): Uint8Array[] {
  const bytes = latin.encode(text);
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const p of points) {
    chunks.push(bytes.slice(from, p));
    from = p;
  }
  chunks.push(bytes.slice(from));
  return chunks.filter((c) => c.length > 0);
}

describe("the streaming body reader against JSON.parse and bytesFromBase64", () => {
  it("gives the same value, bytes and errors for any body split anywhere", () => {
    const count = { kept: 0, read: 0 };
    fc.assert(
      fc.property(bodyText, fc.array(fc.nat(), { maxLength: 12 }), (text, cuts) => {
        const expected = oracle(text);
        const actual = read(chunked(text, cuts));
        if ("code" in expected) {
          expect(actual).toMatchObject({ code: "INVALID_JSON" });
          return;
        }
        expect(actual).toEqual({ value: settle(expected.value, "value" in actual ? actual.value : undefined, count) });
      }),
      { numRuns: 3000, seed: 20261127 },
    );
    // Kept as sent only for what the reader leaves to the old path (non-ASCII or a bad escape near the start).
    expect(count.read).toBeGreaterThan(5 * count.kept);
  });

  it("counts nesting deeper than any image field instead of tracking it", () => {
    const long = `"${"QUJD".repeat(100)}"`;
    const deep = `${"[".repeat(40)}{"base64":${long}}${"]".repeat(40)}`;
    expect(read([latin.encode(deep)])).toEqual({ value: JSON.parse(deep) });
    expect(read([latin.encode("[".repeat(1_000_000))])).toMatchObject({ code: "INVALID_JSON" });
    // Back at the top after a deep value, the image field is read again.
    const after = `{"x":${"[".repeat(40)}${"]".repeat(40)},"base64":${long}}`;
    expect(read([latin.encode(after)])).toMatchObject({ value: { x: JSON.parse(`${"[".repeat(40)}${"]".repeat(40)}`), base64: { dataUri: false } } });
  });

  it("decodes an image split into one-byte chunks", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(3000));
    const text = `{"base64":"data:image/png;base64,${Buffer.from(bytes)
      .toString("base64")
      .replace(/(.{76})/g, "$1\\n")
      .replaceAll("/", "\\/")}"}`;
    const one = [...latin.encode(text)].map((b) => Uint8Array.of(b));
    expect(read(one)).toEqual({ value: { base64: { image: { bytes: [...bytes] }, dataUri: true } } });
  });
});

describe("routes that read inline images as the body streams in", () => {
  let h: SocialTestApp;
  let apiKey: string;
  let jpeg: Uint8Array;
  let png: Uint8Array;

  beforeAll(async () => {
    h = await createSocialTestApp();
    ({ apiKey } = await h.createUser());
    jpeg = await makeJpeg(1200, 900);
    png = await makePng(300, 200);
  });
  afterAll(async () => {
    await h?.close();
  });

  const post = (path: string, text: string | ReadableStream<Uint8Array>, init: RequestInit = {}) =>
    h.app.request(path, {
      method: "POST",
      headers: h.json(apiKey),
      body: text,
      ...(typeof text === "string" ? {} : { duplex: "half" }),
      ...init,
    } as RequestInit);

  it("media: a data URI with escaped slashes and line breaks, as one string or {base64}, becomes the same media", async () => {
    const b64 = Buffer.from(jpeg)
      .toString("base64")
      .replace(/(.{76})/g, "$1\\r\\n")
      .replaceAll("/", "\\/");
    for (const text of [`"data:image\\/jpeg;base64,${b64}"`, `{"base64":"${b64}","mimeType":"image/jpeg"}`, `  "  data:image/jpeg;base64,${b64} "`]) {
      const res = await post("/api/v1/social/media", text);
      expect(res.status, await res.clone().text()).toBe(201);
      expect((await body(res)).data).toMatchObject({ width: 1200, height: 900, mimeType: "image/jpeg" });
    }
  });

  it("media: a chunked upload without Content-Length, in small pieces", async () => {
    const text = latin.encode(JSON.stringify({ base64: `data:image/jpeg;base64,${Buffer.from(jpeg).toString("base64")}` }));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < text.length; at += 997) controller.enqueue(text.slice(at, at + 997));
        controller.close();
      },
    });
    const res = await post("/api/v1/social/media", stream);
    expect(res.status, await res.clone().text()).toBe(201);
    expect((await body(res)).data).toMatchObject({ width: 1200, height: 900 });
  });

  it("media: every error of the old reading, in the same words", async () => {
    const b64 = Buffer.from(jpeg).toString("base64");
    const cases: Array<[string, number, string, RegExp]> = [
      [`{"base64":"${b64.slice(0, 400)}*${b64.slice(400)}"}`, 422, "INVALID_IMAGE", /not valid Base64: unexpected character at position 400\./],
      [`{"base64":"${b64.slice(0, 401)}"}`, 422, "INVALID_IMAGE", /not valid Base64: its length or padding is wrong\./],
      [`"data:text/plain;base64,${b64}"`, 422, "INVALID_IMAGE", /has type "text\/plain"/],
      [`{"base64":"data:image/png,${b64}"}`, 422, "INVALID_IMAGE", /must be Base64-encoded/],
      [`{"base64":"${"A".repeat(14_000_004)}"}`, 413, "PAYLOAD_TOO_LARGE", /decodes to more than 10 MB/],
      [`{"base64":"${b64}\\x"}`, 400, "INVALID_JSON", /not valid JSON/],
      [`{"base64":"${b64}\n"}`, 400, "INVALID_JSON", /not valid JSON/],
      [`{"base64":"${b64}"`, 400, "INVALID_JSON", /not valid JSON/],
      [`{"base64":"${b64}`, 400, "INVALID_JSON", /not valid JSON/],
      [`"${b64}`, 400, "INVALID_JSON", /not valid JSON/],
      [``, 400, "INVALID_JSON", /empty/],
      [`{"base64":"${b64}","extra":1}`, 422, "VALIDATION_FAILED", /extra/],
      [`"https://127.0.0.1/${"a".repeat(300)}.jpg"`, 422, "INVALID_IMAGE_URL", /./],
    ];
    for (const [text, status, code, message] of cases) {
      const res = await post("/api/v1/social/media", text);
      const json = await body(res);
      expect({ status: res.status, code: json.error?.code }, text.slice(0, 60)).toEqual({ status, code });
      expect(json.error?.message, text.slice(0, 60)).toMatch(message);
    }
    const res = await post("/api/v1/social/media", `{"base64":"${b64}"}`, { headers: { ...h.json(apiKey), "content-type": "text/plain" } });
    expect(res.status).toBe(415);
  });

  it("posts: an inline image counts by its bytes for the Idempotency-Key; another image is 409", async () => {
    const user = await h.createUser();
    const account = await h.seedAccount(user.userId, "pageplatform");
    const b64 = Buffer.from(jpeg).toString("base64");
    const first = await h.createPost(user.apiKey, { accountIds: account, images: [`data:image/jpeg;base64,${b64}`] }, { key: "inline-1" });
    expect(first.status, await first.clone().text()).toBe(202);
    const wrapped = `{"accountIds":"${account}","images":[{"base64":"${b64.replace(/(.{76})/g, "$1\\n").replaceAll("/", "\\/")}","mimeType":"image/jpeg"}]}`;
    const again = await h.createPost(user.apiKey, wrapped, { key: "inline-1" });
    expect(again.headers.get("idempotency-replayed"), await again.clone().text()).toBe("true");
    expect((await body(again)).data.id).toBe((await body(first)).data.id);
    const other = await h.createPost(user.apiKey, { accountIds: account, images: [Buffer.from(png).toString("base64")] }, { key: "inline-1" });
    expect(other.status).toBe(409);
  });

  it("QR: reads a code given as Base64 and draws a logo given as a data URI", async () => {
    const gen = await post(
      "/api/qr-code/generate",
      JSON.stringify({ type: "url", value: "https://example.com/inline", logoUrl: `data:image/png;base64,${Buffer.from(png).toString("base64")}` }),
    );
    expect(gen.status, await gen.clone().text()).toBe(200);
    const dataUrl: string = (await body(gen)).data.qrCodeDataUrl;
    const read = await post("/api/qr-code/decode", `{"base64":"${dataUrl.replaceAll("/", "\\/")}"}`);
    expect(read.status, await read.clone().text()).toBe(200);
    expect((await body(read)).data.decodedText).toBe("https://example.com/inline");

    const badLogo = await post(
      "/api/qr-code/generate",
      JSON.stringify({ type: "url", value: "https://example.com", logoUrl: `data:image/png;base64,${"*".repeat(400)}` }),
    );
    expect(badLogo.status).toBe(422);
    expect((await body(badLogo)).error.message).toMatch(/not valid Base64: unexpected character at position 0/);
    const textLogo = await post(
      "/api/qr-code/generate",
      JSON.stringify({ type: "url", value: "https://example.com", logoUrl: `data:text/plain;base64,${"A".repeat(400)}` }),
    );
    expect(await body(textLogo)).toMatchObject({ error: { code: "VALIDATION_FAILED" } });
  });
});
