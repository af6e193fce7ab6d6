/**
 * publishDelivery against a Graph fake: one claim wins, each error class leads to the right target state,
 * retry count and account state, ambiguous attempts reconcile before any resend, and a publisher that lost
 * its claim can no longer write.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { deliveries, socialAccounts } from "../../../db/schema";
import { GRAPH_ERROR_BODIES, startGraphFake, type GraphFake } from "../../helpers/graph-fake";
import { publishDelivery } from "../../../src/social/delivery/publish";
import { MAX_ATTEMPTS } from "../../../src/social/delivery/policy";
import { engineApp } from "./fixtures";

let fake: GraphFake;
let h: Awaited<ReturnType<typeof engineApp>>;
let page: string;
let photo: string;
const fast = { timeoutMs: 400, poll: { intervalMs: 10, maxWaitMs: 500 } };
const feedOk =
  (id = "1000_1") =>
  () => ({ status: 200, body: { id } });
const posts = () => fake.requests.filter((r) => r.method === "POST");

beforeAll(async () => {
  fake = await startGraphFake();
  h = await engineApp(fake.baseUrl);
  page = await h.account("pageplatform", "1000");
  photo = await h.account("photoplatform", "2000");
});
afterAll(async () => {
  await h.close();
  await fake.close();
});
beforeEach(() => fake.reset());

describe("claiming", () => {
  it("ten concurrent publishers of one target: one claim, one platform post, the rest do nothing", async () => {
    fake.on("POST", /\/1000\/feed$/, feedOk("1000_42"));
    const { deliveryIds } = await h.post([page]);
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => publishDelivery(h.services, deliveryIds[0]!, fast)));
    expect(outcomes.filter((o) => o.status === "published")).toHaveLength(1);
    expect(outcomes.filter((o) => o.status === "skipped")).toHaveLength(9);
    expect(posts()).toHaveLength(1);
    const row = await h.delivery(deliveryIds[0]!);
    expect(row).toMatchObject({
      status: "published",
      attempts: 1,
      providerPostId: "1000_42",
      lockedUntil: null,
      nextAttemptAt: null,
      ambiguous: false,
      errorCode: null,
    });
    expect(row.publishedAt).toBeInstanceOf(Date);
    // A re-delivery of a published target is a no-op.
    expect(await publishDelivery(h.services, deliveryIds[0]!, fast)).toEqual({ status: "skipped", reason: "not_claimable" });
  });

  it("a target that is not due, or whose post is cancelled, or an unknown id, is not claimed", async () => {
    const later = await h.post([page], { dueAt: new Date(h.clock.now().getTime() + 60_000) });
    expect((await publishDelivery(h.services, later.deliveryIds[0]!, fast)).status).toBe("skipped");
    const cancelled = await h.post([page]);
    await h.db.execute(`update posts set cancelled_at = now() where id = '${cancelled.postId}'`);
    expect((await publishDelivery(h.services, cancelled.deliveryIds[0]!, fast)).status).toBe("skipped");
    expect((await publishDelivery(h.services, "not-a-uuid", fast)).status).toBe("skipped");
    expect((await publishDelivery(h.services, crypto.randomUUID(), fast)).status).toBe("skipped");
    expect(fake.requests).toEqual([]);
  });
});

describe("outcomes by error class", () => {
  it("transient: failed with a retry time 5-7.5 s out, then published on the next attempt", async () => {
    fake.once("POST", /\/feed$/, () => ({ status: 500, body: GRAPH_ERROR_BODIES.transient[0]!.body }));
    fake.on("POST", /\/feed$/, feedOk("1000_2"));
    const { deliveryIds } = await h.post([page]);
    const id = deliveryIds[0]!;
    const first = await publishDelivery(h.services, id, fast);
    expect(first.status).toBe("retry");
    const row = await h.delivery(id);
    expect(row).toMatchObject({ status: "failed", attempts: 1, errorCode: "PLATFORM_UNAVAILABLE", ambiguous: false, lockedUntil: null });
    // Counted from when the failure was recorded (updatedAt, the same instant the retry time is computed
    // from), not from the claim: the platform call in between takes its own time on a busy machine.
    const wait = row.nextAttemptAt!.getTime() - row.updatedAt.getTime();
    expect(wait).toBeGreaterThanOrEqual(5000);
    expect(wait).toBeLessThanOrEqual(7500);
    expect((await publishDelivery(h.services, id, fast)).status).toBe("skipped");
    h.clock.advance(wait);
    expect(await publishDelivery(h.services, id, fast)).toMatchObject({ status: "published", providerPostId: "1000_2" });
    expect(await h.delivery(id)).toMatchObject({ status: "published", attempts: 2, errorCode: null, errorMessage: null });
  });

  it(`gives up after ${MAX_ATTEMPTS} attempts: failed for good, the last error kept`, async () => {
    fake.on("POST", /\/feed$/, () => ({ status: 503, body: GRAPH_ERROR_BODIES.transient[1]!.body }));
    const { deliveryIds } = await h.post([page]);
    const id = deliveryIds[0]!;
    for (let i = 1; i <= MAX_ATTEMPTS; i++) {
      const outcome = await publishDelivery(h.services, id, fast);
      expect(outcome.status).toBe(i < MAX_ATTEMPTS ? "retry" : "failed");
      h.clock.advance(60 * 60_000);
    }
    expect(await h.delivery(id)).toMatchObject({ status: "failed", attempts: MAX_ATTEMPTS, nextAttemptAt: null, errorCode: "PLATFORM_UNAVAILABLE" });
    expect((await h.delivery(id)).errorMessage).toMatch(/Gave up after 5 attempts/);
    expect(posts()).toHaveLength(MAX_ATTEMPTS);
  });

  it("rate limit: retried no sooner than a minute, or the platform's Retry-After if longer", async () => {
    fake.once("POST", /\/feed$/, () => ({ status: 403, body: GRAPH_ERROR_BODIES.rate_limit[2]!.body }));
    fake.once("POST", /\/feed$/, () => ({ status: 403, body: GRAPH_ERROR_BODIES.rate_limit[0]!.body, headers: { "retry-after": "900" } }));
    const a = (await h.post([page])).deliveryIds[0]!;
    const b = (await h.post([page])).deliveryIds[0]!;
    await publishDelivery(h.services, a, fast);
    await publishDelivery(h.services, b, fast);
    const ra = await h.delivery(a);
    const rb = await h.delivery(b);
    expect(ra).toMatchObject({ status: "failed", attempts: 1, errorCode: "RATE_LIMITED" });
    expect(ra.nextAttemptAt!.getTime() - ra.lastAttemptAt!.getTime()).toBeGreaterThanOrEqual(60_000);
    expect(rb.nextAttemptAt!.getTime() - rb.lastAttemptAt!.getTime()).toBeGreaterThanOrEqual(900_000);
  });

  it("invalid request: failed for good, no retry", async () => {
    fake.on("POST", /\/feed$/, () => ({ status: 400, body: GRAPH_ERROR_BODIES.invalid[0]!.body }));
    const id = (await h.post([page])).deliveryIds[0]!;
    expect(await publishDelivery(h.services, id, fast)).toEqual({ status: "failed", errorCode: "PLATFORM_REJECTED" });
    expect(await h.delivery(id)).toMatchObject({ status: "failed", attempts: 1, nextAttemptAt: null });
    expect((await h.delivery(id)).errorMessage).toMatch(/\(#100\) Invalid parameter \(code 100, fbtrace_id/);
  });

  it("auth: ACCOUNT_NEEDS_RECONNECT, no retry, account marked; the account's other targets fail without calling the platform", async () => {
    const acct = await h.account("pageplatform", "3000");
    fake.on("POST", /\/3000\/feed$/, () => ({ status: 400, body: GRAPH_ERROR_BODIES.auth[0]!.body }));
    const [a, b] = (await h.post([acct])).deliveryIds.concat((await h.post([acct])).deliveryIds);
    expect(await publishDelivery(h.services, a!, fast)).toEqual({ status: "failed", errorCode: "ACCOUNT_NEEDS_RECONNECT" });
    expect(await h.delivery(a!)).toMatchObject({ status: "failed", attempts: 1, nextAttemptAt: null });
    expect(await h.accountRow(acct)).toMatchObject({ tokenStatus: "invalid" });
    const res = await h.app.request("/api/v1/social/accounts", { headers: h.auth(await h.createKey(h.userId)) });
    const listed = ((await res.json()) as { data: { accounts: Array<{ id: string; canPublish: boolean }> } }).data.accounts.find((x) => x.id === acct);
    expect(listed?.canPublish).toBe(false);
    expect(await publishDelivery(h.services, b!, fast)).toEqual({ status: "failed", errorCode: "ACCOUNT_NEEDS_RECONNECT" });
    expect(posts()).toHaveLength(1);
    // The account keeps the platform's reason, not the echo of the second target.
    expect((await h.accountRow(acct)).tokenError).toMatch(/Session has expired/);
  });

  it("each publish sends the token its account holds now: a stored token that no longer opens fails without a call, a reconnected one is sent", async () => {
    const acct = await h.account("pageplatform", "4000", "tok-first");
    fake.on("POST", /\/4000\/feed$/, feedOk("4000_1"));
    const sentTokens = () => posts().map((r) => r.params.access_token);
    expect((await publishDelivery(h.services, (await h.post([acct])).deliveryIds[0]!, fast)).status).toBe("published");
    expect(sentTokens()).toEqual(["tok-first"]);

    // The stored ciphertext changed by one character (bit rot, a bad restore): it no longer authenticates.
    const stored = (await h.accountRow(acct)).tokenCiphertext;
    const last = stored.at(-2) === "A" ? "B" : "A";
    await h.db
      .update(socialAccounts)
      .set({ tokenCiphertext: `${stored.slice(0, -2)}${last}${stored.at(-1)}` })
      .where(eq(socialAccounts.id, acct));
    expect(await publishDelivery(h.services, (await h.post([acct])).deliveryIds[0]!, fast)).toEqual({ status: "failed", errorCode: "ACCOUNT_NEEDS_RECONNECT" });
    expect(await h.accountRow(acct)).toMatchObject({ tokenStatus: "invalid", tokenError: expect.stringMatching(/cannot be read/) });
    expect(sentTokens()).toEqual(["tok-first"]);

    // Reconnected: a new token, stored encrypted.
    await h.db
      .update(socialAccounts)
      .set({ tokenCiphertext: await h.services.tokens.encrypt("tok-second"), tokenStatus: "active", tokenError: null })
      .where(eq(socialAccounts.id, acct));
    expect((await publishDelivery(h.services, (await h.post([acct])).deliveryIds[0]!, fast)).status).toBe("published");
    // And back to the first token's ciphertext: that token again.
    await h.db.update(socialAccounts).set({ tokenCiphertext: stored }).where(eq(socialAccounts.id, acct));
    expect((await publishDelivery(h.services, (await h.post([acct])).deliveryIds[0]!, fast)).status).toBe("published");
    expect(sentTokens()).toEqual(["tok-first", "tok-second", "tok-first"]);
  });
});

describe("ambiguous attempts", () => {
  it("no answer -> ambiguous with a retry; the retry finds the post on the platform and records it without sending again", async () => {
    fake.once("POST", /\/feed$/, () => ({ fault: "hang" }));
    const id = (await h.post([page], { caption: "Only once" })).deliveryIds[0]!;
    expect((await publishDelivery(h.services, id, fast)).status).toBe("retry");
    const row = await h.delivery(id);
    expect(row).toMatchObject({ status: "failed", ambiguous: true, errorCode: "OUTCOME_UNKNOWN", attempts: 1 });
    h.clock.advance(row.nextAttemptAt!.getTime() - h.clock.now().getTime() + 1000);
    const createdTime = row.lastAttemptAt!.toISOString().replace(/\.\d+Z$/, "+0000");
    fake.on("GET", /\/1000\/feed$/, () => ({ status: 200, body: { data: [{ id: "1000_77", message: "Only once\n\n#tag", created_time: createdTime }] } }));
    expect(await publishDelivery(h.services, id, fast)).toEqual({ status: "published", providerPostId: "1000_77", reconciled: true });
    expect(posts()).toHaveLength(1);
    expect(await h.delivery(id)).toMatchObject({ status: "published", ambiguous: false, attempts: 2 });
  });

  it("when reconciliation finds nothing, the retry sends again, once", async () => {
    fake.once("POST", /\/feed$/, () => ({ fault: "destroy" }));
    fake.on("POST", /\/feed$/, feedOk("1000_5"));
    fake.on("GET", /\/feed$/, () => ({ status: 200, body: { data: [] } }));
    const id = (await h.post([page])).deliveryIds[0]!;
    await publishDelivery(h.services, id, fast);
    h.clock.advance(10_000);
    expect(await publishDelivery(h.services, id, fast)).toMatchObject({ status: "published", providerPostId: "1000_5", reconciled: false });
    expect(posts()).toHaveLength(2);
  });

  it("if the platform cannot be asked, nothing is sent and the target stays ambiguous", async () => {
    fake.once("POST", /\/feed$/, () => ({ fault: "destroy" }));
    fake.on("GET", /\/feed$/, () => ({ status: 500, body: GRAPH_ERROR_BODIES.transient[0]!.body }));
    const id = (await h.post([page])).deliveryIds[0]!;
    await publishDelivery(h.services, id, fast);
    h.clock.advance(10_000);
    expect((await publishDelivery(h.services, id, fast)).status).toBe("retry");
    expect(posts()).toHaveLength(1);
    expect(await h.delivery(id)).toMatchObject({ status: "failed", ambiguous: true, errorCode: "OUTCOME_UNKNOWN", attempts: 2 });
  });
});

describe("photoplatform through the engine", () => {
  it("persists the container before polling, and a retry after a failed media_publish reuses it", async () => {
    let seenInDb: string | null = null;
    let polls = 0;
    fake.on("POST", /\/2000\/media$/, () => ({ status: 200, body: { id: "C100" } }));
    fake.on("GET", /\/C100$/, async () => {
      if (polls++ === 0) seenInDb = (await h.db.select().from(deliveries).where(eq(deliveries.providerContainerId, "C100")))[0]?.id ?? null;
      return { status: 200, body: { status_code: polls < 2 ? "IN_PROGRESS" : "FINISHED" } };
    });
    fake.on("GET", /content_publishing_limit$/, () => ({
      status: 200,
      body: { data: [{ quota_usage: 1, config: { quota_total: 50, quota_duration: 86400 } }] },
    }));
    fake.once("POST", /media_publish$/, () => ({ status: 500, body: GRAPH_ERROR_BODIES.transient[2]!.body }));
    fake.on("POST", /media_publish$/, () => ({ status: 200, body: { id: "M100" } }));
    const id = (await h.post([photo], { images: [{ url: "https://img.test/p.jpg", width: 800, height: 1000 }] })).deliveryIds[0]!;
    expect((await publishDelivery(h.services, id, fast)).status).toBe("retry");
    expect(seenInDb).toBe(id);
    h.clock.advance(10_000);
    expect(await publishDelivery(h.services, id, fast)).toMatchObject({ status: "published", providerPostId: "M100" });
    expect(fake.requests.filter((r) => r.path.endsWith("/2000/media"))).toHaveLength(1);
    expect(await h.delivery(id)).toMatchObject({ providerContainerId: "C100", attempts: 2 });
  });
});

describe("fencing", () => {
  it("a publisher whose claim was taken over cannot record anything", async () => {
    const id = (await h.post([page])).deliveryIds[0]!;
    fake.on("POST", /\/feed$/, async () => {
      // Meanwhile: the lock expired, the sweep released it and another publisher claimed attempt 2.
      await h.db.update(deliveries).set({ status: "publishing", attempts: 2 }).where(eq(deliveries.id, id));
      return { status: 200, body: { id: "1000_9" } };
    });
    expect(await publishDelivery(h.services, id, fast)).toEqual({ status: "lost_claim" });
    expect(await h.delivery(id)).toMatchObject({ status: "publishing", attempts: 2, providerPostId: null });
  });

  it("the lock is renewed while a slow publish runs", async () => {
    const id = (await h.post([page])).deliveryIds[0]!;
    let lockDuringCall = 0;
    fake.on("POST", /\/feed$/, async () => {
      await new Promise((r) => setTimeout(r, 1600));
      lockDuringCall = (await h.delivery(id)).lockedUntil!.getTime();
      return { status: 200, body: { id: "1000_10" } };
    });
    const started = h.clock.now().getTime();
    expect((await publishDelivery(h.services, id, { ...fast, timeoutMs: 5000, lockMs: 1200 })).status).toBe("published");
    // Claimed with a 1.2 s lock; renewed at least once during the 1.6 s call.
    expect(lockDuringCall).toBeGreaterThan(started + 1200);
  });
});
