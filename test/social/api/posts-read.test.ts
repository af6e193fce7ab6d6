/**
 * GET /posts/{id} and GET /posts: the record, the derived post-level status, filters (status, platform,
 * fromDate, toDate), paging (limit, offset, total, hasMore), unknown query fields, and owner scoping. On
 * PGlite and on the machine's PostgreSQL (a scratch database): the records are JSON written by the database.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { PostListResponseSchema } from "../../../src/social/schemas";
import { createScratchDatabase, type ScratchDatabase } from "../../../dev/postgres";
import { body, createSocialTestApp, type SocialTestApp } from "../../helpers/social";

let h: SocialTestApp;

async function user() {
  const u = await h.createUser();
  const page = await h.seedAccount(u.userId, "pageplatform");
  const page2 = await h.seedAccount(u.userId, "pageplatform");
  return { ...u, page, page2 };
}

async function post(apiKey: string, request: Record<string, unknown>) {
  const res = await h.createPost(apiKey, request);
  expect([201, 202], JSON.stringify(await res.clone().json())).toContain(res.status);
  return (await body(res)).data;
}

async function list(apiKey: string, query = "") {
  const res = await h.get(apiKey, `/posts${query}`);
  expect(res.status).toBe(200);
  const json = await body(res);
  expect(PostListResponseSchema.safeParse(json).success).toBe(true);
  return json.data;
}

describe.each(["PGlite", "PostgreSQL"])("on %s", (database) => {
  let scratch: ScratchDatabase | undefined;
  beforeAll(async () => {
    if (database === "PostgreSQL") scratch = await createScratchDatabase();
    h = await createSocialTestApp(scratch ? { env: { DATABASE_URL: scratch.url } } : {});
  });
  afterAll(async () => {
    await h?.close();
    await scratch?.drop();
  });

  describe("GET /posts/{id}", () => {
    it("returns the post record's fields", async () => {
      const u = await user();
      const created = await post(u.apiKey, { accountIds: [u.page, u.page2], caption: "Fields", hashtags: ["x"] });
      const res = await h.get(u.apiKey, `/posts/${created.id}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("cache-control")).toBe("no-store");
      const record = (await body(res)).data;
      expect(Object.keys(record).sort()).toEqual(
        ["accounts", "cancelledAt", "caption", "createdAt", "hashtags", "id", "imageUrls", "images", "scheduledFor", "status", "updatedAt"].sort(),
      );
      expect(Object.keys(record.accounts[0]).sort()).toEqual(
        ["accountId", "attempts", "error", "jobId", "nextAttemptAt", "platform", "providerPostId", "publishedAt", "status"].sort(),
      );
    });

    it("finds the post by its id in upper case too (a uuid's letters are either case)", async () => {
      const u = await user();
      const created = await post(u.apiKey, { accountIds: [u.page], caption: "Upper" });
      const lower = (await body(await h.get(u.apiKey, `/posts/${created.id}`))).data;
      const res = await h.get(u.apiKey, `/posts/${created.id.toUpperCase()}`);
      expect(res.status).toBe(200);
      expect((await body(res)).data).toEqual(lower);
    });

    it("shows delivery progress written by the engine: published ids, errors, retries", async () => {
      const u = await user();
      const p = await post(u.apiKey, { accountIds: [u.page, u.page2], caption: "Progress" });
      const at = new Date("2030-01-02T03:04:05.000Z");
      await h.setDelivery(p.id, u.page, { status: "published", attempts: 1, providerPostId: "123_456", publishedAt: at, nextAttemptAt: null });
      await h.setDelivery(p.id, u.page2, { status: "failed", attempts: 2, errorCode: "RATE_LIMITED", errorMessage: "try later", nextAttemptAt: at });
      const record = (await body(await h.get(u.apiKey, `/posts/${p.id}`))).data;
      expect(record.accounts).toEqual([
        expect.objectContaining({ accountId: u.page, status: "published", providerPostId: "123_456", publishedAt: at.toISOString(), error: null }),
        expect.objectContaining({
          accountId: u.page2,
          status: "failed",
          attempts: 2,
          nextAttemptAt: at.toISOString(),
          error: { code: "RATE_LIMITED", message: "try later" },
        }),
      ]);
      expect(record.status).toBe("queued");
    });

    it("the list, GET /posts/{id} and the create answer describe a post alike (PostgreSQL builds the first two)", async () => {
      const u = await user();
      const photo = await h.seedAccount(u.userId, "photoplatform");
      // A text post's create answer is written in code; the list and the record are JSON made by the database.
      const text = await post(u.apiKey, { accountIds: [u.page2, u.page], caption: 'Quotes " \\ and\nlines, ünïcode ✓ 😀', hashtags: ["a", "b"] });
      const listed = async (id: string) => (await list(u.apiKey, "?limit=100")).items.find((p: { id: string }) => p.id === id);
      const got = async (id: string) => (await body(await h.get(u.apiKey, `/posts/${id}`))).data;
      expect(await got(text.id)).toEqual(text);
      expect(await listed(text.id)).toEqual(text);

      // Every field filled: images (with and without a media id), a schedule, errors, microsecond timestamps.
      const due = new Date(Math.floor(Date.now() / 1000) * 1000 + 30 * 86_400_000 + 123).toISOString();
      const withImages = await post(u.apiKey, { accountIds: [photo, u.page], images: [`data:image/png;base64,${await tinyPng()}`], scheduledFor: due });
      await h.db.execute(sql`update posts set images = images || '[{"url": "https://cdn.example/x.jpg", "width": 10, "height": 20}]'::jsonb,
        updated_at = '2031-01-01T00:00:00.123999Z' where id = ${withImages.id}`);
      await h.setDelivery(withImages.id, photo, { status: "failed", attempts: 3, errorCode: "INVALID_MEDIA", errorMessage: null, nextAttemptAt: null });
      await h.setDelivery(withImages.id, u.page, {
        status: "published",
        attempts: 1,
        providerPostId: "1_2",
        publishedAt: new Date("2031-05-06T07:08:10.5Z"),
        errorCode: "",
      });
      const record = await got(withImages.id);
      expect(record.images).toEqual([withImages.images[0], { url: "https://cdn.example/x.jpg", width: 10, height: 20, mediaId: null }]);
      expect(record.images[0].mediaId).toEqual(expect.any(String));
      expect(record.imageUrls).toEqual([withImages.imageUrls[0], "https://cdn.example/x.jpg"]);
      expect(record).toMatchObject({ scheduledFor: due, updatedAt: "2031-01-01T00:00:00.123Z", status: "partially_published" });
      expect(record.accounts).toEqual(
        [
          {
            accountId: photo,
            platform: "photoplatform",
            status: "failed",
            attempts: 3,
            nextAttemptAt: null,
            jobId: expect.anything(),
            providerPostId: null,
            publishedAt: null,
            error: { code: "INVALID_MEDIA", message: "" },
          },
          {
            accountId: u.page,
            platform: "pageplatform",
            status: "published",
            attempts: 1,
            nextAttemptAt: expect.any(String),
            jobId: expect.anything(),
            providerPostId: "1_2",
            publishedAt: "2031-05-06T07:08:10.500Z",
            error: null,
          },
        ].sort((a, b) => (a.accountId < b.accountId ? -1 : 1)),
      );
      expect(await listed(withImages.id)).toEqual(record);
    });

    it("404 POST_NOT_FOUND for another user's post, an unknown id and a malformed id, alike", async () => {
      const a = await user();
      const b = await user();
      const theirs = await post(b.apiKey, { accountIds: b.page, caption: "B's" });
      const messages = new Set<string>();
      for (const id of [theirs.id, crypto.randomUUID(), "123", "%00"]) {
        const res = await h.get(a.apiKey, `/posts/${id}`);
        expect(res.status).toBe(404);
        const err = (await body(res)).error;
        expect(err.code).toBe("POST_NOT_FOUND");
        messages.add(err.message.replace(/"[^"]*"/, "<id>"));
      }
      expect(messages.size).toBe(1);
    });
  });

  describe("derived post status", () => {
    const future = () => new Date(h.clock.now().getTime() + 7 * 86_400_000).toISOString();
    type Patch = Parameters<SocialTestApp["setDelivery"]>[2];
    const cases: Array<[string, boolean, Patch | null, Patch | null, string]> = [
      ["both pending, scheduled ahead", true, null, null, "scheduled"],
      ["both pending, immediate", false, null, null, "queued"],
      ["one failed awaiting a retry", false, { status: "failed", attempts: 1, nextAttemptAt: new Date() }, null, "queued"],
      ["one publishing", false, { status: "publishing", attempts: 1 }, null, "publishing"],
      ["one published, one publishing", false, { status: "published", attempts: 1, nextAttemptAt: null }, { status: "publishing", attempts: 1 }, "publishing"],
      ["one published, one outstanding", false, { status: "published", attempts: 1, nextAttemptAt: null }, null, "queued"],
      ["both published", false, { status: "published", nextAttemptAt: null }, { status: "published", nextAttemptAt: null }, "published"],
      [
        "published and failed for good",
        false,
        { status: "published", nextAttemptAt: null },
        { status: "failed", attempts: 5, nextAttemptAt: null },
        "partially_published",
      ],
      ["both failed for good", false, { status: "failed", nextAttemptAt: null }, { status: "failed", nextAttemptAt: null }, "failed"],
      ["scheduled, one attempt already made", true, { status: "failed", attempts: 1, nextAttemptAt: new Date() }, null, "queued"],
    ];
    for (const [name, scheduled, first, second, expected] of cases) {
      it(`${name}: ${expected}, and the status filter agrees`, async () => {
        const u = await user();
        const p = await post(u.apiKey, { accountIds: [u.page, u.page2], caption: name, ...(scheduled ? { scheduledFor: future() } : {}) });
        if (first) await h.setDelivery(p.id, u.page, first);
        if (second) await h.setDelivery(p.id, u.page2, second);
        expect((await body(await h.get(u.apiKey, `/posts/${p.id}`))).data.status).toBe(expected);
        const page = await list(u.apiKey, `?status=${expected}`);
        expect(page.items.map((i: any) => i.id)).toEqual([p.id]);
        expect(page.total).toBe(1);
      });
    }

    it("cancelled and partially cancelled", async () => {
      const u = await user();
      const p = await post(u.apiKey, { accountIds: [u.page, u.page2], caption: "c" });
      expect((await body(await h.cancel(u.apiKey, p.id))).data.status).toBe("cancelled");
      const q = await post(u.apiKey, { accountIds: [u.page, u.page2], caption: "pc" });
      await h.setDelivery(q.id, u.page, { status: "published", nextAttemptAt: null });
      expect((await body(await h.cancel(u.apiKey, q.id))).data.status).toBe("partially_published");
      expect((await list(u.apiKey, "?status=cancelled")).items.map((i: any) => i.id)).toEqual([p.id]);
    });
  });

  describe("GET /posts: filters and paging", () => {
    let u: Awaited<ReturnType<typeof user>>;
    let photo: string;
    const ids: string[] = [];
    const day = (n: number) => {
      const d = new Date(h.clock.now().getTime() + n * 86_400_000);
      return d.toISOString().slice(0, 10);
    };

    beforeAll(async () => {
      u = await user();
      photo = await h.seedAccount(u.userId, "photoplatform");
      // 25 immediate posts, then three scheduled on chosen days, at the edges of a day.
      for (let i = 0; i < 25; i++) ids.push((await post(u.apiKey, { accountIds: u.page, caption: `post ${i}` })).id);
      ids.push((await post(u.apiKey, { accountIds: u.page2, caption: "d10 start", scheduledFor: `${day(10)}T00:00:00Z` })).id);
      ids.push((await post(u.apiKey, { accountIds: u.page2, caption: "d10 end", scheduledFor: `${day(10)}T23:59:59.999Z` })).id);
      ids.push((await post(u.apiKey, { accountIds: u.page2, caption: "d11 start", scheduledFor: `${day(11)}T00:00:00Z` })).id);
      const other = await user();
      await post(other.apiKey, { accountIds: other.page, caption: "not yours" });
    });

    it("defaults to limit 20, offset 0, newest first, with total and hasMore", async () => {
      const page = await list(u.apiKey);
      expect(page).toMatchObject({ total: 28, limit: 20, offset: 0, hasMore: true });
      expect(page.items.map((i: any) => i.id)).toEqual([...ids].reverse().slice(0, 20));
      const rest = await list(u.apiKey, "?offset=20");
      expect(rest).toMatchObject({ total: 28, limit: 20, offset: 20, hasMore: false });
      expect(rest.items).toHaveLength(8);
    });

    it("limit and offset bounds: 1..100 and 0..10000", async () => {
      expect((await list(u.apiKey, "?limit=1")).items).toHaveLength(1);
      expect((await list(u.apiKey, "?limit=100")).items).toHaveLength(28);
      expect((await list(u.apiKey, "?offset=10000")).items).toEqual([]);
      expect(await list(u.apiKey, "?limit=5&offset=25")).toMatchObject({ total: 28, hasMore: false });
      expect(await list(u.apiKey, "?limit=5&offset=20")).toMatchObject({ total: 28, hasMore: true });
      for (const q of ["limit=0", "limit=101", "limit=abc", "limit=1.5", "offset=-1", "offset=10001", "limit=", "limit=5&limit=6"]) {
        const res = await h.get(u.apiKey, `/posts?${q}`);
        expect(res.status, q).toBe(422);
        expect((await body(res)).error.code).toBe("VALIDATION_FAILED");
      }
    });

    it("a first page of a common size (its own statement) answers what the next size's first page starts with, run often enough for the plan cache to settle on a plan", async () => {
      for (const status of ["", "&status=queued", "&status=published", "&status=scheduled"]) {
        for (const limit of [20, 25]) {
          const longer = await list(u.apiKey, `?limit=${limit + 1}${status}`);
          for (let run = 0; run < 12; run++) {
            const page = await list(u.apiKey, `?limit=${limit}${status}`);
            expect(page, `limit=${limit}${status}`).toMatchObject({ total: longer.total, limit, offset: 0, hasMore: longer.total > limit });
            expect(page.items, `limit=${limit}${status}, run ${run}`).toEqual(longer.items.slice(0, limit));
          }
        }
      }
    });

    it("a later page (its ids, then their records) holds what one long first page has at those places, run often enough for the plan cache to settle", async () => {
      for (const status of ["", "&status=queued", "&status=published", "&status=scheduled"]) {
        const all = await list(u.apiKey, `?limit=100${status}`);
        for (let run = 0; run < 7; run++) {
          for (const [limit, offset] of [
            [5, 5],
            [7, 14],
            [3, 26],
            [20, 20],
          ] as const) {
            const page = await list(u.apiKey, `?limit=${limit}&offset=${offset}${status}`);
            const where = `limit=${limit}&offset=${offset}${status}, run ${run}`;
            expect(page, where).toMatchObject({ total: all.total, limit, offset, hasMore: offset + limit < all.total });
            expect(page.items, where).toEqual(all.items.slice(offset, offset + limit));
          }
        }
      }
    });

    it("any other query field is 422 naming it", async () => {
      const takes = "is not a known query parameter; this operation takes status, platform, fromDate, toDate, limit, offset";
      for (const [q, message] of [
        ["page=2", takes],
        ["accountId=x", takes],
        ["sort=asc", takes],
        ["STATUS=queued", "is not a known query parameter (did you mean 'status'?)"],
      ]) {
        const res = await h.get(u.apiKey, `/posts?${q}`);
        expect(res.status, q).toBe(422);
        const err = (await body(res)).error;
        expect(err.details[0]).toEqual({ path: q!.split("=")[0], message });
      }
      for (const q of ["status=done", "platform=twitter", "fromDate=yesterday", "toDate=2030-01-01T10:00:00"]) {
        expect((await h.get(u.apiKey, `/posts?${q}`)).status, q).toBe(422);
      }
    });

    it("platform filter", async () => {
      expect((await list(u.apiKey, "?platform=pageplatform")).total).toBe(28);
      expect((await list(u.apiKey, "?platform=photoplatform")).total).toBe(0);
      await post(u.apiKey, { accountIds: photo, images: [`data:image/png;base64,${await tinyPng()}`] });
      expect((await list(u.apiKey, "?platform=photoplatform")).total).toBe(1);
      const deleted = (await list(u.apiKey, "?platform=photoplatform")).items[0].id;
      ids.push(deleted);
    });

    it("fromDate and toDate: inclusive, on scheduledFor, else createdAt; a date is a whole UTC day", async () => {
      const scheduled = ids.slice(25, 28);
      const only = async (q: string) => (await list(u.apiKey, q)).items.map((i: any) => i.id).sort();
      expect(await only(`?fromDate=${day(10)}&toDate=${day(10)}`)).toEqual([scheduled[0], scheduled[1]].sort());
      expect(await only(`?fromDate=${day(10)}`)).toEqual([...scheduled].sort());
      expect(await only(`?fromDate=${day(11)}T00:00:00Z`)).toEqual([scheduled[2]]);
      expect(await only(`?fromDate=${day(10)}T23:59:59.999Z&toDate=${day(11)}T00:00:00Z`)).toEqual([scheduled[1], scheduled[2]].sort());
      expect(await only(`?fromDate=${day(10)}T01:00:00%2B01:00&toDate=${day(10)}T00:00:00Z`)).toEqual([scheduled[0]]);
      // Immediate posts are dated by createdAt (today).
      expect((await list(u.apiKey, `?toDate=${day(0)}`)).total).toBe(ids.length - 3);
      expect((await list(u.apiKey, `?fromDate=${day(12)}`)).total).toBe(0);
      const reversed = await h.get(u.apiKey, `/posts?fromDate=${day(11)}&toDate=${day(10)}`);
      expect(reversed.status).toBe(422);
    });

    it("dates at and past the ends of the calendar (years 1 and 9999) bound the list like any other", async () => {
      const total = async (q: string) => {
        const res = await h.get(u.apiKey, `/posts${q}`);
        expect(res.status, q).toBe(200);
        return (await body(res)).data.total;
      };
      for (const q of [
        "?toDate=9999-12-31",
        "?fromDate=0000-06-01T00:00:00Z",
        "?fromDate=0001-01-01T00:00:00%2B01:00",
        "?fromDate=0000-01-01&toDate=9999-12-31",
      ]) {
        expect(await total(q), q).toBe(ids.length);
      }
      for (const q of ["?toDate=0000-01-01", "?fromDate=9999-12-31T23:59:59-23:59", "?toDate=0001-01-01T00:59:59%2B01:00"]) {
        expect(await total(q), q).toBe(0);
      }
      // A reversed range is refused by the dates as sent, before they are clamped.
      for (const q of ["?fromDate=0000-06-01&toDate=0000-03-01", "?fromDate=9999-12-31T23:30:00-01:00&toDate=9999-12-31T23:00:00-01:00"]) {
        const res = await h.get(u.apiKey, `/posts${q}`);
        expect(res.status, q).toBe(422);
      }
    });

    it("filters combine and total counts only matches", async () => {
      const page = await list(u.apiKey, `?status=scheduled&platform=pageplatform&fromDate=${day(10)}&limit=2`);
      expect(page).toMatchObject({ total: 3, limit: 2, hasMore: true });
    });

    it("another user's list never shows these posts", async () => {
      const other = await user();
      expect(await list(other.apiKey)).toMatchObject({ items: [], total: 0, hasMore: false });
    });
  });

  describe("GET /posts: the last page and past it (a page past the total reads no posts)", () => {
    it("is the same with and without a status filter, and counts a scheduled post whose time has passed as queued", async () => {
      const u = await user();
      const soon = new Date(h.clock.now().getTime() + 60_000).toISOString();
      const later = new Date(h.clock.now().getTime() + 7 * 86_400_000).toISOString();
      const queued = [];
      for (let i = 0; i < 3; i++) queued.push((await post(u.apiKey, { accountIds: u.page, caption: `now ${i}` })).id);
      const due = (await post(u.apiKey, { accountIds: u.page, caption: "soon", scheduledFor: soon })).id;
      const ahead = (await post(u.apiKey, { accountIds: u.page, caption: "later", scheduledFor: later })).id;
      // Stored as scheduled, read as queued: the count rows say 3 queued and 2 scheduled.
      h.clock.advance(120_000);
      const ids = async (q: string) => (await list(u.apiKey, q)).items.map((i: { id: string }) => i.id);

      expect(await ids("?limit=1&offset=4")).toEqual([queued[0]]);
      expect(await list(u.apiKey, "?limit=1&offset=5")).toMatchObject({ items: [], total: 5, hasMore: false });
      expect(await list(u.apiKey, "?offset=10000")).toMatchObject({ items: [], total: 5, hasMore: false });

      expect((await list(u.apiKey, "?status=queued")).total).toBe(4);
      expect(await ids("?status=queued&limit=1&offset=0")).toEqual([due]);
      expect(await ids("?status=queued&limit=1&offset=3")).toEqual([queued[0]]);
      expect(await list(u.apiKey, "?status=queued&offset=4")).toMatchObject({ items: [], total: 4, hasMore: false });

      expect(await list(u.apiKey, "?status=scheduled&offset=0")).toMatchObject({ items: [expect.objectContaining({ id: ahead })], total: 1, hasMore: false });
      expect(await list(u.apiKey, "?status=scheduled&offset=1")).toMatchObject({ items: [], total: 1, hasMore: false });
      expect(await list(u.apiKey, "?status=published&offset=0")).toMatchObject({ items: [], total: 0, hasMore: false });
    });
  });

  async function tinyPng(): Promise<string> {
    const { makePng } = await import("../../helpers/images");
    return (await makePng(400, 400)).toString("base64");
  }
});
