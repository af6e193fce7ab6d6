/**
 * Bad input through the API (the images pipeline tests its own parts): refused image URLs and hostile images
 * sent to POST /media (and one post), each answered with a clear 4xx and never a 500; URL refusals never
 * reach a private address, counted by loopback listeners.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { makeAnimatedWebp, makeGif, makeJpeg, makePng, makeTiff, makeWebp, patchJpegSize, pngHeaderOnly, toApng } from "../../helpers/images";
import { startHitCounter, startImageServer, type HitCounter, type ImageServer } from "../../helpers/image-server";
import { haveSystemTool } from "../../helpers/system-tools";
import { body, createSocialTestApp, dataUri, type SocialTestApp } from "../../helpers/social";

let h: SocialTestApp;
let server: ImageServer;
let counter: HitCounter;
let apiKey: string;

// The loopback HTTPS image server's certificate is made by openssl: without it every case is skipped.
const haveOpenssl = haveSystemTool("social/api/media-bad-input", "openssl");
beforeEach(({ skip }) => skip(!haveOpenssl));

beforeAll(async () => {
  if (!haveOpenssl) return;
  counter = await startHitCounter([
    { host: "127.0.0.1", port: 443 },
    { host: "::1", port: 443 },
  ]);
  server = await startImageServer();
  h = await createSocialTestApp({ fetcherTestAllow: { origins: [server.origin], ca: server.ca } });
  ({ apiKey } = await h.createUser());
  server.route("/page.html", (_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<p>hi</p>"));
});

afterAll(async () => {
  await h?.close();
  await server?.close();
  await counter?.close();
});

const listenerPort = () => counter.bound.find((b) => b.host === "127.0.0.1" && b.port !== 443)!.port;

describe("refused image URLs: 4xx INVALID_IMAGE_URL, nothing reaches a private address", () => {
  const urls = (): string[] => {
    const p = listenerPort();
    const to = (target: string, status = 302) => server.url(`/redirect?status=${status}&to=${encodeURIComponent(target)}`);
    return [
      "http://example.com/a.jpg",
      `http://127.0.0.1:${p}/a.jpg`,
      "ftp://example.com/a.jpg",
      "file:///etc/passwd",
      "gopher://127.0.0.1:6379/_",
      "https://example.com:8443/a.jpg",
      `https://127.0.0.1:${p}/a.jpg`,
      "https://user:pass@example.com/a.jpg",
      "https://example.com@127.0.0.1/a.jpg",
      "https://127.0.0.1/a.jpg",
      "https://localhost/a.jpg",
      "https://localhost./a.jpg",
      "https://0.0.0.0/",
      "https://0/",
      "https://[::]/",
      "https://[::1]/",
      "https://2130706433/",
      "https://0x7f000001/",
      "https://0177.0.0.1/",
      "https://127.1/",
      "https://0x7f.1/",
      "https://[::ffff:127.0.0.1]/",
      "https://[::ffff:a9fe:a9fe]/",
      "https://169.254.169.254/latest/meta-data/",
      "https://10.0.0.1/",
      "https://172.16.0.1/",
      "https://192.168.1.1/",
      "https://100.64.0.1/",
      "https://[fd00::1]/",
      "https://[fe80::1]/",
      "https://[::7f00:1]/",
      "https://[64:ff9b::7f00:1]/",
      "https://①②⑦.0.0.1/",
      "https://224.0.0.1/",
      "https://metadata.google.internal/",
      "https://127.0.0.1.nip.io/",
      "https:127.0.0.1",
      "https://[fe80::1%25eth0]/",
      `https://example.com/${"a".repeat(2100)}`,
      to(`https://127.0.0.1:${p}/`),
      to("https://169.254.169.254/", 301),
      to(`http://127.0.0.1:${p}/`, 307),
      server.url("/status/404"),
      server.url("/page.html"),
    ];
  };

  it("POST /media {url} refuses each one with 422 INVALID_IMAGE_URL", async () => {
    const list = urls();
    expect(list.length).toBeGreaterThanOrEqual(30);
    const before = { hits: counter.hits(), puts: h.puts.length };
    for (const url of list) {
      const res = await h.createMedia(apiKey, { url });
      expect(res.status, url).toBe(422);
      const err = (await body(res)).error;
      expect(err.code, url).toBe("INVALID_IMAGE_URL");
      expect(err.message.length).toBeGreaterThan(20);
      expect(err.message).not.toMatch(/pass@/);
    }
    expect(counter.hits() - before.hits).toBe(0);
    expect(h.puts.length).toBe(before.puts);
  });

  it("the same URLs as post images are refused too (a URL string and {url}), naming the image", async () => {
    const u = await h.createUser();
    const page = await h.seedAccount(u.userId, "pageplatform");
    const before = counter.hits();
    for (const [i, url] of urls().slice(0, 12).entries()) {
      const item = i % 2 === 0 ? url : { url };
      const res = await h.createPost(u.apiKey, { accountIds: page, images: [item] });
      expect(res.status, url).toBe(422);
      const err = (await body(res)).error;
      expect(err.code, url).toBe("INVALID_IMAGE_URL");
      expect(err.details[0].path).toBe("images.0");
    }
    expect(counter.hits() - before).toBe(0);
  });

  it("a URL answering over 10 MB is 413", async () => {
    for (const path of ["/big?bytes=11000000", "/stream?bytes=11000000"]) {
      const res = await h.createMedia(apiKey, { url: server.url(path) });
      expect(res.status).toBe(413);
      expect((await body(res)).error.code).toBe("PAYLOAD_TOO_LARGE");
    }
  });
});

describe("bad images: a clear 4xx, or processed correctly; never a 500", () => {
  type Case = [name: string, make: () => Promise<Uint8Array | string> | Uint8Array | string, expected: number, code?: string, message?: RegExp];
  const cases: Case[] = [
    ["one byte", () => new Uint8Array([0xff]), 422, "INVALID_IMAGE", /not a recognised image/],
    ["random bytes", () => crypto.getRandomValues(new Uint8Array(4096)), 422, "INVALID_IMAGE", /not a recognised image/],
    ["wrong magic (PNG with a bad first byte)", async () => Object.assign(Buffer.from(await makePng(32, 32)), { 0: 0x88 }), 422, "INVALID_IMAGE"],
    ["truncated JPEG header", async () => (await makeJpeg(64, 48)).subarray(0, 10), 422, "INVALID_IMAGE", /truncated/],
    [
      "JPEG cut at 60%",
      async () => {
        const j = await makeJpeg(640, 480);
        return j.subarray(0, Math.floor(j.length * 0.6));
      },
      422,
      "INVALID_IMAGE",
    ],
    ["truncated PNG", async () => (await makePng(32, 32)).subarray(0, 20), 422, "INVALID_IMAGE"],
    ["PNG bomb header (100000 x 100000)", () => pngHeaderOnly(100_000, 100_000), 422, "INVALID_IMAGE", /40 million pixels/],
    ["JPEG header claiming 65000 x 65000", async () => patchJpegSize(await makeJpeg(64, 48), 65000, 65000), 422, "INVALID_IMAGE", /40 million pixels/],
    ["huge but within pixels: 20000 x 2000 header", () => pngHeaderOnly(20_000, 2_000), 422, "INVALID_IMAGE"],
    ["0 x 0 PNG", () => pngHeaderOnly(0, 0), 422, "INVALID_IMAGE", /no pixels/],
    ["0-wide JPEG", async () => patchJpegSize(await makeJpeg(64, 48), 0, 48), 422, "INVALID_IMAGE", /no pixels/],
    ["animated PNG", async () => toApng(await makePng(16, 16)), 422, "INVALID_IMAGE", /Animated PNG/],
    ["animated WebP", () => makeAnimatedWebp(), 422, "INVALID_IMAGE", /Animated WebP/],
    ["GIF", () => makeGif(), 422, "INVALID_IMAGE", /GIF/],
    ["TIFF", () => makeTiff(), 422, "INVALID_IMAGE"],
    ["SVG", () => new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"><image href="file:///etc/passwd"/></svg>'), 422, "INVALID_IMAGE"],
    ["HTML named as an image", () => new TextEncoder().encode("<!doctype html><script>alert(1)</script>"), 422, "INVALID_IMAGE"],
    ["too narrow once enlarged (10 x 1000)", () => makePng(10, 1000), 422, "INVALID_IMAGE", /too narrow/],
    ["invalid Base64 characters", () => "iVBORw0KGgo!!!!", 422, "INVALID_IMAGE", /not valid Base64/],
    ["a data URI of text/html", () => "data:text/html;base64,PGgxPmhpPC9oMT4=", 422, "INVALID_IMAGE", /must be an image/],
    [
      "over 10 MB once decoded, by one byte (the bytes are named, as 10.0 MB would not show it)",
      () => new Uint8Array(10 * 1024 * 1024 + 1),
      413,
      "PAYLOAD_TOO_LARGE",
      /10,485,761 bytes, over 10 MB = 10,485,760 bytes/,
    ],
    ["CMYK JPEG (processed)", () => makeJpeg(400, 300, { cmyk: true }), 201],
    ["16-bit PNG (processed)", () => makePng(400, 300, { depth16: true }), 201],
    ["16-bit PNG with alpha (processed)", () => makePng(400, 300, { depth16: true, alpha: 0.5 }), 201],
    ["greyscale JPEG (processed)", () => makeJpeg(400, 300, { grey: true }), 201],
    ["palette PNG (processed)", () => makePng(400, 300, { palette: true }), 201],
    ["lossless WebP with alpha (processed)", () => makeWebp(400, 300, { lossless: true, alpha: 0.5 }), 201],
    ["polyglot JPEG + ZIP/HTML (re-encoded)", async () => Buffer.concat([await makeJpeg(400, 300), Buffer.from("PK\u0003\u0004<script>x</script>")]), 201],
  ];

  it("has at least 15 refused inputs", () => {
    expect(cases.filter((c) => c[2] !== 201).length).toBeGreaterThanOrEqual(15);
  });

  for (const [name, make, expected, code, message] of cases) {
    it(`${name}: ${expected}${code ? ` ${code}` : ""}`, async () => {
      const input = await make();
      const base64 = typeof input === "string" ? input : Buffer.from(input).toString("base64");
      const res = await h.createMedia(apiKey, { base64 });
      expect(res.status).toBe(expected);
      const json = await body(res);
      if (expected === 201) {
        expect(json.data.mimeType).toBe("image/jpeg");
        const file = await h.app.request(new URL(json.data.url).pathname);
        const bytes = Buffer.from(await file.arrayBuffer());
        expect(bytes.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
        expect(bytes.includes(Buffer.from("<script>"))).toBe(false);
        return;
      }
      expect(json.error.code).toBe(code);
      if (message) expect(json.error.message).toMatch(message);
    });
  }

  it("the same hostile image as a data URI post image is refused before anything is stored", async () => {
    const u = await h.createUser();
    const page = await h.seedAccount(u.userId, "pageplatform");
    const puts = h.puts.length;
    const res = await h.createPost(u.apiKey, { accountIds: page, images: [dataUri(await makePng(16, 16)), dataUri(pngHeaderOnly(100_000, 100_000))] });
    expect(res.status).toBe(422);
    expect((await body(res)).error.details[0].path).toBe("images.1");
    expect(h.puts.length).toBe(puts);
  });
});
