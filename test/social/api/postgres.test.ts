/**
 * The idempotency scenarios on the machine's PostgreSQL (a scratch database, node-postgres pool of 10), where
 * the 50 requests really overlap: concurrent inserts of the same key, row locks between the takeover and the
 * completing transaction, and the cancellation's SELECT ... FOR UPDATE against a concurrent claim.
 */
import { and, eq, inArray, or, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliveries } from "../../../db/schema";
import { makePng } from "../../helpers/images";
import { createScratchDatabase, type ScratchDatabase } from "../../../dev/postgres";
import { body, createSocialTestApp, type SocialTestApp } from "../../helpers/social";
import {
  crashBetweenKeyAndCommit,
  fiftyIdenticalPosts,
  oneRefusedAmongPostsTogether,
  textPostsTogether,
  twentyDifferentBodies,
  twoTargetUser,
} from "./concurrency-scenarios";

let scratch: ScratchDatabase;
let h: SocialTestApp;
let png: Buffer;

beforeAll(async () => {
  scratch = await createScratchDatabase();
  h = await createSocialTestApp({ env: { DATABASE_URL: scratch.url } });
  png = await makePng(400, 400);
});

afterAll(async () => {
  await h?.close();
  await scratch?.drop();
});

describe("idempotency on PostgreSQL", () => {
  it("runs on node-postgres", () => {
    expect(h.services.config.databaseUrl).toBe(scratch.url);
  });

  it("50 identical POSTs with one key: exactly one post and one delivery per target", async () => {
    for (let round = 0; round < 3; round++) {
      const statuses = await fiftyIdenticalPosts(h, png);
      expect(statuses[202]).toBe(1);
    }
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

  it("a crash between key insert and commit is completed by a retry after the lock expires", async () => {
    await crashBetweenKeyAndCommit(h, png);
  });
});

describe("cancellation against a concurrent claim on PostgreSQL", () => {
  it("either the claim wins (409 while publishing) or the cancel wins (nothing claimable); never both", async () => {
    for (let round = 0; round < 10; round++) {
      const u = await twoTargetUser(h);
      const post = (await body(await h.createPost(u.apiKey, { accountIds: u.page, caption: `race ${round}` }))).data;
      // The delivery engine's claim: one conditional UPDATE of a due, claimable target.
      const claim = h.db
        .update(deliveries)
        .set({ status: "publishing", attempts: sql`${deliveries.attempts} + 1` })
        .where(
          and(
            eq(deliveries.postId, post.id),
            or(inArray(deliveries.status, ["pending"]), and(eq(deliveries.status, "failed"), sql`${deliveries.nextAttemptAt} is not null`)),
          ),
        )
        .returning({ id: deliveries.id });
      const [claimed, cancelled] = await Promise.all([claim, h.cancel(u.apiKey, post.id)]);
      const [row] = await h.db.select().from(deliveries).where(eq(deliveries.postId, post.id));
      if (cancelled.status === 200) {
        expect(claimed).toHaveLength(0);
        expect(row!.status).toBe("cancelled");
      } else {
        expect(cancelled.status).toBe(409);
        expect((await body(cancelled)).error.code).toBe("POST_NOT_CANCELLABLE");
        expect(claimed).toHaveLength(1);
        expect(row!.status).toBe("publishing");
      }
    }
  });
});
