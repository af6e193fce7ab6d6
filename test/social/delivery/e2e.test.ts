/**
 * The delivery engine end to end on the embedded server (`tsx functions/node.ts`, PGlite in a temporary
 * DATA_DIR, the built-in sandbox reached over real HTTP): immediate and scheduled posts, cancellation, each
 * sandbox fault, and a SIGKILL in the middle of publishing 20 posts. One server for the whole file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process";
import { e2eClient, settled, targetOf, waitFor, type E2eClient, type PostRecord } from "./e2e-client";
import { immediateToBoth, killedMidPublish, scheduledOnTime } from "./e2e-scenarios";

let server: ServerProcess;
let api: E2eClient;

beforeAll(async () => {
  // The tests poll post states; the per-user request budgets are not what is under test here.
  server = await startServerProcess({ env: { RATE_LIMIT_SOCIAL_READ: "100000", RATE_LIMIT_SOCIAL_WRITE: "100000" } });
  api = e2eClient(server.baseUrl, server.apiKey);
}, 90_000);
afterAll(async () => {
  await server?.dispose();
});

describe("publishing", () => {
  it("an immediate post reaches published on a page and a photo account, once each, as written", async () => {
    await immediateToBoth(api);
  });

  it("a post scheduled 3 s ahead is not published before its time, and is published once after it", async () => {
    await scheduledOnTime(api);
  });

  it("cancelling before the time leaves the sandbox empty", async () => {
    const [page, photo] = await Promise.all([api.connect("pageplatform"), api.connect("photoplatform")]);
    const at = new Date(Date.now() + 2500);
    const created = await api.createPost({ accountIds: [page.id, photo.id], caption: "Never", images: [await api.image()], scheduledFor: at.toISOString() });
    const cancelled = await api.cancelPost(created.id);
    expect(cancelled.accounts.map((t) => t.status)).toEqual(["cancelled", "cancelled"]);
    await new Promise((r) => setTimeout(r, at.getTime() - Date.now() + 2000));
    expect(await api.sandboxPosts(page.id)).toEqual([]);
    expect(await api.sandboxPosts(photo.id)).toEqual([]);
    expect((await api.getPost(created.id)).accounts.map((t) => t.status)).toEqual(["cancelled", "cancelled"]);
  });
});

describe("faults", () => {
  it("each fault kind leads to the right target state, retry count and account state", async () => {
    const kinds = ["transient", "rate_limit", "auth", "invalid", "ambiguous", "slow"] as const;
    const pages = await Promise.all(kinds.map((k) => api.connect("pageplatform", `fault ${k}`)));
    const photos = await Promise.all(["ambiguous", "transient"].map((k) => api.connect("photoplatform", `fault ${k}`)));
    await Promise.all([...kinds.map((k, i) => api.fault(pages[i]!.id, k)), api.fault(photos[0]!.id, "ambiguous"), api.fault(photos[1]!.id, "transient")]);
    const image = await api.image();
    const created = await Promise.all([
      ...kinds.map((k, i) => api.createPost({ accountIds: pages[i]!.id, caption: `fault ${k}` })),
      ...photos.map((p, i) => api.createPost({ accountIds: p.id, caption: `photo fault ${i}`, images: [image] })),
    ]);
    const posts = await Promise.all(created.map((p, i) => (kinds[i] === "rate_limit" ? waitForRetry(p.id) : settled(api, p.id, 25_000))));
    const [transient, rateLimit, auth, invalid, ambiguous, slow, photoAmbiguous, photoTransient] = posts.map((p) => p.accounts[0]!);

    expect(transient).toMatchObject({ status: "published", attempts: 2, error: null });
    expect(photoTransient).toMatchObject({ status: "published", attempts: 2, error: null });
    expect(slow).toMatchObject({ status: "published", attempts: 1 });
    expect(rateLimit).toMatchObject({ status: "failed", attempts: 1, error: { code: "RATE_LIMITED" } });
    expect(new Date(rateLimit!.nextAttemptAt!).getTime() - Date.now()).toBeGreaterThan(40_000);
    expect(auth).toMatchObject({ status: "failed", attempts: 1, nextAttemptAt: null, error: { code: "ACCOUNT_NEEDS_RECONNECT" } });
    expect(invalid).toMatchObject({ status: "failed", attempts: 1, nextAttemptAt: null, error: { code: "PLATFORM_REJECTED" } });
    expect(invalid!.error!.message).toMatch(/code 100/);
    for (const t of [ambiguous, photoAmbiguous]) expect(t).toMatchObject({ status: "published", attempts: 2, error: null });

    // Exactly one item where the answer was lost; none where the platform refused.
    expect(await api.sandboxPosts(pages[4]!.id)).toHaveLength(1);
    expect(await api.sandboxPosts(photos[0]!.id)).toHaveLength(1);
    expect((await api.sandboxPosts(pages[4]!.id))[0]!.id).toBe(ambiguous!.providerPostId);
    expect(await api.sandboxPosts(pages[2]!.id)).toEqual([]);
    expect(await api.sandboxPosts(pages[3]!.id)).toEqual([]);

    const accounts = new Map((await api.accounts()).map((a) => [a.id, a]));
    expect(accounts.get(pages[2]!.id)).toMatchObject({ tokenStatus: "invalid", canPublish: false });
    for (const i of [0, 1, 3, 4, 5]) expect(accounts.get(pages[i]!.id)).toMatchObject({ tokenStatus: "active", canPublish: true });
    // Reconnecting (a new sandbox token) makes the account publishable again.
    expect(await api.connect("pageplatform", "fault auth", pages[2]!.platformAccountId)).toMatchObject({ tokenStatus: "active", canPublish: true });
    await api.cancelPost(created[1]!.id);
  }, 60_000);

  it("the sandbox refuses an image it cannot fetch, as the platform does", async () => {
    const photo = await api.connect("photoplatform");
    const created = await api.createPost({
      accountIds: photo.id,
      caption: "gone",
      images: [await api.image()],
      scheduledFor: new Date(Date.now() + 1500).toISOString(),
    });
    // The image disappears from the service's storage before the platform fetches it.
    await rm(join(server.dataDir, "files", new URL(created.imageUrls[0]!).pathname.replace(/^\/files\//, "")));
    const t = targetOf(await settled(api, created.id, 10_000), photo.id);
    expect(t).toMatchObject({ status: "failed", attempts: 1, nextAttemptAt: null, error: { code: "PLATFORM_REJECTED" } });
    expect(t.error!.message).toMatch(/code 9004, subcode 2207052/);
    expect(await api.sandboxPosts(photo.id)).toEqual([]);
  });
});

async function waitForRetry(postId: string): Promise<PostRecord> {
  return waitFor(
    `post ${postId} to wait for a retry`,
    async () => {
      const post = await api.getPost(postId);
      return post.accounts[0]!.status === "failed" && post.accounts[0]!.nextAttemptAt ? post : undefined;
    },
    15_000,
  );
}

// Last in the file: it kills the shared server and starts it again on the same data.
describe("crash", () => {
  it("SIGKILL in the middle of publishing 20 posts: after a restart every target is published exactly once", async () => {
    await killedMidPublish(server, api, 60_000);
  }, 150_000);
});
