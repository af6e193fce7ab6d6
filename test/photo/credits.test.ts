/**
 * AI generation credits through the API, on PGlite and on the machine's PostgreSQL: 50 concurrent requests
 * against a balance worth 10 images make exactly 10 images and 40 x 402, and the ledger sums to the balance;
 * the 402 names price, balance and how to get more; idempotent replays charge nothing; the sign-up grant and
 * the operator's grant (`npm run admin -- credits`) are movements. With the Replicate fake: a batch of 4 with
 * one failing item charges 3 and gives the fourth back at once; an async job holds its price while it runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { runAdminCommand } from "../../functions/node/admin-commands";
import { createTestApp, type TestApp } from "../helpers/harness";
import { startReplicateFake, type ReplicateFake } from "../helpers/replicate-fake";
import { productJpeg } from "./fixtures";

type Json = Record<string, any>;

let product: string;
beforeAll(async () => {
  product = `data:image/jpeg;base64,${(await productJpeg(240, 320)).toString("base64")}`;
});

/** One standard 1K image (4 credits each) on a template. */
const photo = (extra: Json = {}) => ({
  productImages: [{ dataUrl: product }],
  promptId: "studio-white-sweep",
  model: "standard",
  outputResult: "url",
  ...extra,
});

async function post(h: TestApp, key: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await h.app.request("/api/image/product-photography", { method: "POST", headers: h.json(key, headers), body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
}

async function credits(h: TestApp, key: string, query = "") {
  const res = await h.app.request(`/api/image/credits${query}`, { headers: h.auth(key) });
  expect(res.status).toBe(200);
  return ((await res.json()) as Json).data as Json;
}

async function allMovements(h: TestApp, key: string): Promise<Json[]> {
  const out: Json[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = (await credits(h, key, `?limit=100&offset=${offset}`)).movements;
    out.push(...page.items);
    if (!page.hasMore) return out;
  }
}

/** A user with no sign-up grant, then `n` credits granted by the operator's command. */
async function userWith(h: TestApp, n: number) {
  const user = await h.createUser();
  const out = await runAdminCommand(h.db, { command: "credits", email: user.email, add: String(n), note: "test top-up" }, h.services);
  expect(out.output).toContain(`balance\t${n}`);
  return user;
}

const ENV = { PHOTO_SIGNUP_CREDITS: "0", RATE_LIMIT_PHOTO: "1000", HEAVY_QUEUE_PER_USER: "100", HEAVY_QUEUE: "200" };

describe.each([
  { name: "PGlite", postgres: false },
  { name: "PostgreSQL", postgres: true },
])("credits on $name", ({ postgres }) => {
  let h: TestApp;
  let scratch: ScratchDatabase | undefined;
  beforeAll(async () => {
    scratch = postgres ? await createScratchDatabase() : undefined;
    h = await createTestApp({ env: { ...ENV, ...(scratch ? { DATABASE_URL: scratch.url } : {}) } });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await scratch?.drop();
  });

  it("50 concurrent requests against a balance worth 10 images: exactly 10 images, 40 x 402; the balance ends at 0 and the ledger sums to it", async () => {
    if (postgres) expect(h.services.config.databaseUrl).toBe(scratch!.url);
    const { apiKey } = await userWith(h, 40);
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(h, apiKey, photo())));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(40);
    for (const a of answers.filter((x) => x.status === 402)) {
      expect(a.body.error.code).toBe("INSUFFICIENT_CREDITS");
      expect(a.body.error.message).toMatch(/costs 4 credits \(1 image of standard at 1K, 4 each\)/);
      expect(a.body.error.message).toMatch(/Ask the service's operator for more credits/);
    }
    const made = answers.filter((a) => a.status === 200).map((a) => a.body.data);
    expect(made.every((d) => d.cost.credits === 4)).toBe(true);
    expect(made.map((d) => d.balance).sort((a, b) => a - b)[0]).toBe(0);

    const after = await credits(h, apiKey);
    expect([after.balance, after.reserved, after.available]).toEqual([0, 0, 0]);
    const movements = await allMovements(h, apiKey);
    expect(movements.filter((m) => m.kind === "charge")).toHaveLength(10);
    expect(movements.reduce((sum, m) => sum + m.amount, 0)).toBe(after.balance);
    expect(new Set(movements.filter((m) => m.kind === "charge").map((m) => m.jobId)).size).toBe(10);
    const gallery = await h.app.request("/api/image/gallery?limit=100", { headers: h.auth(apiKey) });
    expect(((await gallery.json()) as Json).data.total).toBe(10);
  }, 240_000);

  it("a 402 names price, balance and how to get more, and a batch is priced whole before anything is made", async () => {
    const { apiKey } = await userWith(h, 10);
    const res = await post(h, apiKey, photo({ productImages: [{ dataUrl: product }, { dataUrl: product }, { dataUrl: product }] }));
    expect(res.status).toBe(402);
    expect(res.body.error.message).toBe(
      "This request costs 12 credits (3 images of standard at 1K, 4 each) and 10 of your 10 credits are available. Ask the service's operator for more credits; GET /api/image/credits shows your balance.",
    );
    expect(res.body.error.details).toEqual([
      { path: "cost", message: "12 credits" },
      { path: "balance", message: "10 credits, 10 available" },
    ]);
    const state = await credits(h, apiKey);
    expect([state.balance, state.reserved]).toEqual([10, 0]);
    expect(state.movements.items.map((m: Json) => [m.kind, m.amount, m.note])).toEqual([["grant", 10, "test top-up"]]);
  });

  it("an Idempotency-Key replay charges nothing again; a 402 leaves the key free for the same request later", async () => {
    const { apiKey, email } = await userWith(h, 4);
    const first = await post(h, apiKey, photo(), { "Idempotency-Key": "credits-once" });
    expect(first.status).toBe(200);
    expect(first.body.data.balance).toBe(0);
    const replay = await post(h, apiKey, photo(), { "Idempotency-Key": "credits-once" });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    expect(replay.body.data.imageUrl).toBe(first.body.data.imageUrl);
    expect((await credits(h, apiKey)).balance).toBe(0);

    const refused = await post(h, apiKey, photo(), { "Idempotency-Key": "credits-later" });
    expect(refused.status).toBe(402);
    await runAdminCommand(h.db, { command: "credits", email, add: "4" }, h.services);
    const later = await post(h, apiKey, photo(), { "Idempotency-Key": "credits-later" });
    expect(later.status).toBe(200);
    const movements = await allMovements(h, apiKey);
    expect(movements.map((m) => [m.kind, m.amount, m.balanceAfter])).toEqual([
      ["charge", -4, 0],
      ["grant", 4, 4],
      ["charge", -4, 0],
      ["grant", 4, 4],
    ]);
  });

  it("a bad product image is refused with nothing charged or held", async () => {
    const { apiKey } = await userWith(h, 8);
    const res = await post(h, apiKey, photo({ productImages: [{ dataUrl: "data:image/png;base64,AAAA" }] }));
    expect(res.status).toBe(422);
    const state = await credits(h, apiKey);
    expect([state.balance, state.reserved]).toEqual([8, 0]);
  });
});

describe("the sign-up grant", () => {
  it("PHOTO_SIGNUP_CREDITS is every new user's first movement, granted once however often the account is read", async () => {
    const h = await createTestApp({ env: { PHOTO_SIGNUP_CREDITS: "30" } });
    try {
      const { apiKey } = await h.createUser();
      const [a, b] = await Promise.all([credits(h, apiKey), credits(h, apiKey)]);
      expect(a.balance).toBe(30);
      expect(b.balance).toBe(30);
      const state = await credits(h, apiKey);
      expect(state.movements.items.map((m: Json) => [m.kind, m.amount, m.balanceAfter, m.note])).toEqual([["grant", 30, 30, "sign-up grant"]]);
      const made = await post(h, apiKey, photo());
      expect(made.status).toBe(200);
      expect(made.body.data).toMatchObject({ cost: { credits: 4 }, balance: 26 });
    } finally {
      await h.close();
    }
  }, 90_000);

  it("the default grant covers the README's area B examples, and the admin command refuses a bad amount", async () => {
    const h = await createTestApp({ env: { PHOTO_SIGNUP_CREDITS: "" } });
    try {
      const { email } = await h.createUser();
      expect((await runAdminCommand(h.db, { command: "credits", email }, h.services)).output).toBe("balance\t100\nreserved\t0\navailable\t100");
      await expect(runAdminCommand(h.db, { command: "credits", email, add: "-5" }, h.services)).rejects.toThrow(/--add must be a whole number/);
      await expect(runAdminCommand(h.db, { command: "credits", email, add: "1.5" }, h.services)).rejects.toThrow(/--add must be a whole number/);
      await expect(runAdminCommand(h.db, { command: "credits", email, note: "x" }, h.services)).rejects.toThrow(/--note goes with --add/);
    } finally {
      await h.close();
    }
  }, 90_000);
});

describe("credits with an image model (the Replicate fake)", () => {
  let replicate: ReplicateFake;
  let h: TestApp;
  beforeAll(async () => {
    replicate = await startReplicateFake();
    h = await createTestApp({ env: { ...ENV, REPLICATE_API_TOKEN: replicate.token, REPLICATE_API_BASE: replicate.url } });
  });
  afterAll(async () => {
    await h?.close();
    await replicate?.close();
  });

  it("a batch of 4 with one failing item: 3 charged, the fourth refunded at once, and the answer says so", async () => {
    replicate.script("*", { polls: 0, failPromptContaining: "BREAK-THIS-ONE" });
    const { apiKey } = await userWith(h, 100);
    const res = await post(h, apiKey, {
      productImages: [
        { dataUrl: product, label: "a" },
        { dataUrl: product, label: "b" },
        { dataUrl: product, label: "c" },
        { dataUrl: product, label: "d", prompt: "BREAK-THIS-ONE" },
      ],
      promptId: "studio-plinth",
      model: "pro",
      resolution: "1K",
      outputResult: "url",
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.images.map((i: Json) => i.status)).toEqual(["succeeded", "succeeded", "succeeded", "failed"]);
    expect(res.body.data.images[3].error.code).toBe("GENERATION_FAILED");
    expect(res.body.data.cost).toEqual({ credits: 45, usd: 0.45, inr: 39.84 });
    expect(res.body.data.refunded).toEqual({ credits: 15, usd: 0.15, inr: 13.28 });
    expect(res.body.data.balance).toBe(55);
    const state = await credits(h, apiKey);
    expect([state.balance, state.reserved]).toEqual([55, 0]);
    expect(state.movements.items.filter((m: Json) => m.kind === "charge").map((m: Json) => m.amount)).toEqual([-15, -15, -15]);
  });

  it("an async job holds its price from its creation until each image is settled", async () => {
    replicate.script("*", { polls: 3 });
    const { apiKey } = await userWith(h, 20);
    const res = await post(h, apiKey, { ...photo(), model: "pro", resolution: "1K" }, { Prefer: "respond-async" });
    expect(res.status).toBe(202);
    const held = await credits(h, apiKey);
    expect([held.balance, held.reserved, held.available]).toEqual([20, 15, 5]);
    // Another request now finds only what is not held.
    const refused = await post(h, apiKey, { ...photo(), model: "pro", resolution: "1K" });
    expect(refused.status).toBe(402);
    expect(refused.body.error.message).toMatch(/5 of your 20 credits are available \(15 are held for images being made\)/);

    let job: Json = {};
    for (let i = 0; i < 200 && job.status !== "succeeded"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const poll = await h.app.request(res.headers.get("location")!, { headers: h.auth(apiKey) });
      job = ((await poll.json()) as Json).data;
    }
    expect(job.status).toBe("succeeded");
    expect(job.result).toMatchObject({ cost: { credits: 15 }, balance: 5 });
    const after = await credits(h, apiKey);
    expect([after.balance, after.reserved]).toEqual([5, 0]);
  }, 60_000);
});
