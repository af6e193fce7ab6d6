/**
 * Idempotency under concurrency, written once and run on PGlite (idempotency.test.ts) and on the machine's
 * PostgreSQL (postgres.test.ts), where requests really run in parallel on a connection pool.
 */
import { count, eq } from "drizzle-orm";
import { expect } from "vitest";
import { deliveries, idempotencyKeys, posts } from "../../../db/schema";
import type { Services } from "../../../src/services";
import { KEY_LOCK_MS } from "../../../src/social/idempotency";
import { body, dataUri, type SocialTestApp } from "../../helpers/social";

export async function postCount(h: SocialTestApp, userId: string): Promise<{ posts: number; deliveries: number }> {
  const [p] = await h.db.select({ n: count() }).from(posts).where(eq(posts.userId, userId));
  const [d] = await h.db.select({ n: count() }).from(deliveries).where(eq(deliveries.userId, userId));
  return { posts: p!.n, deliveries: d!.n };
}

export async function twoTargetUser(h: SocialTestApp) {
  const u = await h.createUser();
  const page = await h.seedAccount(u.userId, "pageplatform");
  const photo = await h.seedAccount(u.userId, "photoplatform");
  return { ...u, page, photo };
}

/** 50 identical POSTs at once with one key: one post, one delivery per target, every answer legitimate. */
export async function fiftyIdenticalPosts(h: SocialTestApp, image: Uint8Array): Promise<Record<number, number>> {
  const u = await twoTargetUser(h);
  const key = crypto.randomUUID();
  const request = { accountIds: [u.page, u.photo], caption: "Fifty at once", hashtags: ["race"], images: [dataUri(image)] };
  const before = { puts: h.puts.length, queued: h.queueLog.enqueued.length };
  const responses = await Promise.all(Array.from({ length: 50 }, () => h.createPost(u.apiKey, request, { key })));
  const bodies = await Promise.all(responses.map((r) => body(r)));

  const created = responses.filter((r) => r.status === 202);
  expect(created).toHaveLength(1);
  const original = bodies[responses.indexOf(created[0]!)].data;
  const statuses: Record<number, number> = {};
  responses.forEach((res, i) => {
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    if (res.status === 200) {
      expect(res.headers.get("idempotency-replayed")).toBe("true");
      expect(bodies[i].data.id).toBe(original.id);
    } else if (res.status === 409) {
      expect(bodies[i].error.code).toBe("REQUEST_IN_PROGRESS");
      expect(res.headers.get("retry-after")).toBe("10");
    } else {
      expect(res.status).toBe(202);
    }
  });
  expect(await postCount(h, u.userId)).toEqual({ posts: 1, deliveries: 2 });
  expect(h.puts.length - before.puts).toBe(1);
  expect(h.queueLog.enqueued.length - before.queued).toBe(2);

  // Once settled, a retry is a replay of the original.
  const again = await h.createPost(u.apiKey, request, { key });
  expect(again.status).toBe(200);
  expect((await body(again)).data.id).toBe(original.id);
  return statuses;
}

/** 20 different bodies at once with one key: at most one post; every other answer is a 409. */
export async function twentyDifferentBodies(h: SocialTestApp): Promise<void> {
  const u = await twoTargetUser(h);
  const key = crypto.randomUUID();
  const responses = await Promise.all(
    Array.from({ length: 20 }, (_, i) => h.createPost(u.apiKey, { accountIds: u.page, caption: `Body number ${i}` }, { key })),
  );
  const bodies = await Promise.all(responses.map((r) => body(r)));
  expect(responses.filter((r) => r.status === 202)).toHaveLength(1);
  responses.forEach((res, i) => {
    if (res.status === 202) return;
    expect(res.status).toBe(409);
    expect(["IDEMPOTENCY_KEY_REUSED", "REQUEST_IN_PROGRESS"]).toContain(bodies[i].error.code);
  });
  expect(await postCount(h, u.userId)).toEqual({ posts: 1, deliveries: 1 });
  const winner = bodies[responses.findIndex((r) => r.status === 202)].data;
  // The stored post is the winner's body, and a later different body is refused as a reused key.
  const [row] = await h.db.select().from(posts).where(eq(posts.userId, u.userId));
  expect(row!.caption).toBe(winner.caption);
  const late = await h.createPost(u.apiKey, { accountIds: u.page, caption: "another" }, { key });
  expect(late.status).toBe(409);
  expect((await body(late)).error.code).toBe("IDEMPOTENCY_KEY_REUSED");
}

interface Gate {
  reached: Promise<void>;
  open(): void;
}

/**
 * Makes the next `db.transaction` wait (as if the process stalled right after the key insert, before the
 * commit) until the gate is opened. The app holds the same services object, so swapping `db` reaches it.
 */
export function stallNextTransaction(services: Services): Gate {
  const db = services.db;
  let signal!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => (signal = r));
  const opened = new Promise<void>((r) => (release = r));
  let used = false;
  services.db = new Proxy(db, {
    get(target, prop) {
      if (prop === "transaction" && !used) {
        return async (...args: Parameters<typeof db.transaction>) => {
          used = true;
          signal();
          await opened;
          return target.transaction(...args);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    reached,
    open() {
      services.db = db;
      release();
    },
  };
}

/**
 * A request stalls between its key insert and its commit. While its lock lives, a retry gets 409; once the
 * lock expires a retry takes the key over and completes; when the stalled request finally resumes, it finds it
 * no longer holds the key, rolls back, and answers with a replay of the retry's post. One post in all.
 */
export async function crashBetweenKeyAndCommit(h: SocialTestApp, image: Uint8Array): Promise<void> {
  const u = await twoTargetUser(h);
  const key = crypto.randomUUID();
  const request = { accountIds: [u.page, u.photo], caption: "Crash test", images: [dataUri(image)] };
  const before = { puts: h.puts.length, queued: h.queueLog.enqueued.length };

  const gate = stallNextTransaction(h.services);
  const stalled = h.createPost(u.apiKey, request, { key });
  await gate.reached;

  const [held] = await h.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, key));
  expect(held).toMatchObject({ state: "processing", postId: null });

  const early = await h.createPost(u.apiKey, request, { key });
  expect(early.status).toBe(409);
  expect((await body(early)).error.code).toBe("REQUEST_IN_PROGRESS");
  expect(early.headers.get("retry-after")).toBe("10");

  h.clock.advance(KEY_LOCK_MS + 1000);
  const retry = await h.createPost(u.apiKey, request, { key });
  expect(retry.status).toBe(202);
  const post = (await body(retry)).data;
  expect(await postCount(h, u.userId)).toEqual({ posts: 1, deliveries: 2 });

  gate.open();
  const late = await stalled;
  expect(late.status).toBe(200);
  expect(late.headers.get("idempotency-replayed")).toBe("true");
  expect((await body(late)).data.id).toBe(post.id);

  expect(await postCount(h, u.userId)).toEqual({ posts: 1, deliveries: 2 });
  expect(h.queueLog.enqueued.length - before.queued).toBe(2);
  // Both requests stored the image; the one that lost the key removed its copy.
  expect(h.puts.length - before.puts).toBe(2);
  const stored = await Promise.all(h.puts.slice(before.puts).map((k) => h.services.storage.get(k)));
  expect(stored.filter(Boolean)).toHaveLength(1);
  const [done] = await h.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, key));
  expect(done).toMatchObject({ state: "done", postId: post.id, responseStatus: 202, lockedUntil: null });
}
