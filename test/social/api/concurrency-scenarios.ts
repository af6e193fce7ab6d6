/**
 * Idempotency under concurrency, written once and run on PGlite (idempotency.test.ts) and on the machine's
 * PostgreSQL (postgres.test.ts), where requests really run in parallel on a connection pool.
 */
import { count, eq, sql } from "drizzle-orm";
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

/**
 * Text posts sent at once by two users (the server writes posts that arrive together with one statement):
 * among them a target that is not the sender's, one key sent twice with one body, one key with two bodies, and
 * one user's key string used by the other. Every answer is the one the request would get alone, and every
 * stored post holds its own request's caption, owner and targets.
 */
export async function textPostsTogether(h: SocialTestApp): Promise<void> {
  const a = await h.createUser();
  const aPages = [await h.seedAccount(a.userId, "pageplatform"), await h.seedAccount(a.userId, "pageplatform")];
  const b = await h.createUser();
  const bPage = await h.seedAccount(b.userId, "pageplatform");
  const later = new Date(h.clock.now().getTime() + 3600_000).toISOString();
  const shared = crypto.randomUUID();
  const reused = crypto.randomUUID();
  type Sent = { user: typeof a; key: string; body: { accountIds: string[]; caption: string; scheduledFor?: string } };
  const distinct: Sent[] = [
    ...Array.from({ length: 12 }, (_, i) => ({ user: a, key: crypto.randomUUID(), body: { accountIds: i % 2 ? aPages : [aPages[0]!], caption: `A ${i}` } })),
    ...Array.from({ length: 6 }, (_, i) => ({ user: b, key: crypto.randomUUID(), body: { accountIds: [bPage], caption: `B ${i}`, scheduledFor: later } })),
    { user: b, key: shared, body: { accountIds: [bPage], caption: "B's post under A's key string" } },
  ];
  const notMine: Sent = { user: b, key: crypto.randomUUID(), body: { accountIds: [aPages[0]!], caption: "not B's account" } };
  const twice: Sent = { user: a, key: shared, body: { accountIds: [aPages[1]!], caption: "sent twice" } };
  const firstBody: Sent = { user: a, key: reused, body: { accountIds: [aPages[0]!], caption: "first body" } };
  const secondBody: Sent = { user: a, key: reused, body: { accountIds: [aPages[0]!], caption: "second body" } };
  const sent = [twice, firstBody, ...distinct, notMine, secondBody, twice];
  const queued = h.queueLog.enqueued.length;
  const responses = await Promise.all(sent.map((s) => h.createPost(s.user.apiKey, s.body, { key: s.key })));
  const bodies = await Promise.all(responses.map((r) => body(r)));
  const answer = (s: Sent, from = 0) => {
    const i = sent.indexOf(s, from);
    return { status: responses[i]!.status, body: bodies[i] };
  };

  for (const s of distinct) {
    const { status, body: got } = answer(s);
    expect(status).toBe(s.body.scheduledFor ? 201 : 202);
    expect(got.data.caption).toBe(s.body.caption);
    expect(got.data.accounts.map((t: { accountId: string }) => t.accountId).sort()).toEqual([...s.body.accountIds].sort());
    const read = await h.get(s.user.apiKey, `/posts/${got.data.id}`);
    expect(read.status).toBe(200);
    expect((await body(read)).data.caption).toBe(s.body.caption);
    const other = s.user === a ? b : a;
    expect((await h.get(other.apiKey, `/posts/${got.data.id}`)).status).toBe(404);
  }
  const refused = answer(notMine);
  expect(refused.status).toBe(404);
  expect(refused.body.error.code).toBe("ACCOUNT_NOT_FOUND");

  const pair = [answer(twice), answer(twice, sent.indexOf(twice) + 1)];
  const made = pair.filter((p) => p.status === 202);
  expect(made).toHaveLength(1);
  const other = pair.find((p) => p !== made[0])!;
  if (other.status === 200) expect(other.body.data.id).toBe(made[0]!.body.data.id);
  else expect([other.status, other.body.error.code]).toEqual([409, "REQUEST_IN_PROGRESS"]);

  const bodiesOfOneKey = [answer(firstBody), answer(secondBody)];
  expect(bodiesOfOneKey.map((p) => p.status).sort()).toEqual([202, 409]);
  const loser = bodiesOfOneKey.find((p) => p.status === 409)!;
  expect(["IDEMPOTENCY_KEY_REUSED", "REQUEST_IN_PROGRESS"]).toContain(loser.body.error.code);
  const winner = bodiesOfOneKey.find((p) => p.status === 202)!;
  const [stored] = await h.db.select().from(posts).where(eq(posts.id, winner.body.data.id));
  expect(stored!.caption).toBe(winner.body.data.caption);

  // A: 12 distinct (6 with two targets), the key sent twice, one of the two bodies; B: 6 scheduled and one.
  expect(await postCount(h, a.userId)).toEqual({ posts: 14, deliveries: 20 });
  expect(await postCount(h, b.userId)).toEqual({ posts: 7, deliveries: 7 });
  expect(h.queueLog.enqueued.length - queued).toBe(27);
  const keys = await h.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, shared));
  expect(keys.map((k) => k.userId).sort()).toEqual([a.userId, b.userId].sort());
}

/**
 * Text posts sent at once where the database refuses one (a rule an operator added: a trigger that raises for
 * one caption): the others are still created, each answered 202, and the refused one alone fails, with nothing
 * of it stored.
 */
export async function oneRefusedAmongPostsTogether(h: SocialTestApp): Promise<void> {
  const u = await h.createUser();
  const page = await h.seedAccount(u.userId, "pageplatform");
  await h.db.execute(sql`create function refuse_caption() returns trigger language plpgsql as $$
    begin if new.caption = 'refused by the database' then raise exception 'caption refused'; end if; return new; end $$`);
  await h.db.execute(sql`create trigger refuse_caption before insert on posts for each row execute function refuse_caption()`);
  try {
    const captions = Array.from({ length: 10 }, (_, i) => (i === 4 ? "refused by the database" : `accepted ${i}`));
    const keys = captions.map(() => crypto.randomUUID());
    const responses = await Promise.all(captions.map((caption, i) => h.createPost(u.apiKey, { accountIds: [page], caption }, { key: keys[i] })));
    const bodies = await Promise.all(responses.map((r) => body(r)));
    responses.forEach((res, i) => {
      if (i === 4) {
        expect(res.status).toBe(500);
        expect(bodies[i].error.code).toBe("INTERNAL");
      } else {
        expect(res.status).toBe(202);
        expect(bodies[i].data.caption).toBe(captions[i]);
      }
    });
    expect(await postCount(h, u.userId)).toEqual({ posts: 9, deliveries: 9 });
    await h.db.execute(sql`drop trigger refuse_caption on posts`);
    // Its key was not taken either: the same request now creates the post.
    const retry = await h.createPost(u.apiKey, { accountIds: [page], caption: captions[4] }, { key: keys[4] });
    expect(retry.status).toBe(202);
    expect(await postCount(h, u.userId)).toEqual({ posts: 10, deliveries: 10 });
  } finally {
    await h.db.execute(sql`drop trigger if exists refuse_caption on posts`);
    await h.db.execute(sql`drop function refuse_caption()`);
  }
}
