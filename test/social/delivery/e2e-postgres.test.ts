/**
 * The delivery engine end to end on `npm start` over PostgreSQL (a scratch database, the sandbox turned on),
 * where the server publishes from its delivery thread (functions/node/delivery-thread.ts): an immediate post
 * published once to each platform, a scheduled one not before its time, a SIGTERM while publishing (what is
 * on the wire finishes, nothing is left claimed), and a SIGKILL in the middle of publishing 20 posts, after
 * which the restarted server publishes every target exactly once. (How soon the thread publishes, woken by
 * the request thread, is measured by `npm run bench -- schedule`.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../../helpers/server-process";
import { createScratchDatabase, type ScratchDatabase } from "../../../dev/postgres";
import pg from "pg";
import { allSettled, e2eClient, waitFor, type E2eClient } from "./e2e-client";
import { immediateToBoth, killedMidPublish, scheduledOnTime } from "./e2e-scenarios";

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
/** One number from the scratch database, read directly (the server may be down). */
async function scratchRows(query: string): Promise<number> {
  const client = new pg.Client({ connectionString: scratch.url });
  await client.connect();
  try {
    return (await client.query<{ n: number }>(query)).rows[0]!.n;
  } finally {
    await client.end();
  }
}

afterAll(async () => {
  await server?.dispose();
  await scratch?.drop();
});

describe("publishing on PostgreSQL, from the delivery thread", () => {
  it("an immediate post reaches published on a page and a photo account, once each, as written", async () => {
    await immediateToBoth(api);
  });

  it("a post scheduled 3 s ahead is not published before its time, and is published once after it", async () => {
    await scheduledOnTime(api);
  });

  it("SIGTERM while publishing: the thread finishes what is on the wire, the server exits 0, and after a restart every target is out once", async () => {
    const page = await api.connect("pageplatform", "stop page");
    // Each publishing call takes 1.5 s, so the signal lands while some are on the wire.
    await api.fault(page.id, "slow", 8);
    const created = await Promise.all(Array.from({ length: 8 }, (_, n) => api.createPost({ accountIds: page.id, caption: `stop ${n}` })));
    await waitFor(
      "a publish on the wire",
      async () => ((await api.getPost(created[0]!.id)).accounts[0]!.status === "publishing" ? true : undefined),
      10_000,
      50,
    );
    expect(await server.kill("SIGTERM")).toBe(0);
    // Nothing was left claimed: whatever had started was recorded before the exit.
    const stranded = await scratchRows(`select count(*)::int as n from deliveries where status = 'publishing'`);
    expect(stranded).toBe(0);

    await server.restart();
    const after = await allSettled(
      api,
      created.map((p) => p.id),
      30_000,
    );
    expect(after.map((p) => p.accounts[0]!.status)).toEqual(Array(8).fill("published"));
    expect(server.output()).not.toMatch(/released publishing claims/);
    const items = await api.sandboxPosts(page.id);
    expect(items.map((i) => i.caption).sort()).toEqual(Array.from({ length: 8 }, (_, n) => `stop ${n}`).sort());
  }, 90_000);

  // Last: it kills the server and starts it again on the same data.
  it("SIGKILL in the middle of publishing 20 posts: after a restart every target is published exactly once", async () => {
    // The dead process's claims are released once their 15 s locks expire.
    await killedMidPublish(server, api, 90_000);
  }, 180_000);
});
