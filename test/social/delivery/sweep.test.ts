/**
 * runSweep: expired claims released (ambiguous ones to reconcile first), orphaned due targets re-queued
 * on QStash, posts past retention purged with their deliveries (idempotency keys kept), and due targets
 * published by the sweep itself when there is no queue.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { deliveries, idempotencyKeys, posts } from "../../../db/schema";
import { startGraphFake, type GraphFake } from "../../helpers/graph-fake";
import { recordingQueue, type QueueLog } from "../../helpers/social";
import { releaseExpiredLocks, runSweep } from "../../../src/social/delivery/sweep";
import { engineApp } from "./fixtures";

let fake: GraphFake;
let h: Awaited<ReturnType<typeof engineApp>>;
let page: string;
const queueLog: QueueLog = { enqueued: [], cancelled: [] };
const queue = recordingQueue(queueLog, "qstash");

beforeAll(async () => {
  fake = await startGraphFake();
  h = await engineApp(fake.baseUrl, { queue });
  page = await h.account("pageplatform", "1000");
});
afterAll(async () => {
  await h.close();
  await fake.close();
});
beforeEach(async () => {
  fake.reset();
  queueLog.enqueued.length = 0;
  await h.db.delete(posts);
});

const set = (id: string, values: Partial<typeof deliveries.$inferInsert>) => h.db.update(deliveries).set(values).where(eq(deliveries.id, id));

describe("expired claims", () => {
  it("releases only expired locks: a clean one back to pending and due, a maybe-sent one to failed + ambiguous", async () => {
    const now = h.clock.now();
    const [clean, maybeSent, alive] = (await h.post([page, "pageplatform:2", "pageplatform:3"])).deliveryIds;
    await set(clean!, { status: "publishing", attempts: 1, lockedUntil: new Date(now.getTime() - 1000) });
    await set(maybeSent!, { status: "publishing", attempts: 1, ambiguous: true, lockedUntil: new Date(now.getTime() - 1000) });
    await set(alive!, { status: "publishing", attempts: 1, lockedUntil: new Date(now.getTime() + 60_000) });
    expect(await releaseExpiredLocks(h.services)).toBe(2);
    expect(await h.delivery(clean!)).toMatchObject({ status: "pending", lockedUntil: null, errorCode: "PUBLISHER_INTERRUPTED" });
    expect(await h.delivery(maybeSent!)).toMatchObject({ status: "failed", ambiguous: true, errorCode: "OUTCOME_UNKNOWN" });
    expect((await h.delivery(maybeSent!)).nextAttemptAt!.getTime()).toBeLessThanOrEqual(h.clock.now().getTime());
    expect(await h.delivery(alive!)).toMatchObject({ status: "publishing" });
    // At start-up on a database this process owns alone, every claim is a dead process's.
    expect(await releaseExpiredLocks(h.services, true)).toBe(1);
  });

  it("a claim that keeps dying is given up after the attempt cap", async () => {
    const [id] = (await h.post([page])).deliveryIds;
    await set(id!, { status: "publishing", attempts: 5, lockedUntil: new Date(0) });
    await releaseExpiredLocks(h.services);
    expect(await h.delivery(id!)).toMatchObject({ status: "failed", nextAttemptAt: null });
  });
});

describe("re-queue (QStash)", () => {
  it("queues due targets without a job, and due targets left untouched past the grace period; not fresh ones", async () => {
    const old = new Date(h.clock.now().getTime() - 10 * 60_000);
    const [noJob, staleJob, freshJob, future] = (await h.post([page, "pageplatform:2", "pageplatform:3", "pageplatform:4"])).deliveryIds;
    await set(noJob!, { jobId: null, updatedAt: old });
    await set(staleJob!, { jobId: "job-lost", nextAttemptAt: old, updatedAt: old });
    await set(freshJob!, { jobId: "job-live" });
    await set(future!, { jobId: null, nextAttemptAt: new Date(h.clock.now().getTime() + 3_600_000), updatedAt: old });
    const result = await runSweep(h.services);
    expect(result.requeued).toBe(3);
    expect(queueLog.enqueued.map((e) => e.deliveryId).sort()).toEqual([noJob, staleJob, future].sort());
    expect(queueLog.enqueued.find((e) => e.deliveryId === future)!.notBefore!.getTime()).toBeGreaterThan(h.clock.now().getTime());
    expect((await h.delivery(staleJob!)).jobId).toMatch(/^job-/);
    // Touched now: the next sweep leaves them alone until the grace period passes again.
    expect((await runSweep(h.services)).requeued).toBe(0);
  });
});

describe("retention", () => {
  it("purges posts past RETENTION_DAYS with their deliveries; keeps outstanding ones and the idempotency keys", async () => {
    const longAgo = new Date(h.clock.now().getTime() - 91 * 24 * 3600_000);
    const oldDone = await h.post([page], { createdAt: longAgo });
    await set(oldDone.deliveryIds[0]!, { status: "published", nextAttemptAt: null });
    const oldRetrying = await h.post([page], { createdAt: longAgo });
    const recent = await h.post([page]);
    await set(recent.deliveryIds[0]!, { status: "published", nextAttemptAt: null });
    await h.db.insert(idempotencyKeys).values({ userId: h.userId, key: "k-old", fingerprint: "f", state: "done", postId: oldDone.postId, responseStatus: 202 });

    expect((await runSweep(h.services)).purgedPosts).toBe(1);
    const left = (await h.db.select({ id: posts.id }).from(posts)).map((p) => p.id).sort();
    expect(left).toEqual([oldRetrying.postId, recent.postId].sort());
    expect(await h.db.select().from(deliveries).where(eq(deliveries.postId, oldDone.postId))).toEqual([]);
    expect(await h.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, "k-old"))).toHaveLength(1);
  });
});

describe("no queue", () => {
  it("with the poller kind, the sweep publishes due targets itself (a Worker without QStash)", async () => {
    const poller = await engineApp(fake.baseUrl);
    try {
      const acct = await poller.account("pageplatform", "1000");
      const { deliveryIds } = await poller.post([acct]);
      fake.on("POST", /\/1000\/feed$/, () => ({ status: 200, body: { id: "1000_s" } }));
      expect(await runSweep(poller.services)).toMatchObject({ published: 1 });
      expect(await poller.delivery(deliveryIds[0]!)).toMatchObject({ status: "published", providerPostId: "1000_s" });
      expect((await runSweep(poller.services, { publishDue: false })).published).toBe(0);
    } finally {
      await poller.close();
    }
  });
});
