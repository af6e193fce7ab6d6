/**
 * The heavy-work limits (issue 14) through HTTP: one user's image jobs run at most HEAVY_JOBS_PER_USER at
 * a time with at most HEAVY_QUEUE_PER_USER waiting, the rest answered 429 with Retry-After and a message
 * that says why; another user's job at the same moment still goes through. Media uploads stand for every
 * heavy route (they share one limiter); the pool here has one thread so the order is deterministic.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness";
import { makePhotoJpeg } from "../helpers/images";
import { LimitedHeavyWork, type HeavyRunner } from "../../src/heavy";

let h: TestApp;
let photo: string;

beforeAll(async () => {
  h = await createTestApp({ env: { HEAVY_THREADS: "1", HEAVY_JOBS_PER_USER: "1", HEAVY_QUEUE_PER_USER: "1", RATE_LIMIT_SOCIAL_WRITE: "1000" } });
  photo = (await makePhotoJpeg(2400, 1800)).toString("base64");
}, 60_000);
afterAll(() => h.close());

const upload = (apiKey: string) =>
  h.app.request("/api/v1/social/media", { method: "POST", headers: h.json(apiKey), body: JSON.stringify({ base64: photo, mimeType: "image/jpeg" }) });

describe("heavy-work limits", () => {
  it("one user's uploads beyond one running and one waiting are refused with 429 and Retry-After; another user's goes through", async () => {
    const alice = await h.createUser();
    const bob = await h.createUser();
    expect((await upload(alice.apiKey)).status).toBe(201); // the thread is up

    const [aliceAnswers, bobAnswer] = await Promise.all([Promise.all(Array.from({ length: 4 }, () => upload(alice.apiKey))), upload(bob.apiKey)]);
    expect(bobAnswer.status).toBe(201);
    const statuses = aliceAnswers.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 429, 429]);
    for (const res of aliceAnswers.filter((r) => r.status === 429)) {
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("RATE_LIMITED");
      expect(body.error.message).toMatch(/Too many image jobs at once for this key: 1 running and 1 waiting; retry in \d+ s\./);
    }
    // Nothing is left running or waiting once the answers are in.
    expect(h.services.heavy.load()).toEqual({ running: 0, waiting: 0 });
  }, 60_000);
});

describe("the limiter's lease (the Worker's guard against a cancelled request holding its slot)", () => {
  it("a slot held past leaseMs is taken back when the next job asks, and the jobs waiting run", async () => {
    let now = 1_000_000;
    const realNow = Date.now;
    Date.now = () => now;
    try {
      let calls = 0;
      // The first job's request went away mid-job: it never finishes and never gives its slot back.
      const runner = (async () => (++calls === 1 ? new Promise(() => {}) : "done")) as unknown as HeavyRunner;
      const heavy = LimitedHeavyWork({ slots: 1, perUser: 1, queuePerUser: 4, queue: 4, leaseMs: 120_000 }, runner);
      void heavy.run("cancelled", "qrDecode", { bytes: new Uint8Array() });
      now += 60_000;
      const second = heavy.run("second", "qrDecode", { bytes: new Uint8Array() });
      await new Promise((r) => setTimeout(r, 10));
      expect(heavy.load()).toEqual({ running: 1, waiting: 1 }); // within the lease it waits
      now += 61_000;
      const third = heavy.run("third", "qrDecode", { bytes: new Uint8Array() });
      expect(await second).toBe("done");
      expect(await third).toBe("done");
      expect(heavy.load()).toEqual({ running: 0, waiting: 0 });
    } finally {
      Date.now = realNow;
    }
  });
});
