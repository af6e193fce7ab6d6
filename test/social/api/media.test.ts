/**
 * POST /media and GET /media/{id}: the three body forms, normalisation seen through the API, storage under a
 * random key, owner scoping, and the body errors (415, 400, 413, 422).
 */
import sharp, { type Metadata } from "sharp";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MediaResponseSchema } from "../../../src/social/schemas";
import { makeJpeg, makePng } from "../../helpers/images";
import { startImageServer, type ImageServer } from "../../helpers/image-server";
import { haveSystemTool } from "../../helpers/system-tools";
import { body, createSocialTestApp, dataUri, SOCIAL, type SocialTestApp } from "../../helpers/social";

let h: SocialTestApp;
let server: ImageServer;
let png: Buffer;

// The loopback HTTPS image server's certificate is made by openssl: without it every case is skipped.
const haveOpenssl = haveSystemTool("social/api/media", "openssl");
beforeEach(({ skip }) => skip(!haveOpenssl));

beforeAll(async () => {
  if (!haveOpenssl) return;
  server = await startImageServer();
  h = await createSocialTestApp({ fetcherTestAllow: { origins: [server.origin], ca: server.ca } });
  png = await makePng(600, 400);
  server.route("/photo.png", (_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(png));
});

afterAll(async () => {
  await h?.close();
  await server?.close();
});

async function stored(url: string): Promise<{ bytes: Buffer; meta: Metadata }> {
  const res = await h.app.request(new URL(url).pathname);
  expect(res.status).toBe(200);
  const bytes = Buffer.from(await res.arrayBuffer());
  return { bytes, meta: await sharp(bytes).metadata() };
}

describe("POST /media: the three body forms", () => {
  const forms: Array<[string, () => unknown]> = [
    ["{url}", () => ({ url: server.url("/photo.png") })],
    ["{base64} bare", () => ({ base64: png.toString("base64") })],
    ["{base64: data URI, mimeType}", () => ({ base64: dataUri(png), mimeType: "image/png" })],
    ["a JSON string holding a data URI", () => dataUri(png)],
  ];
  for (const [name, make] of forms) {
    it(`${name}: 201 {data: media} with Location; GET returns it`, async () => {
      const { apiKey } = await h.createUser();
      const putsBefore = h.puts.length;
      const res = await h.createMedia(apiKey, make());
      expect(res.status).toBe(201);
      const json = await body(res);
      expect(MediaResponseSchema.safeParse(json).success).toBe(true);
      const media = json.data;
      expect(res.headers.get("location")).toBe(`${SOCIAL}/media/${media.id}`);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(media).toMatchObject({ mimeType: "image/jpeg", width: 600, height: 400 });
      expect(Date.parse(media.createdAt)).not.toBeNaN();

      // Stored once, under a random key, and the URL is what storage returned.
      expect(h.puts.length - putsBefore).toBe(1);
      const key = h.puts.at(-1)!;
      expect(key).toMatch(/^media\/[0-9a-f-]{36}\.jpg$/);
      expect(media.url).toBe(h.services.storage.urlFor(key));
      const file = await stored(media.url);
      expect(file.meta.format).toBe("jpeg");
      expect(file.bytes.length).toBe(media.bytes);

      const got = await h.get(apiKey, `/media/${media.id}`);
      expect(got.status).toBe(200);
      expect((await body(got)).data).toEqual(media);
    });
  }
});

describe("normalisation, seen through the API", () => {
  it.each([
    ["a 12 MP image is scaled into 1440 x 1800", () => makeJpeg(4000, 3000), 1440, 1080],
    ["a tall image is bounded by the height", () => makePng(1000, 2500), 720, 1800],
    ["a narrow image is enlarged to 320 wide", () => makePng(200, 300), 320, 480],
    ["EXIF orientation 6 is applied (upright dimensions)", () => makeJpeg(800, 400, { orientation: 6 }), 400, 800],
    ["a transparent PNG becomes an opaque JPEG", () => makePng(500, 500, { alpha: 0.2 }), 500, 500],
    [
      "WebP is converted",
      async () =>
        sharp({ create: { width: 640, height: 480, channels: 3, background: "#1a6" } })
          .webp()
          .toBuffer(),
      640,
      480,
    ],
  ])("%s", async (_name, make, width, height) => {
    const { apiKey } = await h.createUser();
    const res = await h.createMedia(apiKey, { base64: (await make()).toString("base64") });
    expect(res.status).toBe(201);
    const media = (await body(res)).data;
    expect([media.width, media.height]).toEqual([width, height]);
    const file = await stored(media.url);
    expect([file.meta.width, file.meta.height]).toEqual([width, height]);
    expect(file.meta.format).toBe("jpeg");
    expect(file.meta.orientation ?? 1).toBe(1);
    expect(file.meta.exif).toBeUndefined();
    expect(file.bytes.length).toBeLessThan(8 * 1024 * 1024);
  });
});

describe("owner scoping", () => {
  it("another user's media, an unknown id and a malformed id are all 404 MEDIA_NOT_FOUND", async () => {
    const a = await h.createUser();
    const b = await h.createUser();
    const mine = (await body(await h.createMedia(a.apiKey, dataUri(png)))).data;
    expect((await h.get(a.apiKey, `/media/${mine.id}`)).status).toBe(200);
    const answers = [];
    for (const id of [mine.id, crypto.randomUUID(), "not-a-uuid", "1%27%20or%201=1"]) {
      const res = await h.get(b.apiKey, `/media/${id}`);
      expect(res.status).toBe(404);
      const err = (await body(res)).error;
      expect(err.code).toBe("MEDIA_NOT_FOUND");
      answers.push(err.message.replace(/"[^"]*"/, "<id>"));
    }
    // The answer for someone else's media is the answer for media that does not exist.
    expect(new Set(answers).size).toBe(1);
  });
});

describe("body errors", () => {
  it("415 when the body is not JSON", async () => {
    const { apiKey } = await h.createUser();
    for (const type of ["text/plain", "multipart/form-data; boundary=x", "image/png"]) {
      const res = await h.request("/media", { method: "POST", headers: { ...h.auth(apiKey), "Content-Type": type }, body: "x" });
      expect(res.status).toBe(415);
      expect((await body(res)).error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    }
    const none = await h.request("/media", { method: "POST", headers: h.auth(apiKey), body: new Uint8Array([1, 2, 3]) });
    expect(none.status).toBe(415);
  });

  it("400 INVALID_JSON for malformed or empty JSON", async () => {
    const { apiKey } = await h.createUser();
    for (const raw of ["{", "{'url': 1}", "", "[1,]"]) {
      const res = await h.request("/media", { method: "POST", headers: h.json(apiKey), body: raw });
      expect(res.status).toBe(400);
      expect((await body(res)).error.code).toBe("INVALID_JSON");
    }
  });

  it.each([
    ["an empty object", {}, "(body)", /send \{url\}, \{base64, mimeType\?\} or a JSON string/],
    ["both url and base64", { url: "https://a.example/x.png", base64: "AAAA" }, "(body)", /send \{url\}/],
    ["an unknown field", { url: "https://a.example/x.png", caption: "x" }, "caption", /not a known field/],
    ["a number", 42, "(body)", /send \{url\}/],
    ["an empty string", "", "(body)", /must not be empty/],
    ["url not a string", { url: 5 }, "url", /must be a string, not a number/],
    ["an unsupported mimeType", { base64: "AAAA", mimeType: "image/gif" }, "mimeType", /must be one of image\/jpeg, /],
  ])("422 for %s", async (_name, payload, path, message) => {
    const { apiKey } = await h.createUser();
    const res = await h.createMedia(apiKey, payload);
    expect(res.status).toBe(422);
    const err = (await body(res)).error;
    expect(err.code).toBe("VALIDATION_FAILED");
    expect(err.details[0].path).toBe(path);
    expect(err.message).toMatch(message);
  });

  it("422 saying video is unsupported for a video URL or data URI", async () => {
    const { apiKey } = await h.createUser();
    for (const payload of [{ url: "https://cdn.example.com/clip.mp4" }, "data:video/mp4;base64,AAAA", { base64: "AAAA", mimeType: "video/quicktime" }]) {
      const res = await h.createMedia(apiKey, payload);
      expect(res.status).toBe(422);
      expect((await body(res)).error.message).toMatch(/^Video posts are not supported/);
    }
  });

  it("413 for an image over 10 MB and for a request over 20 MB", async () => {
    const { apiKey } = await h.createUser();
    const elevenMb = Buffer.alloc(11 * 1024 * 1024, 7).toString("base64");
    const image = await h.createMedia(apiKey, { base64: elevenMb });
    expect(image.status).toBe(413);
    expect((await body(image)).error.code).toBe("PAYLOAD_TOO_LARGE");
    const huge = await h.createMedia(apiKey, { base64: "A".repeat(21 * 1024 * 1024) });
    expect(huge.status).toBe(413);
    expect((await body(huge)).error.message).toMatch(/20 MB/);
  });
});
