/**
 * The Upstash limiter (src/adapters/rate-limit/upstash.ts) against the machine's Redis at 127.0.0.1:6379,
 * reached through the test-only Upstash REST bridge with the real @upstash/redis.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "@upstash/redis";
import { UpstashRateLimiter } from "../../src/adapters/rate-limit/upstash";
import { startUpstashBridge, type UpstashBridge } from "../../dev/upstash-bridge";
import { clearOfMinuteBoundary, closedPort } from "./limits";

const run = crypto.randomUUID().slice(0, 8);
let bridge: UpstashBridge;

beforeAll(async () => {
  bridge = await startUpstashBridge();
});
afterAll(() => bridge.close());

describe("the Upstash REST bridge", () => {
  it("answers single commands, pipelines and transactions in base64 as @upstash/redis expects", async () => {
    const redis = new Redis({ url: bridge.url, token: bridge.token });
    const key = `bridge-test:${run}`;
    expect(await redis.set(key, "héllo ✓", { ex: 30 })).toBe("OK");
    expect(await redis.get(key)).toBe("héllo ✓");
    expect(await redis.incr(`${key}:n`)).toBe(1);

    const pipe = redis.pipeline();
    pipe.incr(`${key}:n`);
    pipe.get(key);
    pipe.expire(`${key}:n`, 30);
    expect(await pipe.exec()).toEqual([2, "héllo ✓", 1]);

    const tx = redis.multi();
    tx.incr(`${key}:n`);
    tx.hset(`${key}:h`, { a: "1", b: "two" });
    tx.hgetall(`${key}:h`);
    tx.del(`${key}:h`, `${key}:n`, key);
    expect(await tx.exec()).toEqual([3, 2, { a: 1, b: "two" }, 3]);
  });

  it("refuses a wrong token and reports Redis errors as Upstash does", async () => {
    const wrong = new Redis({ url: bridge.url, token: "not-the-token", retry: false });
    await expect(wrong.get("x")).rejects.toThrow(/Unauthorized/);
    const redis = new Redis({ url: bridge.url, token: bridge.token, retry: false });
    await redis.set(`bridge-test:${run}:s`, "text", { ex: 30 });
    await expect(redis.incr(`bridge-test:${run}:s`)).rejects.toThrow(/not an integer/);
  });

  it("runs the limiter's flagged Lua scripts, which plain Redis 7.0 would refuse", async () => {
    const redis = new Redis({ url: bridge.url, token: bridge.token, retry: false });
    const flagged = "#!lua flags=allow-key-locking\nreturn redis.call('INCR', KEYS[1])";
    const key = `bridge-test:${run}:lua`;
    expect(await redis.eval(flagged, [key], [])).toBe(1);
    // EVALSHA with the hash of the script as the client wrote it reaches the stored (stripped) script.
    const sha = await redis.scriptLoad(flagged);
    expect(await redis.evalsha(sha, [key], [])).toBe(2);
    await redis.del(key);
  });
});

describe("UpstashRateLimiter on real Redis", () => {
  it("enforces the limit per identifier and counts the budget down", async () => {
    await clearOfMinuteBoundary();
    const limiter = UpstashRateLimiter({ url: bridge.url, token: bridge.token });
    const bucket = `test-${run}-a`;
    const results = [];
    for (let i = 0; i < 6; i++) results.push(await limiter.limit(bucket, "user-1", 5));
    expect(results.map((r) => r.success)).toEqual([true, true, true, true, true, false]);
    expect(results.map((r) => r.remaining)).toEqual([4, 3, 2, 1, 0, 0]);
    expect(results.every((r) => r.limit === 5 && !r.unknown)).toBe(true);
    const reset = results[5]!.reset;
    expect(reset).toBeGreaterThan(Date.now());
    expect(reset).toBeLessThanOrEqual(Date.now() + 60_000);
  });

  it("keeps identifiers and buckets independent, and shares a bucket across limiter instances", async () => {
    await clearOfMinuteBoundary();
    const one = UpstashRateLimiter({ url: bridge.url, token: bridge.token });
    const two = UpstashRateLimiter({ url: bridge.url, token: bridge.token });
    const bucket = `test-${run}-b`;
    for (let i = 0; i < 3; i++) expect((await one.limit(bucket, "alice", 3)).success).toBe(true);
    expect((await one.limit(bucket, "alice", 3)).success).toBe(false);
    // Another process (a second Worker isolate) sees the same count in Redis.
    expect((await two.limit(bucket, "alice", 3)).success).toBe(false);
    expect((await one.limit(bucket, "bob", 3)).success).toBe(true);
    expect((await one.limit(`test-${run}-c`, "alice", 3)).success).toBe(true);
  });

  it("takes a busy user's budget in leases: fewer Redis calls than requests, never more admitted than the limit", async () => {
    await clearOfMinuteBoundary(15_000);
    const limiter = UpstashRateLimiter({ url: bridge.url, token: bridge.token });
    const bucket = `test-${run}-lease`;
    const before = bridge.requests;
    const results = [];
    for (let i = 0; i < 101; i++) results.push(await limiter.limit(bucket, "busy", 100));
    expect(results.filter((r) => r.success)).toHaveLength(100);
    expect(results[100]!.success).toBe(false);
    expect(results.slice(0, 100).map((r) => r.remaining)).toEqual(Array.from({ length: 100 }, (_, i) => 99 - i));
    expect(bridge.requests - before).toBeLessThan(50);
    // A refusal is remembered: asking again at once costs no Redis call.
    const refused = bridge.requests;
    expect((await limiter.limit(bucket, "busy", 100)).success).toBe(false);
    expect(bridge.requests).toBe(refused);
  });

  it("admits no more than the limit across two limiters taking turns, and gives back what a lease left unused", async () => {
    await clearOfMinuteBoundary(15_000);
    const bucket = `test-${run}-lease2`;
    const [one, two] = [0, 1].map(() => UpstashRateLimiter({ url: bridge.url, token: bridge.token }));
    let admitted = 0;
    for (let i = 0; i < 30; i++) if ((await one!.limit(bucket, "shared", 40)).success) admitted++;
    // `one` may hold requests of its last lease; once the lease has expired its next call gives them back.
    await new Promise((r) => setTimeout(r, 1100));
    if ((await one!.limit(bucket, "shared", 40)).success) admitted++;
    for (let i = 0; i < 30; i++) if ((await (i % 2 ? one : two)!.limit(bucket, "shared", 40)).success) admitted++;
    await new Promise((r) => setTimeout(r, 1100));
    if ((await one!.limit(bucket, "shared", 40)).success) admitted++;
    for (let i = 0; i < 20; i++) if ((await two!.limit(bucket, "shared", 40)).success) admitted++;
    expect(admitted).toBe(40);
  });

  it("fails open when Redis is down behind the bridge", async () => {
    const broken = await startUpstashBridge({ redisPort: await closedPort() });
    try {
      const limiter = UpstashRateLimiter({ url: broken.url, token: broken.token });
      const r = await limiter.limit(`test-${run}-d`, "carol", 1);
      expect(r).toMatchObject({ success: true, unknown: true });
      expect(broken.requests).toBeGreaterThan(0);
    } finally {
      await broken.close();
    }
  });

  it("fails open when the REST endpoint itself is unreachable", async () => {
    const limiter = UpstashRateLimiter({ url: `http://127.0.0.1:${await closedPort()}`, token: "t" });
    expect(await limiter.limit(`test-${run}-e`, "dave", 1)).toMatchObject({ success: true, unknown: true });
  });
});
