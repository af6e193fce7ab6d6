/**
 * The two platform adapters against a Graph fake over real HTTP: the calls each post shape makes, the
 * photoplatform container persisted before the next step, no second publish after a persisted container,
 * the quota read from the platform, and reconciliation by text and time.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startGraphFake, type GraphFake } from "../../helpers/graph-fake";
import { pagePlatform } from "../../../src/social/platforms/pageplatform";
import { photoPlatform } from "../../../src/social/platforms/photoplatform";
import { PlatformError } from "../../../src/social/platforms/errors";
import { testContext } from "./adapter-context";

let fake: GraphFake;
beforeAll(async () => (fake = await startGraphFake()));
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const ok = (body: unknown) => () => ({ status: 200, body });
const graphTime = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, "+0000");

describe("pageplatform", () => {
  it("posts text to /{page}/feed with the message and the token", async () => {
    fake.on("POST", /^\/v23\.0\/1000\/feed$/, ok({ id: "1000_1" }));
    const ctx = testContext(fake.baseUrl);
    expect(await pagePlatform.publish(ctx)).toEqual({ providerPostId: "1000_1" });
    expect(fake.requests).toEqual([{ method: "POST", path: "/v23.0/1000/feed", params: { message: "Hello\n\n#tag", access_token: "tok-123" } }]);
    expect(ctx.events).toEqual(["beforePublish"]);
  });

  it("posts one photo to /{page}/photos and keeps the feed post id", async () => {
    fake.on("POST", /\/1000\/photos$/, ok({ id: "55", post_id: "1000_9" }));
    const ctx = testContext(fake.baseUrl, { imageUrls: ["https://img.test/a.jpg"] });
    expect(await pagePlatform.publish(ctx)).toEqual({ providerPostId: "1000_9" });
    expect(fake.requests[0]!.params).toMatchObject({ url: "https://img.test/a.jpg", caption: "Hello\n\n#tag", published: "true" });
  });

  it("uploads several photos unpublished, then one feed post with attached_media", async () => {
    let n = 0;
    fake.on("POST", /\/1000\/photos$/, () => ({ status: 200, body: { id: `p${++n}` } }));
    fake.on("POST", /\/1000\/feed$/, ok({ id: "1000_7" }));
    const ctx = testContext(fake.baseUrl, { imageUrls: ["https://img.test/a.jpg", "https://img.test/b.jpg"] });
    expect(await pagePlatform.publish(ctx)).toEqual({ providerPostId: "1000_7" });
    expect(fake.requests.map((r) => r.params.published)).toEqual(["false", "false", undefined]);
    expect(fake.requests[2]!.params).toMatchObject({ "attached_media[0]": '{"media_fbid":"p1"}', "attached_media[1]": '{"media_fbid":"p2"}' });
    // Only the feed post makes anything visible, so only it is written ahead.
    expect(ctx.events).toEqual(["beforePublish"]);
  });

  it("reconciles by text and time, skipping ids other deliveries hold and posts from before the delivery", async () => {
    const since = new Date(Date.now() - 60_000);
    fake.on(
      "GET",
      /\/1000\/feed$/,
      ok({
        data: [
          { id: "1000_new", message: "Hello\n\n#tag", created_time: graphTime(new Date()) },
          { id: "1000_taken", message: "Hello\n\n#tag", created_time: graphTime(new Date(since.getTime() + 1000)) },
          { id: "1000_other", message: "Other", created_time: graphTime(new Date()) },
          { id: "1000_old", message: "Hello\n\n#tag", created_time: graphTime(new Date(since.getTime() - 3_600_000)) },
        ],
      }),
    );
    const ctx = testContext(fake.baseUrl, { since, knownPostIds: async () => new Set(["1000_taken"]) });
    expect(await pagePlatform.reconcile(ctx)).toEqual({ providerPostId: "1000_new" });
    expect(fake.requests[0]!.params.fields).toBe("id,message,created_time");
    fake.reset();
    fake.on("GET", /\/1000\/feed$/, ok({ data: [{ id: "1000_other", message: "Other", created_time: graphTime(new Date()) }] }));
    expect(await pagePlatform.reconcile(ctx)).toBeNull();
  });
});

describe("photoplatform", () => {
  const image = { imageUrls: ["https://img.test/p.jpg"] };
  const quota = (usage: number) => ok({ data: [{ quota_usage: usage, config: { quota_total: 50, quota_duration: 86400 } }] });

  it("creates a container, persists it, polls until FINISHED, checks the quota, then publishes", async () => {
    fake.on("POST", /\/1000\/media$/, ok({ id: "C1" }));
    let polls = 0;
    fake.on("GET", /\/C1$/, () => ({ status: 200, body: { id: "C1", status_code: ++polls < 3 ? "IN_PROGRESS" : "FINISHED" } }));
    fake.on("GET", /\/1000\/content_publishing_limit$/, quota(3));
    fake.on("POST", /\/1000\/media_publish$/, ok({ id: "M1" }));
    const ctx = testContext(fake.baseUrl, image);
    expect(await photoPlatform.publish(ctx)).toEqual({ providerPostId: "M1" });
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /v23.0/1000/media",
      "GET /v23.0/C1",
      "GET /v23.0/C1",
      "GET /v23.0/C1",
      "GET /v23.0/1000/content_publishing_limit",
      "POST /v23.0/1000/media_publish",
    ]);
    expect(fake.requests[0]!.params).toMatchObject({ image_url: "https://img.test/p.jpg", caption: "Hello\n\n#tag" });
    expect(fake.requests[1]!.params.fields).toBe("status_code,status");
    expect(fake.requests[4]!.params.fields).toBe("config,quota_usage");
    expect(fake.requests[5]!.params.creation_id).toBe("C1");
    expect(ctx.events).toEqual(["save:C1", "beforePublish"]);
  });

  it("a retry with a persisted PUBLISHED container never publishes again: it finds the media", async () => {
    fake.on("GET", /\/C9$/, ok({ id: "C9", status_code: "PUBLISHED" }));
    fake.on("GET", /\/1000\/media$/, ok({ data: [{ id: "M9", caption: "Hello\n\n#tag", timestamp: graphTime(new Date()) }] }));
    const ctx = testContext(fake.baseUrl, { ...image, containerId: "C9" });
    expect(await photoPlatform.publish(ctx)).toEqual({ providerPostId: "M9" });
    expect(fake.requests.some((r) => r.method === "POST")).toBe(false);
    expect(await photoPlatform.reconcile(ctx)).toEqual({ providerPostId: "M9" });
  });

  it("a retry with a persisted FINISHED container publishes that container, without making another", async () => {
    fake.on("GET", /\/C2$/, ok({ id: "C2", status_code: "FINISHED" }));
    fake.on("GET", /content_publishing_limit$/, quota(0));
    fake.on("POST", /media_publish$/, ok({ id: "M2" }));
    const ctx = testContext(fake.baseUrl, { ...image, containerId: "C2" });
    expect(await photoPlatform.publish(ctx)).toEqual({ providerPostId: "M2" });
    expect(fake.requests.filter((r) => r.path.endsWith("/media"))).toEqual([]);
    expect(ctx.saved).toEqual([]);
  });

  it("an expired container is replaced by a new one", async () => {
    fake.on("GET", /\/C3$/, ok({ id: "C3", status_code: "EXPIRED" }));
    fake.on("POST", /\/1000\/media$/, ok({ id: "C4" }));
    fake.on("GET", /\/C4$/, ok({ id: "C4", status_code: "FINISHED" }));
    fake.on("GET", /content_publishing_limit$/, quota(0));
    fake.on("POST", /media_publish$/, ok({ id: "M4" }));
    const ctx = testContext(fake.baseUrl, { ...image, containerId: "C3" });
    expect(await photoPlatform.publish(ctx)).toEqual({ providerPostId: "M4" });
    expect(ctx.saved).toEqual([null, "C4"]);
  });

  it("reads the quota from the platform: used up means rate_limit and no publish", async () => {
    fake.on("POST", /\/1000\/media$/, ok({ id: "C5" }));
    fake.on("GET", /\/C5$/, ok({ id: "C5", status_code: "FINISHED" }));
    fake.on("GET", /content_publishing_limit$/, () => ({
      status: 200,
      body: { data: [{ quota_usage: 25, config: { quota_total: 25, quota_duration: 86400 } }] },
    }));
    const err = await photoPlatform.publish(testContext(fake.baseUrl, image)).catch((e) => e);
    expect(err).toBeInstanceOf(PlatformError);
    expect(err.kind).toBe("rate_limit");
    expect(err.message).toMatch(/25 of 25/);
    expect(fake.requests.some((r) => r.path.endsWith("media_publish"))).toBe(false);
  });

  it("a container in ERROR is an invalid request; one still processing after the budget is transient and kept", async () => {
    fake.on("POST", /\/1000\/media$/, ok({ id: "C6" }));
    fake.on("GET", /\/C6$/, ok({ id: "C6", status_code: "ERROR", status: "Error: 2207001" }));
    await expect(photoPlatform.publish(testContext(fake.baseUrl, image))).rejects.toMatchObject({ kind: "invalid" });
    fake.reset();
    fake.on("GET", /\/C7$/, ok({ id: "C7", status_code: "IN_PROGRESS" }));
    const ctx = testContext(fake.baseUrl, { ...image, containerId: "C7", poll: { intervalMs: 20, maxWaitMs: 100 } });
    await expect(photoPlatform.publish(ctx)).rejects.toMatchObject({ kind: "transient" });
    expect(ctx.saved).toEqual([]);
  });

  it("reconcile without a persisted container is 'nothing published' and asks nothing", async () => {
    expect(await photoPlatform.reconcile(testContext(fake.baseUrl, image))).toBeNull();
    expect(fake.requests).toEqual([]);
  });
});
