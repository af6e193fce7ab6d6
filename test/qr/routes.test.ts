/**
 * Area A over HTTP: the real app on the embedded twins (test harness), the ZXing wasm from the package, and a
 * loopback HTTPS image server reached only through the fetcher's test allowance.
 */
import QRCode from "qrcode";
import sharp from "sharp";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness";
import { startImageServer, type ImageServer } from "../helpers/image-server";
import { haveSystemTool } from "../helpers/system-tools";
import { useNodeZxing } from "./zxing-node";

let h: TestApp;
let server: ImageServer;
let apiKey: string;
let codePng: Buffer;
let codeJpeg: Buffer;
let logoPng: Buffer;

async function pixelsOf(png: Uint8Array | ArrayBuffer) {
  const { data, info } = await sharp(png instanceof ArrayBuffer ? Buffer.from(png) : png)
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, at: (x: number, y: number) => [...data.subarray((y * info.width + x) * 4, (y * info.width + x) * 4 + 4)] };
}

function pngFromDataUrl(dataUrl: string): Buffer {
  expect(dataUrl.startsWith("data:image/png;base64,")).toBe(true);
  return Buffer.from(dataUrl.slice("data:image/png;base64,".length), "base64");
}

// The loopback HTTPS image server's certificate is made by openssl: without it every case is skipped.
const haveOpenssl = haveSystemTool("qr/routes", "openssl");
beforeEach(({ skip }) => skip(!haveOpenssl));

beforeAll(async () => {
  if (!haveOpenssl) return;
  useNodeZxing();
  server = await startImageServer();
  const fetcherTestAllow = { origins: [server.origin], ca: server.ca };
  h = await createTestApp({ fetcherTestAllow });
  // Until src/app.ts mounts area A, mount it the way the lead will.
  const probe = await h.app.request("/api/qr-code/decode", { method: "POST" });
  if (probe.status === 404) {
    await h.close();
    h = await createTestApp({ fetcherTestAllow });
  }
  ({ apiKey } = await h.createUser());

  const res = await h.app.request(`/api/qr-code/generate/${apiKey}/${encodeURIComponent("https://example.com/from-url")}`);
  codePng = Buffer.from(await res.arrayBuffer());
  codeJpeg = await sharp(codePng).flatten({ background: "#ffffff" }).rotate(8, { background: "#ffffff" }).jpeg({ quality: 40 }).toBuffer();
  logoPng = await sharp({ create: { width: 120, height: 120, channels: 4, background: { r: 220, g: 30, b: 40, alpha: 1 } } })
    .png()
    .toBuffer();
  server.route("/code.png", (_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(codePng));
  server.route("/code.jpg", (_req, res) => res.writeHead(200, { "content-type": "image/jpeg" }).end(codeJpeg));
  server.route("/logo.png", (_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(logoPng));
  server.route("/blank.png", async (_req, res) =>
    res.writeHead(200, { "content-type": "image/png" }).end(
      await sharp({ create: { width: 64, height: 64, channels: 3, background: "#808080" } })
        .png()
        .toBuffer(),
    ),
  );
}, 60_000);

afterAll(async () => {
  await h?.close();
  await server?.close();
});

const post = (path: string, body: unknown, key = apiKey) =>
  h.app.request(`/api/qr-code${path}`, { method: "POST", headers: h.json(key), body: JSON.stringify(body) });
const decode = async (body: unknown) => {
  const res = await post("/decode", body);
  return {
    status: res.status,
    body: (await res.json()) as { data?: { decodedText: string }; error?: { code: string; message: string; details?: Array<{ path: string }> } },
  };
};

describe("GET /generate/{apiKey}/{text}", () => {
  it("returns the PNG itself with image caching headers", async () => {
    const res = await h.app.request(`/api/qr-code/generate/${apiKey}/${encodeURIComponent("hello world")}?size=300&fgColor=1A73E8`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("cache-control")).toBe("private, max-age=86400");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("etag")).toMatch(/^"[0-9a-f]{40}"$/);
    const p = await pixelsOf(await res.arrayBuffer());
    expect([p.width, p.height]).toEqual([300, 300]);
    const decoded = await decode({
      base64: Buffer.from(await (await h.app.request(`/api/qr-code/generate/${apiKey}/${encodeURIComponent("hello world")}`)).arrayBuffer()).toString("base64"),
    });
    expect(decoded.body.data?.decodedText).toBe("hello world");
  });

  it("answers 304 to a matching If-None-Match", async () => {
    const path = `/api/qr-code/generate/${apiKey}/etag-test`;
    const etag = (await h.app.request(path)).headers.get("etag")!;
    const again = await h.app.request(path, { headers: { "If-None-Match": etag } });
    expect(again.status).toBe(304);
  });

  it("takes unencoded slashes of a URL as part of the text", async () => {
    const res = await h.app.request(`/api/qr-code/generate/${apiKey}/https://example.com/a/b`);
    expect(res.status).toBe(200);
    const decoded = await decode({ base64: Buffer.from(await res.arrayBuffer()).toString("base64") });
    expect(decoded.body.data?.decodedText).toBe("https://example.com/a/b");
  });

  it("refuses a wrong key (401) and bad query values (422)", async () => {
    expect((await h.app.request(`/api/qr-code/generate/sk_not_a_key/hello`)).status).toBe(401);
    const revokedLooking = apiKey.slice(0, -4) + (apiKey.endsWith("AAAA") ? "BBBB" : "AAAA");
    expect((await h.app.request(`/api/qr-code/generate/${revokedLooking}/hello`)).status).toBe(401);
    const bad = await h.app.request(`/api/qr-code/generate/${apiKey}/hello?size=20`);
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { error: { details: Array<{ path: string }> } }).error.details[0]!.path).toBe("size");
    expect((await h.app.request(`/api/qr-code/generate/${apiKey}/hello?fgColor=%23ffffff&bgColor=000000`)).status).toBe(422);
  });

  it("content too long for a code names the path's text, the field a GET caller sent", async () => {
    for (const route of ["generate", "generate-base64"]) {
      const res = await h.app.request(`/api/qr-code/${route}/${apiKey}/${"x".repeat(3000)}`);
      expect(res.status).toBe(422);
      const err = ((await res.json()) as { error: { message: string; details: unknown[] } }).error;
      expect(err.message).toMatch(/at most 2331 bytes/);
      expect(err.details).toEqual([{ path: "text", message: "is 3000 bytes, at most 2331 fit" }]);
    }
  });

  it("refuses what POST refuses in a text (control characters), and a text that is not percent-encoded UTF-8", async () => {
    for (const route of ["generate", "generate-base64"]) {
      for (const [text, message] of [
        ["%00", /control characters/],
        ["a%07b", /control characters/],
        ["%E0%A4", /percent-encoded UTF-8/],
        ["ok%FF", /percent-encoded UTF-8/],
      ] as const) {
        const res = await h.app.request(`/api/qr-code/${route}/${apiKey}/${text}`);
        expect(res.status, `${route}/${text}`).toBe(422);
        const err = ((await res.json()) as { error: { code: string; message: string; details: Array<{ path: string; message: string }> } }).error;
        expect(err.code).toBe("VALIDATION_FAILED");
        expect(err.details[0]!.path).toBe("text");
        expect(err.details[0]!.message, `${route}/${text}`).toMatch(message);
      }
      // A line break is text like any other, as in POST; a percent sign, encoded or not, is a percent sign.
      for (const ok of ["two%0Alines", "100%25", "100%", "Save%2050%%20today", "a/b%2Fc"]) {
        expect((await h.app.request(`/api/qr-code/${route}/${apiKey}/${ok}`)).status, ok).toBe(200);
      }
    }
    // With the key in a Bearer header the path segment is a placeholder, encoded or not: the text is still checked.
    for (const placeholder of ["-", "%7BapiKey%7D", "YOUR%20API%20KEY"]) {
      const res = await h.app.request(`/api/qr-code/generate-base64/${placeholder}/ok%FF`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(res.status, placeholder).toBe(422);
    }
  });

  it("a GET without text (nothing after the key, or a dot segment URLs remove) is a 404 that says how to send it", async () => {
    for (const route of ["generate", "generate-base64"]) {
      for (const tail of ["", "/", "/.", "/%2E", "/..", "/%2e%2E"]) {
        const res = await h.app.request(`/api/qr-code/${route}/${apiKey}${tail}`);
        expect(res.status, `${route}${tail}`).toBe(404);
        const err = ((await res.json()) as { error: { code: string; message: string } }).error;
        expect(err.code).toBe("NOT_FOUND");
        expect(err.message, `${route}${tail}`).toMatch(/URL-encoded text after the key.*POST \/api\/qr-code\/generate/);
        expect(err.message).not.toContain(apiKey);
      }
    }
    // Any other unknown path keeps the plain answer.
    const other = ((await (await h.app.request("/api/qr-code/nothing-here")).json()) as { error: { message: string } }).error;
    expect(other.message).toBe("No route matches this method and path.");
  });

  it("never puts the path key in a log line", async () => {
    const lines: string[] = [];
    const logged = await createTestApp({ logLines: lines });
    try {
      const { apiKey: key } = await logged.createUser();
      await logged.app.request(`/api/qr-code/generate/${key}/hello`);
      await logged.app.request(`/api/qr-code/generate/${key.slice(0, -2)}xx/hello`);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).not.toContain(key.slice(8));
    } finally {
      await logged.close();
    }
  });
});

describe("GET /generate-base64/{apiKey}/{text}", () => {
  it("returns a data URL with the path key, and with a Bearer header", async () => {
    const viaPath = await h.app.request(`/api/qr-code/generate-base64/${apiKey}/hello`);
    expect(viaPath.status).toBe(200);
    const body = (await viaPath.json()) as { data: { qrCodeDataUrl: string } };
    const p = await pixelsOf(pngFromDataUrl(body.data.qrCodeDataUrl));
    expect(p.width).toBe(512);

    const viaBearer = await h.app.request(`/api/qr-code/generate-base64/-/hello`, { headers: h.auth(apiKey) });
    expect(viaBearer.status).toBe(200);
    expect(((await viaBearer.json()) as { data: { qrCodeDataUrl: string } }).data.qrCodeDataUrl).toBe(body.data.qrCodeDataUrl);
  });

  it("a placeholder in the path without the header is told where the key goes; a wrong key is told it is not valid", async () => {
    const message = async (res: Response) => {
      expect(res.status).toBe(401);
      return ((await res.json()) as { error: { message: string } }).error.message;
    };
    expect(await message(await h.app.request(`/api/qr-code/generate-base64/-/hello`))).toBe(
      "No API key in the path: put your API key in place of {apiKey}, or send Authorization: Bearer <API key>.",
    );
    expect(await message(await h.app.request(`/api/qr-code/generate/-/hello`))).toBe("No API key in the path: put your API key in place of {apiKey}.");
    const wrong = apiKey.slice(0, -4) + (apiKey.endsWith("AAAA") ? "BBBB" : "AAAA");
    expect(await message(await h.app.request(`/api/qr-code/generate-base64/${wrong}/hello`))).toBe("The API key is not valid or has been revoked.");
  });

  it("refuses a wrong path key, and a wrong Bearer even with a good path key", async () => {
    expect((await h.app.request(`/api/qr-code/generate-base64/nope/hello`)).status).toBe(401);
    expect((await h.app.request(`/api/qr-code/generate-base64/${apiKey}/hello`, { headers: { Authorization: "Bearer nope" } })).status).toBe(401);
  });
});

describe("POST /generate", () => {
  it("needs a Bearer key", async () => {
    const res = await h.app.request("/api/qr-code/generate", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ type: "text", value: "x" }),
    });
    expect(res.status).toBe(401);
  });

  it("returns {data:{qrCodeDataUrl}} for every type", async () => {
    for (const body of [
      { type: "url", value: "https://example.com" },
      { type: "text", value: "plain" },
      { type: "wifi", ssid: "Home", password: "secret123", encryption: "WPA" },
      { type: "email", to: "a@example.com", subject: "Hi" },
      { type: "vcard", firstName: "Jane", lastName: "Doe" },
      { type: "upi", upiId: "shop@okbank", payeeName: "Shop", amount: 10 },
    ]) {
      const res = await post("/generate", { ...body, size: 256 });
      expect(res.status, body.type).toBe(200);
      const json = (await res.json()) as { data: { qrCodeDataUrl: string; warnings?: string[] } };
      expect(json.data.warnings).toBeUndefined();
      expect((await pixelsOf(pngFromDataUrl(json.data.qrCodeDataUrl))).width).toBe(256);
    }
  });

  it("embeds a logo fetched from logoUrl and still decodes", async () => {
    const res = await post("/generate", { type: "url", value: "https://example.com/logo", logoUrl: server.url("/logo.png"), logoSizeRatio: 0.25 });
    expect(res.status).toBe(200);
    const png = pngFromDataUrl(((await res.json()) as { data: { qrCodeDataUrl: string } }).data.qrCodeDataUrl);
    expect((await pixelsOf(png)).at(256, 256)).toEqual([220, 30, 40, 255]);
    const decoded = await decode({ base64: `data:image/png;base64,${png.toString("base64")}` });
    expect(decoded.body.data?.decodedText).toBe("https://example.com/logo");
  });

  it("reports a shrunk logo in data.warnings", async () => {
    const res = await post("/generate", {
      type: "url",
      value: "https://example.com/products/item-12345?ref=qr",
      logoUrl: server.url("/logo.png"),
      logoSizeRatio: 0.4,
    });
    const json = (await res.json()) as { data: { warnings?: string[] } };
    expect(res.status).toBe(200);
    expect(json.data.warnings?.[0]).toMatch(/reduced to 0\.\d\d/);
  });

  it("names logoUrl when the logo cannot be fetched or is refused", async () => {
    for (const logoUrl of [
      server.url("/status/404"),
      "https://127.0.0.1/logo.png",
      server.url(`/redirect?to=${encodeURIComponent(server.url("/logo.png"))}`),
    ]) {
      const res = await post("/generate", { type: "text", value: "x", logoUrl });
      expect(res.status, logoUrl).toBe(422);
      const json = (await res.json()) as { error: { code: string; details: Array<{ path: string }> } };
      expect(json.error.details[0]!.path).toBe("logoUrl");
    }
  });

  it("answers 422 naming the field, 415 for non-JSON, 400 for bad JSON, QR_NOT_SCANNABLE for bad colours", async () => {
    const missing = await post("/generate", { type: "vcard", firstName: "Jane" });
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { error: { details: Array<{ path: string }> } }).error.details[0]!.path).toBe("lastName");
    const tooLong = await post("/generate", { type: "text", value: "x".repeat(3000) });
    expect(tooLong.status).toBe(422);
    expect(((await tooLong.json()) as { error: { details: Array<{ path: string }> } }).error.details[0]!.path).toBe("value");
    const unknown = await post("/generate", { type: "sms", value: "x" });
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toContain("url, text, wifi, email, vcard, upi");
    const inverted = await post("/generate", { type: "text", value: "x", fgColor: "#FFFFFF", bgColor: "#000000" });
    expect(inverted.status).toBe(422);
    expect(((await inverted.json()) as { error: { code: string } }).error.code).toBe("QR_NOT_SCANNABLE");
    const text = await h.app.request("/api/qr-code/generate", { method: "POST", headers: h.auth(apiKey, { "Content-Type": "text/plain" }), body: "x" });
    expect(text.status).toBe(415);
    const broken = await h.app.request("/api/qr-code/generate", { method: "POST", headers: h.json(apiKey), body: "{" });
    expect(broken.status).toBe(400);
  });
});

describe("POST /decode", () => {
  it("reads a code from bare Base64, a data URI and an https URL (PNG and JPEG)", async () => {
    expect((await decode({ base64: codePng.toString("base64") })).body.data?.decodedText).toBe("https://example.com/from-url");
    expect((await decode({ base64: `data:image/jpeg;base64,${codeJpeg.toString("base64")}` })).body.data?.decodedText).toBe("https://example.com/from-url");
    expect((await decode({ url: server.url("/code.png") })).body.data?.decodedText).toBe("https://example.com/from-url");
    expect((await decode({ url: server.url("/code.jpg") })).body.data?.decodedText).toBe("https://example.com/from-url");
    const webp = await sharp(codePng).webp({ quality: 60 }).toBuffer();
    expect((await decode({ base64: webp.toString("base64") })).body.data?.decodedText).toBe("https://example.com/from-url");
  });

  it("reads a small code in a big photo (the reader decodes the upload again at more pixels for it)", async () => {
    // 80 px in 3000x2250: too small in the working image the first passes use, read by the pass that asks for more pixels.
    const code = await QRCode.toBuffer("https://example.com/small-code-in-a-big-photo", { margin: 2, width: 80 });
    const photo = await sharp({ create: { width: 3000, height: 2250, channels: 3, background: "#8a9a7a" } })
      .composite([{ input: code, left: 1400, top: 1000 }])
      .jpeg({ quality: 90 })
      .toBuffer();
    expect((await decode({ base64: photo.toString("base64") })).body.data?.decodedText).toBe("https://example.com/small-code-in-a-big-photo");
  });

  it("wants exactly one of url or base64", async () => {
    for (const body of [{}, { url: server.url("/code.png"), base64: codePng.toString("base64") }, { url: "" }]) {
      const r = await decode(body);
      expect(r.status).toBe(422);
      expect(r.body.error?.code).toBe("VALIDATION_FAILED");
    }
    // An empty one is named itself, not blamed on the other.
    expect((await decode({ base64: "" })).body.error?.details).toEqual([{ path: "base64", message: "must not be empty" }]);
  });

  it("answers QR_NOT_FOUND for an image without a code, INVALID_IMAGE for non-images", async () => {
    const blank = await decode({ url: server.url("/blank.png") });
    expect([blank.status, blank.body.error?.code]).toEqual([422, "QR_NOT_FOUND"]);
    const html = await decode({ url: server.url("/html") });
    expect(html.status).toBe(422);
    const junk = await decode({ base64: Buffer.from("definitely not an image").toString("base64") });
    expect([junk.status, junk.body.error?.code]).toEqual([422, "INVALID_IMAGE"]);
  });

  it("refuses private and redirecting URLs without fetching them", async () => {
    const before = server.requests.length;
    for (const url of ["https://127.0.0.1/code.png", "https://localhost/code.png", "https://10.0.0.1/code.png", "http://example.com/code.png"]) {
      const r = await decode({ url });
      expect([r.status, r.body.error?.code], url).toEqual([422, "INVALID_IMAGE_URL"]);
      expect(r.body.error?.details?.[0]?.path, url).toBe("url");
    }
    const junk = await decode({ base64: "!!!" });
    expect([junk.body.error?.code, junk.body.error?.details?.[0]?.path]).toEqual(["INVALID_IMAGE", "base64"]);
    const redirect = await decode({ url: server.url(`/redirect?to=${encodeURIComponent(server.url("/code.png"))}`) });
    expect([redirect.status, redirect.body.error?.code]).toEqual([422, "INVALID_IMAGE_URL"]);
    expect(server.requests.slice(before).map((r) => r.path.split("?")[0])).toEqual(["/redirect"]);
  });

  it("rate-limits per user (429 with Retry-After)", async () => {
    const limited = await createTestApp({ env: { RATE_LIMIT_QR: "2" } });
    try {
      const { apiKey: key } = await limited.createUser();
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await limited.app.request(`/api/qr-code/generate/${key}/n${i}`)).status);
      expect(statuses).toEqual([200, 200, 429]);
    } finally {
      await limited.close();
    }
  });
});
