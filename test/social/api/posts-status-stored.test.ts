/**
 * The stored post status and the list's `total` (kept by database triggers, migration 0004): exact whoever
 * writes the targets, after the per-user count rows are folded, when a post is removed, and when a scheduled
 * post's time passes without any write.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { posts } from "../../../db/schema";
import { body, createSocialTestApp, type SocialTestApp } from "../../helpers/social";

let h: SocialTestApp;
beforeAll(async () => {
  h = await createSocialTestApp();
});
afterAll(async () => h?.close());

async function user() {
  const u = await h.createUser();
  return { ...u, page: await h.seedAccount(u.userId, "pageplatform") };
}

async function post(apiKey: string, request: Record<string, unknown>): Promise<string> {
  const res = await h.createPost(apiKey, request);
  expect([201, 202]).toContain(res.status);
  return (await body(res)).data.id;
}

async function list(apiKey: string, query: string) {
  const res = await h.get(apiKey, `/posts${query}`);
  expect(res.status).toBe(200);
  return (await body(res)).data as { items: Array<{ id: string; status: string }>; total: number; hasMore: boolean };
}

async function totals(apiKey: string) {
  const out: Record<string, number> = { all: (await list(apiKey, "?limit=1")).total };
  for (const status of ["queued", "scheduled", "publishing", "published", "partially_published", "failed", "cancelled"]) {
    out[status] = (await list(apiKey, `?limit=1&status=${status}`)).total;
  }
  return out;
}

describe("list totals from the stored status", () => {
  it("stay exact over many writes (the count rows folded between reads) and follow every target write", async () => {
    const u = await user();
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push(await post(u.apiKey, { accountIds: u.page, caption: `post ${i}` }));
    expect(await totals(u.apiKey)).toMatchObject({ all: 40, queued: 40, published: 0 });
    // Targets written straight into the table, as the delivery engine (or anyone) writes them.
    for (const id of ids.slice(0, 30)) await h.setDelivery(id, u.page, { status: "publishing", attempts: 1 });
    for (const id of ids.slice(0, 25)) await h.setDelivery(id, u.page, { status: "published", nextAttemptAt: null });
    for (const id of ids.slice(25, 28)) await h.setDelivery(id, u.page, { status: "failed", nextAttemptAt: null });
    expect(await totals(u.apiKey)).toMatchObject({ all: 40, queued: 10, publishing: 2, published: 25, failed: 3 });
    expect((await h.cancel(u.apiKey, ids[39]!)).status).toBe(200);
    const after = await totals(u.apiKey);
    expect(after).toMatchObject({ all: 40, queued: 9, publishing: 2, published: 25, failed: 3, cancelled: 1 });
    const published = await list(u.apiKey, "?status=published&limit=100");
    expect(published.items.map((i) => i.id).sort()).toEqual(ids.slice(0, 25).sort());
    expect(published.items.every((i) => i.status === "published")).toBe(true);
    // Read again: the same answer after the fold.
    expect(await totals(u.apiKey)).toEqual(after);
  });

  it("a removed post leaves the total", async () => {
    const u = await user();
    const kept = await post(u.apiKey, { accountIds: u.page, caption: "kept" });
    const gone = await post(u.apiKey, { accountIds: u.page, caption: "gone" });
    await h.db.delete(posts).where(eq(posts.id, gone));
    const page = await list(u.apiKey, "");
    expect(page.items.map((i) => i.id)).toEqual([kept]);
    expect(page.total).toBe(1);
    expect((await list(u.apiKey, "?status=queued")).total).toBe(1);
  });

  it("a scheduled post whose time has passed lists and counts as queued, with no write", async () => {
    const u = await user();
    const soon = new Date(h.clock.now().getTime() + 60_000).toISOString();
    const later = new Date(h.clock.now().getTime() + 7 * 86_400_000).toISOString();
    const due = await post(u.apiKey, { accountIds: u.page, caption: "soon", scheduledFor: soon });
    const ahead = await post(u.apiKey, { accountIds: u.page, caption: "later", scheduledFor: later });
    const now = await post(u.apiKey, { accountIds: u.page, caption: "now" });
    expect((await list(u.apiKey, "?status=scheduled")).items.map((i) => i.id)).toEqual([ahead, due]);
    h.clock.advance(120_000);
    const scheduled = await list(u.apiKey, "?status=scheduled");
    expect(scheduled.items.map((i) => i.id)).toEqual([ahead]);
    expect(scheduled.total).toBe(1);
    const queued = await list(u.apiKey, "?status=queued");
    expect(queued.items.map((i) => i.id)).toEqual([now, due]);
    expect(queued.items.map((i) => i.status)).toEqual(["queued", "queued"]);
    expect(queued.total).toBe(2);
    expect((await body(await h.get(u.apiKey, `/posts/${due}`))).data.status).toBe("queued");
  });
});
