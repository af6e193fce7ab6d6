/**
 * Kill -9 of `npm start` three times while 200 posts publish with an endpoint registered, on PGlite and on
 * PostgreSQL (where the delivery thread publishes and the server's thread sends webhooks): after the last
 * restart every post's final event and every target's event has arrived, nothing arrived that no committed
 * change caused, and every duplicate (a message sent again because its outcome was not recorded when the
 * process died) carries its first copy's webhook-id and body.
 */
import { afterAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";
import { startReceiver, verified, waitUntil, type Receiver } from "../helpers/webhook-receiver";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { e2eClient, type PostRecord } from "../social/delivery/e2e-client";

const POSTS = 200;
const cleanup: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const done of cleanup.reverse()) await done().catch(() => undefined);
});

async function crashThreeTimes(env: Record<string, string>) {
  const receiver: Receiver = await startReceiver();
  cleanup.push(() => receiver.close());
  const server: ServerProcess = await startServerProcess({
    env: { RATE_LIMIT_SOCIAL_READ: "100000", RATE_LIMIT_SOCIAL_WRITE: "100000", WEBHOOK_ALLOW_LOOPBACK: "on", ...env },
  });
  cleanup.push(() => server.dispose());
  const api = e2eClient(server.baseUrl, server.apiKey);
  const res = await fetch(`${server.baseUrl}/api/v1/webhooks`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ url: receiver.url, events: ["post.published", "post.target.published"] }),
  });
  const { secret } = ((await res.json()) as { data: { secret: string } }).data;
  const accounts = await Promise.all([api.connect("pageplatform", "crash a"), api.connect("pageplatform", "crash b")]);

  // Due over a few seconds from now, so the kills fall while posts publish and messages go out.
  const start = Date.now() + 10_000;
  const created: PostRecord[] = [];
  for (let i = 0; i < POSTS; i += 20) {
    created.push(
      ...(await Promise.all(
        Array.from({ length: 20 }, (_, k) =>
          api.createPost({ accountIds: accounts[(i + k) % 2]!.id, caption: `crash ${i + k}`, scheduledFor: new Date(start + (i + k) * 40).toISOString() }),
        ),
      )),
    );
  }
  for (let kill = 1; kill <= 3; kill++) {
    const before = receiver.received.length;
    await waitUntil(`messages before kill ${kill}`, () => receiver.received.length >= before + 20, 60_000);
    await server.kill("SIGKILL");
    await server.restart();
  }
  // Two pages of 100: the list's largest page.
  const list = async () => {
    const page = async (offset: number) => {
      const r = await fetch(`${server.baseUrl}/api/v1/social/posts?limit=100&offset=${offset}`, { headers: { authorization: `Bearer ${server.apiKey}` } });
      return ((await r.json()) as { data: { items: PostRecord[] } }).data.items;
    };
    return [...(await page(0)), ...(await page(100))];
  };
  const posts = await waitUntil(
    "every post published",
    async () => {
      const all = await list();
      return all.length === POSTS && all.every((p) => p.status === "published") && all;
    },
    90_000,
    300,
  );
  const expected = new Set(posts.flatMap((p) => [`post.published ${p.id}`, ...p.accounts.map((t) => `post.target.published ${p.id} ${t.accountId}`)]));
  const keyOf = (m: ReturnType<typeof verified>) =>
    m.type === "post.published"
      ? `post.published ${m.data.id}`
      : `post.target.published ${(m.data.post as { id: string }).id} ${(m.data.target as { accountId: string }).accountId}`;
  await waitUntil("every post's events", () => new Set(receiver.received.map((r) => keyOf(verified(r, secret)))).size >= expected.size, 60_000, 200);
  await new Promise((r) => setTimeout(r, 1000));

  const firstCopy = new Map<string, { id: string; body: string }>();
  let duplicates = 0;
  for (const r of receiver.received) {
    const key = keyOf(verified(r, secret));
    expect(expected.has(key), `invented: ${key}`).toBe(true);
    const first = firstCopy.get(key);
    if (!first) firstCopy.set(key, { id: String(r.headers["webhook-id"]), body: r.body });
    else {
      duplicates++;
      expect(r.headers["webhook-id"], key).toBe(first.id);
      expect(r.body).toBe(first.body);
    }
  }
  expect([...firstCopy.keys()].sort()).toEqual([...expected].sort());
  return { messages: receiver.received.length, duplicates };
}

describe("kill -9 while posts publish with an endpoint registered", () => {
  it("PGlite: every final event arrives, none invented, duplicates keep their webhook-id", async () => {
    const outcome = await crashThreeTimes({});
    expect(outcome.messages).toBeGreaterThanOrEqual(POSTS * 2);
  }, 300_000);

  it("PostgreSQL: the same", async () => {
    const scratch: ScratchDatabase = await createScratchDatabase();
    cleanup.push(() => scratch.drop());
    const outcome = await crashThreeTimes({ DATABASE_URL: scratch.url, PLATFORM_SANDBOX: "on" });
    expect(outcome.messages).toBeGreaterThanOrEqual(POSTS * 2);
  }, 300_000);
});
