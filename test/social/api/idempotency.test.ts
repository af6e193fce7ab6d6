/**
 * The Idempotency-Key algorithm of POST /posts (contract rules 3 to 7), on PGlite.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idempotencyKeys, posts, socialAccounts } from "../../../db/schema";
import type { Storage } from "../../../src/services";
import { makePng } from "../../helpers/images";
import { body, createSocialTestApp, dataUri, type SocialTestApp } from "../../helpers/social";
import {
  crashBetweenKeyAndCommit,
  fiftyIdenticalPosts,
  oneRefusedAmongPostsTogether,
  textPostsTogether,
  postCount,
  twentyDifferentBodies,
  twoTargetUser,
} from "./concurrency-scenarios";

let h: SocialTestApp;
let png: Buffer;

beforeAll(async () => {
  h = await createSocialTestApp();
  png = await makePng(400, 400);
});
afterAll(async () => h?.close());

async function keyRows(userId: string) {
  return h.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.userId, userId));
}

describe("rule 5: the key is required and well-formed", () => {
  it("400 IDEMPOTENCY_KEY_REQUIRED without the header; nothing is written", async () => {
    const u = await twoTargetUser(h);
    const res = await h.createPost(u.apiKey, { accountIds: u.page, caption: "x" }, { key: null });
    expect(res.status).toBe(400);
    const err = (await body(res)).error;
    expect(err.code).toBe("IDEMPOTENCY_KEY_REQUIRED");
    expect(err.message).toMatch(/Idempotency-Key/);
    expect(await postCount(h, u.userId)).toEqual({ posts: 0, deliveries: 0 });
    expect(await keyRows(u.userId)).toEqual([]);
  });

  it.each([
    ["empty", ""],
    ["blank", "   "],
    ["256 characters", "k".repeat(256)],
    ["an inner space", "two words"],
    ["a tab", "a\tb"],
    ["non-ASCII", "clé-é"],
    ["an empty quoted string", '""'],
  ])("400 for a key that is %s", async (_name, key) => {
    const u = await twoTargetUser(h);
    const res = await h.createPost(u.apiKey, { accountIds: u.page, caption: "x" }, { key });
    expect(res.status).toBe(400);
    expect((await body(res)).error.code).toBe("IDEMPOTENCY_KEY_REQUIRED");
    expect(await keyRows(u.userId)).toEqual([]);
  });

  it("accepts 255 visible characters, and treats a quoted sf-string as the same key", async () => {
    const u = await twoTargetUser(h);
    const long = "k".repeat(255);
    expect((await h.createPost(u.apiKey, { accountIds: u.page, caption: "x" }, { key: long })).status).toBe(202);
    const first = await h.createPost(u.apiKey, { accountIds: u.page, caption: "y" }, { key: "abc-123" });
    expect(first.status).toBe(202);
    const quoted = await h.createPost(u.apiKey, { accountIds: u.page, caption: "y" }, { key: '"abc-123"' });
    expect(quoted.status).toBe(200);
    expect((await body(quoted)).data.id).toBe((await body(first)).data.id);
  });
});

describe("rule 3: an identical retry replays the original", () => {
  it("200, Idempotency-Replayed: true, the same record and Location; no upload, no queueing, no second post", async () => {
    const u = await twoTargetUser(h);
    const key = crypto.randomUUID();
    const request = { accountIds: [u.page, u.photo], caption: "Original", images: [dataUri(png)] };
    const first = await h.createPost(u.apiKey, request, { key });
    expect(first.status).toBe(202);
    const original = (await body(first)).data;
    const before = { puts: h.puts.length, queued: h.queueLog.enqueued.length };

    const again = await h.createPost(u.apiKey, request, { key });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect((await body(again)).data).toEqual(original);
    expect({ puts: h.puts.length, queued: h.queueLog.enqueued.length }).toEqual(before);
    expect(await postCount(h, u.userId)).toEqual({ posts: 1, deliveries: 2 });
  });

  it("replays a scheduled post after its time has passed, and after an account needs reconnecting", async () => {
    const u = await twoTargetUser(h);
    const key = crypto.randomUUID();
    const request = { accountIds: u.page, caption: "Soon", scheduledFor: new Date(h.clock.now().getTime() + 60_000).toISOString() };
    const first = await h.createPost(u.apiKey, request, { key });
    expect(first.status).toBe(201);
    h.clock.advance(120_000);
    await h.db.update(socialAccounts).set({ tokenStatus: "invalid" }).where(eq(socialAccounts.userId, u.userId));
    const again = await h.createPost(u.apiKey, request, { key });
    expect(again.status).toBe(200);
    expect((await body(again)).data.id).toBe((await body(first)).data.id);
  });

  it("treats equivalent spellings of the same body as identical", async () => {
    const u = await twoTargetUser(h);
    const at = new Date(Math.ceil((h.clock.now().getTime() + 86_400_000) / 1000) * 1000);
    const key = crypto.randomUUID();
    const first = await h.createPost(
      u.apiKey,
      {
        accountIds: u.page,
        caption: "Same",
        hashtags: ["#sale"],
        images: [{ base64: png.toString("base64"), mimeType: "image/png" }],
        scheduledFor: at.toISOString(),
      },
      { key },
    );
    expect(first.status).toBe(201);
    const plus2 = `${new Date(at.getTime() + 2 * 3600_000).toISOString().slice(0, 19)}+02:00`;
    // Keys reordered, a one-element array, a bare hashtag, the Base64 as a string item, the instant with an offset.
    const raw = `{ "scheduledFor": "${plus2}", "images": ["${png.toString("base64")}"], "hashtags": ["sale"],\n  "caption": "Same", "accountIds": ["${u.page}"] }`;
    const again = await h.createPost(u.apiKey, raw, { key });
    expect(again.status).toBe(200);
    expect((await body(again)).data.id).toBe((await body(first)).data.id);
  });

  it("a different order of accounts is a different body (409)", async () => {
    const u = await twoTargetUser(h);
    const key = crypto.randomUUID();
    expect((await h.createPost(u.apiKey, { accountIds: [u.page, u.photo], images: [dataUri(png)] }, { key })).status).toBe(202);
    const swapped = await h.createPost(u.apiKey, { accountIds: [u.photo, u.page], images: [dataUri(png)] }, { key });
    expect(swapped.status).toBe(409);
    expect((await body(swapped)).error.code).toBe("IDEMPOTENCY_KEY_REUSED");
  });
});

describe("rule 4: the same key with different content is 409", () => {
  it.each([
    ["caption", { caption: "Other" }],
    ["hashtags", { hashtags: ["x"] }],
    ["schedule", { scheduledFor: "2031-01-01T00:00:00Z" }],
  ])("409 IDEMPOTENCY_KEY_REUSED when the %s differs; the original stays", async (_name, change) => {
    const u = await twoTargetUser(h);
    const key = crypto.randomUUID();
    const first = await h.createPost(u.apiKey, { accountIds: u.page, caption: "Original" }, { key });
    expect(first.status).toBe(202);
    const res = await h.createPost(u.apiKey, { accountIds: u.page, caption: "Original", ...change }, { key });
    expect(res.status).toBe(409);
    const err = (await body(res)).error;
    expect(err.code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(err.message).toMatch(/different request body/);
    const [row] = await h.db.select().from(posts).where(eq(posts.userId, u.userId));
    expect(row!.caption).toBe("Original");
    expect(await postCount(h, u.userId)).toEqual({ posts: 1, deliveries: 1 });
  });
});

describe("rule 6: keys are per user and stay consumed", () => {
  it("two users with the same key get two independent posts", async () => {
    const a = await twoTargetUser(h);
    const b = await twoTargetUser(h);
    const key = "shared-key-0001";
    const ra = await h.createPost(a.apiKey, { accountIds: a.page, caption: "A" }, { key });
    const rb = await h.createPost(b.apiKey, { accountIds: b.page, caption: "B" }, { key });
    expect([ra.status, rb.status]).toEqual([202, 202]);
    expect((await body(rb)).data.caption).toBe("B");
  });

  it("a second API key of the same user replays (keys belong to the user, not the API key)", async () => {
    const u = await twoTargetUser(h);
    const other = await h.createKey(u.userId, "second");
    const key = crypto.randomUUID();
    const first = await h.createPost(u.apiKey, { accountIds: u.page, caption: "x" }, { key });
    const again = await h.createPost(other, { accountIds: u.page, caption: "x" }, { key });
    expect(again.status).toBe(200);
    expect((await body(again)).data.id).toBe((await body(first)).data.id);
  });

  it("after cancellation the key still replays the (cancelled) post", async () => {
    const u = await twoTargetUser(h);
    const key = crypto.randomUUID();
    const post = (await body(await h.createPost(u.apiKey, { accountIds: u.page, caption: "x" }, { key }))).data;
    expect((await h.cancel(u.apiKey, post.id)).status).toBe(200);
    const again = await h.createPost(u.apiKey, { accountIds: u.page, caption: "x" }, { key });
    expect(again.status).toBe(200);
    expect((await body(again)).data.status).toBe("cancelled");
  });

  it("410 ORIGINAL_REMOVED once the post record is purged; the key stays consumed", async () => {
    const u = await twoTargetUser(h);
    const key = crypto.randomUUID();
    const post = (await body(await h.createPost(u.apiKey, { accountIds: u.page, caption: "x" }, { key }))).data;
    await h.db.delete(posts).where(eq(posts.id, post.id)); // what the retention sweep does
    const again = await h.createPost(u.apiKey, { accountIds: u.page, caption: "x" }, { key });
    expect(again.status).toBe(410);
    expect((await body(again)).error.code).toBe("ORIGINAL_REMOVED");
    expect(await postCount(h, u.userId)).toEqual({ posts: 0, deliveries: 0 });
    // Still consumed: a different body with that key is a reuse, not a new post.
    const other = await h.createPost(u.apiKey, { accountIds: u.page, caption: "new" }, { key });
    expect(other.status).toBe(409);
    expect(await keyRows(u.userId)).toHaveLength(1);
  });
});

describe("rule 7: a request still in progress is 409 REQUEST_IN_PROGRESS with Retry-After: 10", () => {
  it("while the first request is held mid-flight; after it completes, a replay", async () => {
    const u = await twoTargetUser(h);
    const key = crypto.randomUUID();
    const request = { accountIds: u.page, caption: "slow", images: [dataUri(png)] };
    const storage = h.services.storage;
    let release!: () => void;
    let reached!: () => void;
    const atPut = new Promise<void>((r) => (reached = r));
    const held = new Promise<void>((r) => (release = r));
    h.services.storage = { ...storage, put: async (...args: Parameters<Storage["put"]>) => (reached(), await held, storage.put(...args)) };
    try {
      const first = h.createPost(u.apiKey, request, { key });
      await atPut;
      const second = await h.createPost(u.apiKey, request, { key });
      expect(second.status).toBe(409);
      expect(second.headers.get("retry-after")).toBe("10");
      const err = (await body(second)).error;
      expect(err.code).toBe("REQUEST_IN_PROGRESS");
      // Even a different body reports the conflict of bodies first: the key is already bound to another body.
      const other = await h.createPost(u.apiKey, { ...request, caption: "different" }, { key });
      expect((await body(other)).error.code).toBe("IDEMPOTENCY_KEY_REUSED");
      release();
      expect((await first).status).toBe(202);
    } finally {
      h.services.storage = storage;
    }
    const third = await h.createPost(u.apiKey, request, { key });
    expect(third.status).toBe(200);
  });
});

describe("refusals release the key; failures let the same key be retried", () => {
  it.each([
    ["422 from validation", (p: string) => ({ accountIds: p, caption: "x", hashtags: ["a b"] }), 422],
    ["422 from a platform rule", (_p: string, photo: string) => ({ accountIds: photo, caption: "text only" }), 422],
    ["404 for an unknown account", () => ({ accountIds: "pageplatform:0", caption: "x" }), 404],
    ["422 for a bad image", (p: string) => ({ accountIds: p, images: ["data:image/png;base64,AAAA"] }), 422],
  ])("after %s, the same key with a corrected body creates the post", async (_name, bad, status) => {
    const u = await twoTargetUser(h);
    const key = crypto.randomUUID();
    const refused = await h.createPost(u.apiKey, (bad as (p: string, photo: string) => unknown)(u.page, u.photo), { key });
    expect(refused.status).toBe(status);
    expect(await keyRows(u.userId)).toEqual([]);
    const fixed = await h.createPost(u.apiKey, { accountIds: u.page, caption: "fixed" }, { key });
    expect(fixed.status).toBe(202);
  });

  it("a 500 (storage down) answers INTERNAL with a request id, and the same key then succeeds once", async () => {
    const u = await twoTargetUser(h);
    const key = crypto.randomUUID();
    const request = { accountIds: u.page, images: [dataUri(png)] };
    const storage = h.services.storage;
    h.services.storage = { ...storage, put: async () => Promise.reject(new Error("bucket unavailable")) };
    let failed: Response;
    try {
      failed = await h.createPost(u.apiKey, request, { key });
    } finally {
      h.services.storage = storage;
    }
    expect(failed.status).toBe(500);
    const err = (await body(failed)).error;
    expect(err.code).toBe("INTERNAL");
    expect(err.requestId).toBe(failed.headers.get("x-request-id"));
    expect(JSON.stringify(err)).not.toMatch(/bucket unavailable|stack/);
    expect(await postCount(h, u.userId)).toEqual({ posts: 0, deliveries: 0 });

    const retry = await h.createPost(u.apiKey, request, { key });
    expect(retry.status).toBe(202);
    expect(await postCount(h, u.userId)).toEqual({ posts: 1, deliveries: 1 });
  });

  it("a failed enqueue does not fail the committed post (the sweep re-queues it)", async () => {
    const u = await twoTargetUser(h);
    const queue = h.services.queue;
    h.services.queue = { ...queue, enqueue: async () => Promise.reject(new Error("qstash down")) };
    try {
      const res = await h.createPost(u.apiKey, { accountIds: u.page, caption: "x" });
      expect(res.status).toBe(202);
      expect((await body(res)).data.accounts[0]).toMatchObject({ status: "pending", jobId: null });
    } finally {
      h.services.queue = queue;
    }
  });
});

describe("concurrency (PGlite: requests interleave at every await)", () => {
  it("50 identical POSTs with one key: one post, one delivery per target; 202, 200 replays or 409 in progress", async () => {
    const statuses = await fiftyIdenticalPosts(h, png);
    expect(statuses[202]).toBe(1);
  });

  it("20 different bodies with one key: one post, the rest 409", async () => {
    await twentyDifferentBodies(h);
  });

  it("text posts sent together by two users: each answered as alone, each post its own request's", async () => {
    await textPostsTogether(h);
  });

  it("text posts sent together, one refused by the database: the others are created, the refused one alone fails", async () => {
    await oneRefusedAmongPostsTogether(h);
  });

  it("a crash between key insert and commit: 409 while the lock lives, then a retry completes it; one post", async () => {
    await crashBetweenKeyAndCommit(h, png);
  });
});
