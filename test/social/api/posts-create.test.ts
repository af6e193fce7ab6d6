/**
 * POST /posts: the contract's creation rules 1, 2, 8 and 9, the field rules, per-platform capabilities and the
 * six image forms, through app.request() on the embedded services.
 */
import { count, eq } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { deliveries, idempotencyKeys, media, posts } from "../../../db/schema";
import { PostResponseSchema } from "../../../src/social/schemas";
import { makeJpeg, makePng } from "../../helpers/images";
import { startImageServer, type ImageServer } from "../../helpers/image-server";
import { haveSystemTool } from "../../helpers/system-tools";
import { body, createSocialTestApp, dataUri, SOCIAL, type SocialTestApp } from "../../helpers/social";

let h: SocialTestApp;
let server: ImageServer;
let square: Buffer;

// The loopback HTTPS image server's certificate is made by openssl: without it every case is skipped.
const haveOpenssl = haveSystemTool("social/api/posts-create", "openssl");
beforeEach(({ skip }) => skip(!haveOpenssl));

beforeAll(async () => {
  if (!haveOpenssl) return;
  server = await startImageServer();
  h = await createSocialTestApp({ fetcherTestAllow: { origins: [server.origin], ca: server.ca } });
  square = await makePng(400, 400);
  server.route("/square.png", (_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(square));
});

afterAll(async () => {
  await h?.close();
  await server?.close();
});

async function user() {
  const u = await h.createUser();
  const page = await h.seedAccount(u.userId, "pageplatform");
  const photo = await h.seedAccount(u.userId, "photoplatform");
  return { ...u, page, photo };
}

async function rowCounts(userId: string) {
  const [p] = await h.db.select({ n: count() }).from(posts).where(eq(posts.userId, userId));
  const [d] = await h.db.select({ n: count() }).from(deliveries).where(eq(deliveries.userId, userId));
  const [m] = await h.db.select({ n: count() }).from(media).where(eq(media.userId, userId));
  return { posts: p!.n, deliveries: d!.n, media: m!.n };
}

describe("rule 2: 202 immediate, 201 scheduled, Location", () => {
  it("queues an immediate post with 202 and one pending delivery per target", async () => {
    const u = await user();
    const res = await h.createPost(u.apiKey, { accountIds: [u.page, u.photo], caption: "New in", hashtags: ["summer"], images: [dataUri(square)] });
    expect(res.status).toBe(202);
    const json = await body(res);
    expect(PostResponseSchema.safeParse(json).success).toBe(true);
    const post = json.data;
    expect(res.headers.get("location")).toBe(`${SOCIAL}/posts/${post.id}`);
    expect(res.headers.get("idempotency-replayed")).toBeNull();
    expect(post.status).toBe("queued");
    expect(post.scheduledFor).toBeNull();
    expect(post.accounts.map((a: any) => [a.accountId, a.platform, a.status, a.attempts])).toEqual([
      [u.page, "pageplatform", "pending", 0],
      [u.photo, "photoplatform", "pending", 0],
    ]);
    // The recording queue hands out job ids; each delivery keeps its own.
    expect(post.accounts.every((a: any) => /^job-\d+$/.test(a.jobId))).toBe(true);
    expect(post.imageUrls).toHaveLength(1);
    expect(post.images[0]).toMatchObject({ width: 400, height: 400 });

    const got = await h.get(u.apiKey, res.headers.get("location")!.slice(SOCIAL.length));
    expect(got.status).toBe(200);
    expect((await body(got)).data).toEqual(post);
  });

  it("schedules a post with 201; deliveries are due at scheduledFor and queued for then", async () => {
    const u = await user();
    const at = new Date(h.clock.now().getTime() + 3 * 3600_000);
    const offset = at.toISOString().replace("Z", "+00:00");
    const res = await h.createPost(u.apiKey, { accountIds: u.page, caption: "Later", scheduledFor: offset });
    expect(res.status).toBe(201);
    const post = (await body(res)).data;
    expect(res.headers.get("location")).toBe(`${SOCIAL}/posts/${post.id}`);
    expect(post.status).toBe("scheduled");
    expect(post.scheduledFor).toBe(at.toISOString());
    expect(post.accounts[0].nextAttemptAt).toBe(at.toISOString());
    const queued = h.queueLog.enqueued.find((e) => e.jobId === post.accounts[0].jobId)!;
    expect(queued.notBefore?.toISOString()).toBe(at.toISOString());
  });

  it("accepts an explicit non-UTC offset and stores the same instant", async () => {
    const u = await user();
    // Any future instant: the contract sets no horizon (the queue holds far ones until they are near).
    const far = await h.createPost(u.apiKey, { accountIds: u.page, caption: "x", scheduledFor: "2099-01-01T10:00:00+05:30" });
    expect(far.status).toBe(201);
    expect((await body(far)).data.scheduledFor).toBe("2099-01-01T04:30:00.000Z");
    const ahead = new Date(h.clock.now().getTime() + 86_400_000);
    const local = `${new Date(ahead.getTime() + 5.5 * 3600_000).toISOString().slice(0, 19)}+05:30`;
    const ok = await h.createPost(u.apiKey, { accountIds: u.page, caption: "x", scheduledFor: local });
    expect(ok.status).toBe(201);
    expect((await body(ok)).data.scheduledFor).toBe(new Date(Math.floor(ahead.getTime() / 1000) * 1000).toISOString());
  });

  it("stores the post text with hashtags bare, and reports the same record on GET", async () => {
    const u = await user();
    const res = await h.createPost(u.apiKey, { accountIds: u.page, caption: "Hello", hashtags: ["#One", "two"] });
    const post = (await body(res)).data;
    expect(post.hashtags).toEqual(["One", "two"]);
    expect(post.caption).toBe("Hello");
  });
});

describe("the six image forms", () => {
  it("takes a URL string, Base64, a data URI, {url}, {base64, mimeType} and {mediaId}", async () => {
    const u = await user();
    const uploaded = await h.createMedia(u.apiKey, { base64: square.toString("base64") });
    expect(uploaded.status).toBe(201);
    const mediaId = (await body(uploaded)).data.id;
    const jpeg = await makeJpeg(500, 400);
    const res = await h.createPost(u.apiKey, {
      accountIds: u.page,
      images: [
        server.url("/square.png"),
        jpeg.toString("base64"),
        dataUri(square),
        { url: server.url("/square.png") },
        { base64: jpeg.toString("base64"), mimeType: "image/jpeg" },
        { mediaId },
      ],
    });
    expect(res.status).toBe(202);
    const post = (await body(res)).data;
    expect(post.images).toHaveLength(6);
    expect(post.images[5].mediaId).toBe(mediaId);
    expect(post.images.map((i: any) => [i.width, i.height])).toEqual([
      [400, 400],
      [500, 400],
      [400, 400],
      [400, 400],
      [500, 400],
      [400, 400],
    ]);
    // The same source is fetched or decoded once and stored once: URL, JPEG, data URI, and the media asset.
    expect(server.requests.filter((r) => r.path === "/square.png")).toHaveLength(1);
    expect(new Set(post.imageUrls).size).toBe(4);
    // Every stored image is a JPEG the service serves.
    const file = await h.app.request(new URL(post.imageUrls[0]).pathname);
    expect(file.headers.get("content-type")).toBe("image/jpeg");
  });

  it("refuses another owner's mediaId (404 MEDIA_NOT_FOUND) and a malformed one", async () => {
    const a = await user();
    const b = await user();
    const theirs = (await body(await h.createMedia(b.apiKey, dataUri(square)))).data.id;
    for (const mediaId of [theirs, "not-a-uuid", crypto.randomUUID()]) {
      const res = await h.createPost(a.apiKey, { accountIds: a.page, images: [dataUri(square), { mediaId }] });
      expect(res.status).toBe(404);
      const err = (await body(res)).error;
      expect(err.code).toBe("MEDIA_NOT_FOUND");
      // The image it is about is named, as for a gallery item.
      expect(err.details).toEqual([{ path: "images.1", message: expect.stringContaining("No media with id") }]);
    }
  });
});

describe("rule 8: targets must be connected to the key's owner", () => {
  it("404 ACCOUNT_NOT_FOUND for another user's account, an unknown id and a malformed id", async () => {
    const a = await user();
    const b = await user();
    for (const id of [b.page, "pageplatform:999", "nonsense", "twitter:1"]) {
      const res = await h.createPost(a.apiKey, { accountIds: [a.page, id], caption: "x" });
      expect(res.status).toBe(404);
      const err = (await body(res)).error;
      expect(err.code).toBe("ACCOUNT_NOT_FOUND");
      expect(err.message).toContain(id);
    }
    expect(await rowCounts(a.userId)).toEqual({ posts: 0, deliveries: 0, media: 0 });
  });

  it("409 ACCOUNT_NEEDS_RECONNECT when a target's token is no longer valid", async () => {
    const u = await user();
    const stale = await h.seedAccount(u.userId, "pageplatform", { tokenStatus: "invalid" });
    const res = await h.createPost(u.apiKey, { accountIds: [u.page, stale], caption: "x" });
    expect(res.status).toBe(409);
    const err = (await body(res)).error;
    expect(err.code).toBe("ACCOUNT_NEEDS_RECONNECT");
    expect(err.message).toContain(stale);
  });
});

describe("rule 1: every target is validated before any image work or queueing", () => {
  const refusals: Array<[string, (u: Awaited<ReturnType<typeof user>>) => Promise<unknown>, number, string]> = [
    ["an unknown account", async (u) => ({ accountIds: [u.page, "pageplatform:404"] }), 404, "ACCOUNT_NOT_FOUND"],
    [
      "an account to reconnect",
      async (u) => ({ accountIds: [u.page, await h.seedAccount(u.userId, "photoplatform", { tokenStatus: "expired" })] }),
      409,
      "ACCOUNT_NEEDS_RECONNECT",
    ],
    ["two images to photoplatform", async (u) => ({ accountIds: [u.page, u.photo], extra: 1 }), 422, "VALIDATION_FAILED"],
    ["a caption too long for photoplatform", async (u) => ({ accountIds: [u.page, u.photo], caption: "a".repeat(2201) }), 422, "VALIDATION_FAILED"],
  ];

  for (const [name, make, status, code] of refusals) {
    it(`${name}: ${status} ${code}, the image URL never fetched, nothing stored or queued`, async () => {
      const u = await user();
      const spec = (await make(u)) as { accountIds: string[]; caption?: string; extra?: number };
      const images = [server.url(`/rule1-${name.replace(/\W/g, "")}.png`)];
      if (spec.extra) images.push(server.url("/rule1-second.png"));
      const before = { requests: server.requests.length, puts: h.puts.length, queued: h.queueLog.enqueued.length };
      const res = await h.createPost(u.apiKey, { accountIds: spec.accountIds, caption: spec.caption ?? "x", images });
      expect(res.status).toBe(status);
      expect((await body(res)).error.code).toBe(code);
      expect(server.requests.length).toBe(before.requests);
      expect(h.puts.length).toBe(before.puts);
      expect(h.queueLog.enqueued.length).toBe(before.queued);
      expect(await rowCounts(u.userId)).toEqual({ posts: 0, deliveries: 0, media: 0 });
    });
  }

  it("photoplatform's aspect ratio is checked from the image header, before anything is stored", async () => {
    const u = await user();
    const wide = await makePng(1000, 400); // 2.5:1
    const tall = await makePng(400, 600); // 0.67:1
    for (const img of [wide, tall]) {
      const res = await h.createPost(u.apiKey, { accountIds: [u.page, u.photo], images: [dataUri(img)] });
      expect(res.status).toBe(422);
      const err = (await body(res)).error;
      expect(err.message).toMatch(/aspect ratio.*4:5.*1\.91:1/);
      expect(err.details[0].path).toBe("images.0");
    }
    expect(await rowCounts(u.userId)).toEqual({ posts: 0, deliveries: 0, media: 0 });
    // Just past a bound, the ratio is shown to where it differs from the bound's.
    const justTall = await h.createPost(u.apiKey, { accountIds: u.photo, images: [dataUri(await makePng(1000, 1251))] });
    expect((await body(justTall)).error.message).toContain("this image is 1000x1251 (0.7994)");
    // pageplatform has no ratio rule; the bounds themselves are accepted for photoplatform.
    expect((await h.createPost(u.apiKey, { accountIds: u.page, images: [dataUri(wide)] })).status).toBe(202);
    for (const [w, h2] of [
      [800, 1000],
      [1910, 1000],
    ] as const) {
      const res = await h.createPost(u.apiKey, { accountIds: u.photo, images: [dataUri(await makePng(w, h2))] });
      expect(res.status).toBe(202);
    }
  });

  it("checks a stored media asset's ratio for photoplatform too", async () => {
    const u = await user();
    const id = (await body(await h.createMedia(u.apiKey, dataUri(await makePng(1000, 400))))).data.id;
    const res = await h.createPost(u.apiKey, { accountIds: u.photo, images: [{ mediaId: id }] });
    expect(res.status).toBe(422);
    expect((await body(res)).error.message).toMatch(/aspect ratio/);
  });

  it("an image refused by the pipeline names the image and stores nothing", async () => {
    const u = await user();
    const res = await h.createPost(u.apiKey, { accountIds: u.page, images: [dataUri(square), "data:image/png;base64,AAAA"] });
    expect(res.status).toBe(422);
    const err = (await body(res)).error;
    expect(err.code).toBe("INVALID_IMAGE");
    expect(err.details[0].path).toBe("images.1");
    expect(await rowCounts(u.userId)).toEqual({ posts: 0, deliveries: 0, media: 0 });
  });
});

describe("per-platform capabilities", () => {
  const cases: Array<[string, (u: Awaited<ReturnType<typeof user>>) => unknown, RegExp]> = [
    ["photoplatform text-only", (u) => ({ accountIds: u.photo, caption: "words only" }), /text-only posts are not accepted/],
    [
      "photoplatform caption 2,201 with hashtags",
      (u) => ({ accountIds: u.photo, caption: "a".repeat(2192), hashtags: ["abcdef"], images: [dataUri(square)] }),
      /is 2201 characters; photoplatform accepts at most 2200/,
    ],
    [
      "photoplatform 31 hashtags",
      (u) => ({ accountIds: u.photo, caption: "x", hashtags: Array.from({ length: 31 }, (_, i) => `t${i}`), images: [dataUri(square)] }),
      /at most 30 hashtags/,
    ],
    [
      "photoplatform two images (a carousel)",
      (u) => ({ accountIds: u.photo, images: [dataUri(square), dataUri(square)] }),
      /at most 1 image.*carousels are not supported/,
    ],
    ["pageplatform caption 63,207", (u) => ({ accountIds: u.page, caption: "a".repeat(63_207) }), /63207 characters; pageplatform accepts at most 63206/],
  ];
  for (const [name, make, message] of cases) {
    it(`${name}: 422`, async () => {
      const u = await user();
      const res = await h.createPost(u.apiKey, make(u));
      expect(res.status).toBe(422);
      const err = (await body(res)).error;
      expect(err.code).toBe("VALIDATION_FAILED");
      expect(err.message).toMatch(message);
    });
  }

  it("counts characters as code points, hashtags as posted: exactly 2,200 passes", async () => {
    const u = await user();
    // "😀" is one character (two UTF-16 units); caption + "\n\n" + "#ab" = 2195 + 2 + 3.
    const res = await h.createPost(u.apiKey, { accountIds: u.photo, caption: "😀".repeat(2195), hashtags: ["ab"], images: [dataUri(square)] });
    expect(res.status).toBe(202);
    const over = await h.createPost(u.apiKey, { accountIds: u.photo, caption: "😀".repeat(2196), hashtags: ["ab"], images: [dataUri(square)] });
    expect(over.status).toBe(422);
  });

  it("pageplatform takes text alone, and up to ten images", async () => {
    const u = await user();
    expect((await h.createPost(u.apiKey, { accountIds: u.page, caption: "text" })).status).toBe(202);
    const ten = Array.from({ length: 10 }, () => dataUri(square));
    expect((await h.createPost(u.apiKey, { accountIds: u.page, images: ten })).status).toBe(202);
    const eleven = await h.createPost(u.apiKey, { accountIds: u.page, images: [...ten, dataUri(square)] });
    expect(eleven.status).toBe(422);
    expect((await body(eleven)).error.details[0].path).toBe("images");
  });
});

describe("rule 9: unsupported kinds are 422 saying so", () => {
  const cases: Array<[string, (u: Awaited<ReturnType<typeof user>>) => unknown, RegExp, string]> = [
    ["type: video", (u) => ({ accountIds: u.page, caption: "x", type: "video" }), /^Video posts are not supported/, "type"],
    ["kind: carousel", (u) => ({ accountIds: u.page, caption: "x", kind: "carousel" }), /^Carousel posts are not supported/, "kind"],
    ["mediaType: STORIES", (u) => ({ accountIds: u.photo, mediaType: "STORIES", images: [dataUri(square)] }), /^Story posts are not supported/, "mediaType"],
    ["media_type: REELS", (u) => ({ accountIds: u.photo, media_type: "REELS" }), /^Reel posts are not supported/, "media_type"],
    ["postType: message", (u) => ({ accountIds: u.page, caption: "hi", postType: "message" }), /^Direct messages are not supported/, "postType"],
    ["a video field", (u) => ({ accountIds: u.page, videoUrl: "https://cdn.example.com/a.mp4" }), /^Video posts are not supported/, "videoUrl"],
    ["a recipient (direct message)", (u) => ({ accountIds: u.page, caption: "hi", recipientId: "123" }), /^Direct messages are not supported/, "recipientId"],
    ["an image URL of an .mp4", (u) => ({ accountIds: u.page, images: ["https://cdn.example.com/clip.MP4"] }), /^Video posts are not supported/, "images.0"],
    [
      "{url} of a .mov",
      (u) => ({ accountIds: u.page, images: [{ url: "https://cdn.example.com/clip.mov?x=1" }] }),
      /^Video posts are not supported/,
      "images.0.url",
    ],
    ["a data:video URI", (u) => ({ accountIds: u.page, images: ["data:video/mp4;base64,AAAA"] }), /^Video posts are not supported/, "images.0"],
    [
      "{base64, mimeType: video/mp4}",
      (u) => ({ accountIds: u.page, images: [{ base64: "AAAA", mimeType: "video/mp4" }] }),
      /^Video posts are not supported/,
      "images.0.mimeType",
    ],
    [
      "an image item typed as a reel",
      (u) => ({ accountIds: u.photo, images: [{ url: "https://cdn.example.com/a.jpg", type: "reel" }] }),
      /^Reel posts are not supported/,
      "images.0.type",
    ],
  ];
  for (const [name, make, message, path] of cases) {
    it(name, async () => {
      const u = await user();
      const res = await h.createPost(u.apiKey, make(u));
      expect(res.status).toBe(422);
      const err = (await body(res)).error;
      expect(err.message).toMatch(message);
      expect(err.details[0].path).toBe(path);
    });
  }
});

describe("field rules: 422 naming the field", () => {
  const future = () => new Date(h.clock.now().getTime() + 3600_000).toISOString();
  const cases: Array<[string, (u: Awaited<ReturnType<typeof user>>) => unknown, string, RegExp?]> = [
    ["accountIds missing", () => ({ caption: "x" }), "accountIds"],
    ["accountIds empty", () => ({ accountIds: [], caption: "x" }), "accountIds", /at least one account/],
    ["accountIds 21", () => ({ accountIds: Array.from({ length: 21 }, (_, i) => `pageplatform:${i}`), caption: "x" }), "accountIds", /at most 20/],
    ["accountIds repeated", (u) => ({ accountIds: [u.page, u.page], caption: "x" }), "accountIds", /same account twice/],
    ["accountIds a number", () => ({ accountIds: 5, caption: "x" }), "accountIds", /account id or an array/],
    ["accountId with a NUL", () => ({ accountIds: "page\u0000platform:1", caption: "x" }), "accountIds"],
    ["accountId with a lone surrogate", () => ({ accountIds: "pageplatform:1001\ud800", caption: "x" }), "accountIds", /valid Unicode/],
    ["one of the accountIds with a lone surrogate", (u) => ({ accountIds: [u.page, "pageplatform:\udc00"], caption: "x" }), "accountIds.1", /valid Unicode/],
    ["caption not a string", (u) => ({ accountIds: u.page, caption: 5 }), "caption"],
    ["caption with a NUL", (u) => ({ accountIds: u.page, caption: "a\u0000b" }), "caption"],
    ["caption with a lone surrogate", (u) => ({ accountIds: u.page, caption: "half a smile \ud83d" }), "caption", /valid Unicode/],
    ["neither caption nor image", (u) => ({ accountIds: u.page }), "caption", /caption or at least one image/],
    ["blank caption, no image", (u) => ({ accountIds: u.page, caption: "   " }), "caption", /caption or at least one image/],
    ["hashtag with a space", (u) => ({ accountIds: u.page, caption: "x", hashtags: ["two words"] }), "hashtags.0"],
    ["hashtags not an array", (u) => ({ accountIds: u.page, caption: "x", hashtags: "#a #b" }), "hashtags"],
    ["image item a number", (u) => ({ accountIds: u.page, images: [5] }), "images.0", /https URL, a Base64/],
    ["image item with url and base64", (u) => ({ accountIds: u.page, images: [{ url: "https://a.example/x.png", base64: "AAAA" }] }), "images.0"],
    ["image mimeType image/gif", (u) => ({ accountIds: u.page, images: [{ base64: "AAAA", mimeType: "image/gif" }] }), "images.0.mimeType"],
    [
      "scheduledFor without offset",
      (u) => ({ accountIds: u.page, caption: "x", scheduledFor: "2030-01-01T10:00:00" }),
      "scheduledFor",
      /Z or an explicit offset/,
    ],
    ["scheduledFor a date", (u) => ({ accountIds: u.page, caption: "x", scheduledFor: "2030-01-01" }), "scheduledFor"],
    ["scheduledFor not a date", (u) => ({ accountIds: u.page, caption: "x", scheduledFor: "tomorrow" }), "scheduledFor"],
    ["scheduledFor Feb 30", (u) => ({ accountIds: u.page, caption: "x", scheduledFor: "2030-02-30T10:00:00Z" }), "scheduledFor"],
    ["scheduledFor in the past", (u) => ({ accountIds: u.page, caption: "x", scheduledFor: "2020-01-01T00:00:00Z" }), "scheduledFor", /must be in the future/],
    [
      "scheduledFor now",
      (u) => ({ accountIds: u.page, caption: "x", scheduledFor: new Date(h.clock.now().getTime() - 1000).toISOString() }),
      "scheduledFor",
      /future/,
    ],
    ["scheduledFor null", (u) => ({ accountIds: u.page, caption: "x", scheduledFor: null }), "scheduledFor", /leave it out to publish now/],
    [
      "scheduledFor past the year 9999 in UTC",
      (u) => ({ accountIds: u.page, caption: "x", scheduledFor: "9999-12-31T23:00:00-05:00" }),
      "scheduledFor",
      /before the year 10000/,
    ],
    ["an unknown field", (u) => ({ accountIds: u.page, caption: "x", scheduledFor: future(), title: "t" }), "title", /not a known field/],
    ["a body that is an array", () => [1, 2], "(body)"],
  ];
  for (const [name, make, path, message] of cases) {
    it(name, async () => {
      const u = await user();
      const res = await h.createPost(u.apiKey, make(u));
      expect(res.status).toBe(422);
      const err = (await body(res)).error;
      expect(err.code).toBe("VALIDATION_FAILED");
      expect(err.details.map((d: any) => d.path)).toContain(path);
      if (message) expect(err.message).toMatch(message);
      // A refused request leaves nothing behind, its key included.
      expect(await rowCounts(u.userId)).toEqual({ posts: 0, deliveries: 0, media: 0 });
      expect(await h.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.userId, u.userId))).toEqual([]);
    });
  }

  it("the example a malformed scheduledFor is shown is itself accepted", async () => {
    const u = await user();
    const refused = (await body(await h.createPost(u.apiKey, { accountIds: u.page, caption: "x", scheduledFor: "next friday" }))).error;
    const example = /e\.g\. (\S+)$/.exec(refused.details.find((d: any) => d.path === "scheduledFor").message)?.[1];
    expect(example).toMatch(/^\d{4}-\d{2}-\d{2}T09:30:00Z$/);
    const res = await h.createPost(u.apiKey, { accountIds: u.page, caption: "x", scheduledFor: example });
    expect(res.status, JSON.stringify(await res.clone().json())).toBe(201);
  });
});
