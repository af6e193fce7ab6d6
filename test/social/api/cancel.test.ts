/**
 * DELETE /posts/{id} per the contract's state table: outstanding targets cancelled atomically, published ones
 * untouched, 409 POST_NOT_CANCELLABLE while publishing or when wholly published, the record kept, queue jobs
 * cancelled best effort.
 */
import { and, eq, inArray, or, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliveries, posts } from "../../../db/schema";
import { PostResponseSchema } from "../../../src/social/schemas";
import { body, createSocialTestApp, type SocialTestApp } from "../../helpers/social";

let h: SocialTestApp;
beforeAll(async () => {
  h = await createSocialTestApp();
});
afterAll(async () => h?.close());

async function setup(extra: Record<string, unknown> = {}) {
  const u = await h.createUser();
  const a = await h.seedAccount(u.userId, "pageplatform");
  const b = await h.seedAccount(u.userId, "pageplatform");
  const res = await h.createPost(u.apiKey, { accountIds: [a, b], caption: "to cancel", ...extra });
  const post = (await body(res)).data;
  return { ...u, a, b, post };
}

async function targets(postId: string) {
  return h.db.select().from(deliveries).where(eq(deliveries.postId, postId)).orderBy(deliveries.accountId);
}

/** The delivery engine's claim, as specified between the two halves of area C. */
async function claim(postId: string) {
  return h.db
    .update(deliveries)
    .set({ status: "publishing" })
    .where(
      and(
        eq(deliveries.postId, postId),
        or(inArray(deliveries.status, ["pending"]), and(eq(deliveries.status, "failed"), sql`${deliveries.nextAttemptAt} is not null`)),
      ),
    )
    .returning();
}

describe("outstanding targets are cancelled", () => {
  it("pending -> cancelled: 200 {data: post}, record kept, cancelledAt set, jobs cancelled, nothing claimable", async () => {
    const s = await setup();
    const jobs = s.post.accounts.map((t: any) => t.jobId);
    const res = await h.cancel(s.apiKey, s.post.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const json = await body(res);
    expect(PostResponseSchema.safeParse(json).success).toBe(true);
    const post = json.data;
    expect(post.status).toBe("cancelled");
    expect(post.cancelledAt).not.toBeNull();
    expect(post.accounts.map((t: any) => [t.status, t.nextAttemptAt])).toEqual([
      ["cancelled", null],
      ["cancelled", null],
    ]);
    expect(h.queueLog.cancelled).toEqual(expect.arrayContaining(jobs));
    expect(await claim(s.post.id)).toEqual([]);
    expect((await body(await h.get(s.apiKey, `/posts/${s.post.id}`))).data).toEqual(post);
  });

  it("a scheduled post is cancelled the same way", async () => {
    const s = await setup({ scheduledFor: new Date(h.clock.now().getTime() + 86_400_000).toISOString() });
    expect(s.post.status).toBe("scheduled");
    const post = (await body(await h.cancel(s.apiKey, s.post.id))).data;
    expect(post.status).toBe("cancelled");
  });

  it("partly delivered: published targets stay published, only the rest are cancelled", async () => {
    const s = await setup();
    const at = new Date("2030-01-01T00:00:00Z");
    await h.setDelivery(s.post.id, s.a, { status: "published", providerPostId: "p_1", publishedAt: at, nextAttemptAt: null, attempts: 1 });
    const post = (await body(await h.cancel(s.apiKey, s.post.id))).data;
    expect(post.accounts).toEqual([
      expect.objectContaining({ accountId: s.a, status: "published", providerPostId: "p_1", publishedAt: at.toISOString() }),
      expect.objectContaining({ accountId: s.b, status: "cancelled", nextAttemptAt: null }),
    ]);
    expect(post.status).toBe("partially_published");
  });

  it("a failed target awaiting its retry is outstanding: cancelled, its error kept", async () => {
    const s = await setup();
    await h.setDelivery(s.post.id, s.a, { status: "failed", attempts: 1, nextAttemptAt: new Date(), errorCode: "TRANSIENT", errorMessage: "502" });
    const post = (await body(await h.cancel(s.apiKey, s.post.id))).data;
    expect(post.accounts[0]).toMatchObject({ status: "cancelled", nextAttemptAt: null, error: { code: "TRANSIENT", message: "502" } });
  });

  it("a target whose last attempt got no answer is outstanding too: cancelled, keeping the error that says it may be live", async () => {
    const s = await setup();
    await h.setDelivery(s.post.id, s.a, {
      status: "failed",
      ambiguous: true,
      attempts: 1,
      nextAttemptAt: new Date(h.clock.now().getTime() + 90_000),
      errorCode: "OUTCOME_UNKNOWN",
      errorMessage: "no answer; the publish may have happened",
    });
    const res = await h.cancel(s.apiKey, s.post.id);
    expect(res.status).toBe(200);
    const post = (await body(res)).data;
    expect(post.accounts[0]).toMatchObject({ status: "cancelled", nextAttemptAt: null, error: { code: "OUTCOME_UNKNOWN" } });
    expect(await claim(s.post.id)).toEqual([]);
  });

  it("a target failed for good stays failed", async () => {
    const s = await setup();
    await h.setDelivery(s.post.id, s.a, { status: "failed", attempts: 5, nextAttemptAt: null, errorCode: "INVALID", errorMessage: "no" });
    const post = (await body(await h.cancel(s.apiKey, s.post.id))).data;
    expect(post.accounts.map((t: any) => t.status)).toEqual(["failed", "cancelled"]);
    expect(post.status).toBe("cancelled");
  });

  it("cancelling again is a no-op answered with the record (cancelledAt unchanged)", async () => {
    const s = await setup();
    const first = (await body(await h.cancel(s.apiKey, s.post.id))).data;
    h.clock.advance(1000);
    const again = await h.cancel(s.apiKey, s.post.id);
    expect(again.status).toBe(200);
    expect((await body(again)).data.cancelledAt).toBe(first.cancelledAt);
  });

  it("a failing queue cancellation does not fail the request (the claim guarantees nothing is sent)", async () => {
    const s = await setup();
    const queue = h.services.queue;
    h.services.queue = { ...queue, cancel: async () => Promise.reject(new Error("qstash down")) };
    try {
      const res = await h.cancel(s.apiKey, s.post.id);
      expect(res.status).toBe(200);
    } finally {
      h.services.queue = queue;
    }
    expect(await claim(s.post.id)).toEqual([]);
  });
});

describe("refusals", () => {
  it("409 POST_NOT_CANCELLABLE while a target is publishing; nothing changes", async () => {
    const s = await setup();
    await h.setDelivery(s.post.id, s.a, { status: "publishing", attempts: 1 });
    const before = await targets(s.post.id);
    const res = await h.cancel(s.apiKey, s.post.id);
    expect(res.status).toBe(409);
    const err = (await body(res)).error;
    expect(err.code).toBe("POST_NOT_CANCELLABLE");
    expect(err.message).toContain(s.a);
    expect(await targets(s.post.id)).toEqual(before);
    const [row] = await h.db.select().from(posts).where(eq(posts.id, s.post.id));
    expect(row!.cancelledAt).toBeNull();
  });

  it("409 POST_NOT_CANCELLABLE once every target is published", async () => {
    const s = await setup();
    await h.setDelivery(s.post.id, s.a, { status: "published", nextAttemptAt: null });
    await h.setDelivery(s.post.id, s.b, { status: "published", nextAttemptAt: null });
    const res = await h.cancel(s.apiKey, s.post.id);
    expect(res.status).toBe(409);
    expect((await body(res)).error.message).toMatch(/already published to every target/);
  });

  it("404 POST_NOT_FOUND for another user's post (which stays untouched), unknown and malformed ids", async () => {
    const s = await setup();
    const other = await h.createUser();
    for (const id of [s.post.id, crypto.randomUUID(), "nope"]) {
      const res = await h.cancel(other.apiKey, id);
      expect(res.status).toBe(404);
      expect((await body(res)).error.code).toBe("POST_NOT_FOUND");
    }
    expect((await targets(s.post.id)).map((t) => t.status)).toEqual(["pending", "pending"]);
  });
});
