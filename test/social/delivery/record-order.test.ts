/**
 * When the embedded scheduler records an answered target: after the sends still going out (a bounded while),
 * so the burst's sends get the database first, whether or not the target's owner has a webhook endpoint (the
 * event the record writes waits with it, at most the bound). Either way `publishedAt` is the platform's
 * answer, not the record.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookEndpoints } from "../../../db/schema";
import { startScheduler } from "../../../functions/node/scheduler";
import { startGraphFake, type GraphFake } from "../../helpers/graph-fake";
import { waitUntil } from "../../helpers/webhook-receiver";
import { engineApp } from "./fixtures";

let fake: GraphFake;
let h: Awaited<ReturnType<typeof engineApp>>;
let page: string;
let answered: string[] = [];
let release: () => void = () => {};
let held = false;

beforeAll(async () => {
  fake = await startGraphFake();
  let n = 0;
  // A caption with "hold" is answered when the test says; any other at once.
  fake.on("POST", /\/feed$/, async (req) => {
    if (req.params.message?.includes("hold")) {
      held = true;
      await new Promise<void>((r) => (release = r));
    }
    answered.push(req.params.message ?? "");
    return { status: 200, body: { id: `1000_${++n}` } };
  });
  h = await engineApp(fake.baseUrl);
  page = await h.account("pageplatform", "1000");
});
afterAll(async () => {
  release();
  await h.close();
  await fake.close();
});

const until = (what: string, ok: () => boolean | Promise<boolean>) => waitUntil(what, ok, 10_000, 10);

/** Two targets due now, one answered at once and one held; the scheduler running on a shared database. */
async function twoTargets(label: string, recordWaitMs = 60_000) {
  answered = [];
  held = false;
  const fast = (await h.post([page], { caption: `${label} fast` })).deliveryIds[0]!;
  const slow = (await h.post([page], { caption: `${label} hold` })).deliveryIds[0]!;
  // By default the records' wait for the sends is bounded far beyond the test, so that only the rule decides.
  const scheduler = startScheduler(h.services, { publish: true, concurrency: 2, pollMs: 100, exclusiveDb: false, recordWaitMs });
  await until("the fast target is answered and the other held", () => held && answered.some((m) => m.startsWith(`${label} fast`)));
  return { fast, slow, scheduler };
}

describe("recording an answered target during a burst", () => {
  it.each([
    ["without a webhook endpoint", false],
    ["with an enabled webhook endpoint", true],
  ])("%s, the record waits for the other sends; publishedAt is still the answer's time", async (label, withEndpoint) => {
    if (withEndpoint) await h.services.db.insert(webhookEndpoints).values({ userId: h.userId, url: "https://hooks.example.com/x", secretCiphertext: "unused" });
    const { fast, slow, scheduler } = await twoTargets(withEndpoint ? "watched" : "quiet");
    expect((await h.delivery(fast)).status).toBe("publishing");
    await new Promise((r) => setTimeout(r, 200));
    expect((await h.delivery(fast)).status, label).toBe("publishing");
    h.clock.advance(5_000);
    release();
    await until("both are recorded", async () => (await h.delivery(fast)).status === "published" && (await h.delivery(slow)).status === "published");
    await scheduler.stop();
    const [a, b] = [await h.delivery(fast), await h.delivery(slow)];
    // Taken when each answer came, the held one 5 s (on the test's clock) after the first.
    expect(b.publishedAt!.getTime() - a.publishedAt!.getTime()).toBeGreaterThanOrEqual(5_000);
  });

  it("the wait is bounded: past recordWaitMs the answered target is recorded while the other is still sending", async () => {
    const { fast, slow, scheduler } = await twoTargets("bounded", 300);
    await until("the answered target is recorded", async () => (await h.delivery(fast)).status === "published");
    expect(held).toBe(true);
    expect((await h.delivery(slow)).status).toBe("publishing");
    release();
    await until("the held one is recorded", async () => (await h.delivery(slow)).status === "published");
    await scheduler.stop();
  });
});
