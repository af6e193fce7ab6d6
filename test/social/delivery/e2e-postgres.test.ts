/**
 * The delivery engine end to end on `npm start` over PostgreSQL (a scratch database, the sandbox turned on),
 * where the server publishes from its delivery thread (functions/node/delivery-thread.ts): an immediate post
 * published once to each platform, a scheduled one not before its time, and a SIGKILL in the middle of
 * publishing 20 posts, after which the restarted server publishes every target exactly once. (How soon the
 * thread publishes, woken by the request thread, is measured by `npm run bench -- schedule`.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process";
import { createScratchDatabase, type ScratchDatabase } from "../../../dev/postgres";
import { e2eClient, settled, type E2eClient } from "./e2e-client";
import { immediateToBoth, killedMidPublish } from "./e2e-scenarios";

let scratch: ScratchDatabase;
let server: ServerProcess;
let api: E2eClient;

beforeAll(async () => {
  scratch = await createScratchDatabase();
  server = await startServerProcess({
    env: { DATABASE_URL: scratch.url, PLATFORM_SANDBOX: "on", RATE_LIMIT_SOCIAL_READ: "100000", RATE_LIMIT_SOCIAL_WRITE: "100000" },
  });
  api = e2eClient(server.baseUrl, server.apiKey);
}, 90_000);
afterAll(async () => {
  await server?.dispose();
  await scratch?.drop();
});

describe("publishing on PostgreSQL, from the delivery thread", () => {
  it("an immediate post reaches published on a page and a photo account within seconds, once each, as written", async () => {
    await immediateToBoth(api);
  });

  it("a post scheduled 2 s ahead is not published before its time, and is within 2 s after", async () => {
    const page = await api.connect("pageplatform", "on time");
    const at = new Date(Date.now() + 2000);
    const created = await api.createPost({ accountIds: page.id, caption: "On time", scheduledFor: at.toISOString() });
    const post = await settled(api, created.id, 8000);
    const lateness = new Date(post.accounts[0]!.publishedAt!).getTime() - at.getTime();
    expect(lateness).toBeGreaterThanOrEqual(0);
    expect(lateness).toBeLessThanOrEqual(2000);
    expect(await api.sandboxPosts(page.id)).toHaveLength(1);
  });

  // Last: it kills the server and starts it again on the same data.
  it("SIGKILL in the middle of publishing 20 posts: after a restart every target is published exactly once", async () => {
    // The dead process's claims are released once their 15 s locks expire.
    await killedMidPublish(server, api, 90_000);
  }, 180_000);
});
