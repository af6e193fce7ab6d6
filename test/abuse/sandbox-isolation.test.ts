/**
 * The sandbox keeps users apart (issue 14): the same sandbox account id may be connected by two users, and
 * each sees only their own published items and faults; control routes are rate limited like social writes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq } from "drizzle-orm";
import { socialAccounts } from "../../db/schema";
import { createTestApp, type TestApp } from "../helpers/harness";

let h: TestApp;
let alice: { userId: string; apiKey: string };
let bob: { userId: string; apiKey: string };

beforeAll(async () => {
  h = await createTestApp();
  alice = await h.createUser();
  bob = await h.createUser();
});
afterAll(() => h.close());

const post = (path: string, apiKey: string, body: unknown) => h.app.request(path, { method: "POST", headers: h.json(apiKey), body: JSON.stringify(body) });
const get = (path: string, apiKey: string) => h.app.request(path, { headers: h.auth(apiKey) });
const graph = (path: string, params: Record<string, string>, method = "POST") =>
  method === "GET"
    ? h.app.request(`/sandbox/graph/v23.0/${path}?${new URLSearchParams(params)}`)
    : h.app.request(`/sandbox/graph/v23.0/${path}`, {
        method,
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(params).toString(),
      });

/** The sandbox token behind a user's connected account, as the delivery adapters would use it. */
async function tokenOf(userId: string, accountId: string): Promise<string> {
  const [row] = await h.db
    .select()
    .from(socialAccounts)
    .where(and(eq(socialAccounts.userId, userId), eq(socialAccounts.id, accountId)));
  return h.services.tokens.decrypt(row!.tokenCiphertext);
}

describe("two users, one sandbox account id", () => {
  const id = "pageplatform:31337";

  it("both may connect the same id; each gets an account of their own", async () => {
    expect((await post("/sandbox/accounts", alice.apiKey, { platform: "pageplatform", name: "Alice shop", platformAccountId: "31337" })).status).toBe(201);
    expect((await post("/sandbox/accounts", bob.apiKey, { platform: "pageplatform", name: "Bob shop", platformAccountId: "31337" })).status).toBe(201);
    const names = async (key: string) => ((await (await get("/api/v1/social/accounts", key)).json()) as any).data.accounts.map((a: any) => a.name);
    expect(await names(alice.apiKey)).toEqual(["Alice shop"]);
    expect(await names(bob.apiKey)).toEqual(["Bob shop"]);
  });

  it("what Alice publishes is not in Bob's sandbox, through the control route or Bob's Graph token", async () => {
    const aliceToken = await tokenOf(alice.userId, id);
    const bobToken = await tokenOf(bob.userId, id);
    const published = (await (await graph("31337/feed", { message: "Alice's secret launch", access_token: aliceToken })).json()) as any;
    expect(published.id).toMatch(/^31337_\d+$/);

    const aliceItems = ((await (await get(`/sandbox/posts?accountId=${id}`, alice.apiKey)).json()) as any).data.items;
    expect(aliceItems.map((i: any) => i.caption)).toEqual(["Alice's secret launch"]);
    const bobRes = await get(`/sandbox/posts?accountId=${id}`, bob.apiKey);
    expect(bobRes.status).toBe(200);
    expect(((await bobRes.json()) as any).data.items).toEqual([]);

    const bobFeed = (await (await graph("31337/feed", { access_token: bobToken }, "GET")).json()) as any;
    expect(bobFeed.data).toEqual([]);
    // Alice's post id read with Bob's token: it does not exist in Bob's sandbox.
    const node = await graph(published.id, { access_token: bobToken }, "GET");
    expect(((await node.json()) as any).error.code).toBe(100);
  });

  it("a fault Bob injects hits only Bob's deliveries", async () => {
    expect((await post("/sandbox/faults", bob.apiKey, { accountId: id, kind: "rate_limit", times: 1 })).status).toBe(201);
    const alicePost = await graph("31337/feed", { message: "Alice again", access_token: await tokenOf(alice.userId, id) });
    expect(alicePost.status).toBe(200);
    const bobPost = await graph("31337/feed", { message: "Bob", access_token: await tokenOf(bob.userId, id) });
    expect(bobPost.status).toBe(400);
    expect(((await bobPost.json()) as any).error.code).toBe(32);
  });
});

describe("rate limit", () => {
  it("control routes share the social write budget and answer 429 with Retry-After", async () => {
    const limited = await createTestApp({ env: { RATE_LIMIT_SOCIAL_WRITE: "2" } });
    try {
      const user = await limited.createUser();
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 4; i++) {
        last = await limited.app.request("/sandbox/posts?accountId=pageplatform:1", { headers: limited.auth(user.apiKey) });
        statuses.push(last.status);
      }
      expect(statuses).toEqual([404, 404, 429, 429]);
      expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  });
});
