/**
 * The embedded scheduler loop: picks up due targets within about a second, never runs more publishes at once
 * than its concurrency, and `stop()` waits for in-flight publishes so none is left claimed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGraphFake, type GraphFake } from "../../helpers/graph-fake";
import { startScheduler } from "../../../functions/node/scheduler";
import { engineApp } from "./fixtures";

let fake: GraphFake;
let h: Awaited<ReturnType<typeof engineApp>>;
let page: string;
let active = 0;
let peak = 0;
let n = 0;

beforeAll(async () => {
  fake = await startGraphFake();
  fake.on("POST", /\/feed$/, async () => {
    peak = Math.max(peak, ++active);
    await new Promise((r) => setTimeout(r, 400));
    active--;
    return { status: 200, body: { id: `1000_${++n}` } };
  });
  h = await engineApp(fake.baseUrl);
  page = await h.account("pageplatform", "1000");
});
afterAll(async () => {
  await h.close();
  await fake.close();
});

describe("scheduler", () => {
  it("publishes due targets with bounded concurrency, and stop() waits for the ones in flight", async () => {
    const ids = (await Promise.all(Array.from({ length: 6 }, () => h.post([page])))).map((p) => p.deliveryIds[0]!);
    const scheduler = startScheduler(h.services, { publish: true, concurrency: 2, pollMs: 100 });
    const deadline = Date.now() + 10_000;
    while ((await Promise.all(ids.map(h.delivery))).some((d) => d.status !== "published") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect((await Promise.all(ids.map(h.delivery))).map((d) => d.status)).toEqual(Array(6).fill("published"));
    expect(peak).toBe(2);

    // A publish in flight when stop() is called finishes and is recorded before stop() resolves.
    const late = (await h.post([page])).deliveryIds[0]!;
    while (active === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await scheduler.stop();
    expect(await h.delivery(late)).toMatchObject({ status: "published", lockedUntil: null });

    // Stopped: nothing more is claimed.
    const after = (await h.post([page])).deliveryIds[0]!;
    await new Promise((r) => setTimeout(r, 400));
    expect(await h.delivery(after)).toMatchObject({ status: "pending", attempts: 0 });
  });
});
