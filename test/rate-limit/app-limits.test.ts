/**
 * Rate limits through the whole app: per user, shared across the user's keys, 429 RATE_LIMITED with
 * Retry-After once over, other users untouched. The same table runs on Upstash (real Redis behind the REST
 * bridge) and on the in-memory twin. Any POST under /api/v1/social counts as a write: the limiter runs in
 * the router's middleware after requireAuth, before any handler (an unknown route then answers 404).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness";
import { startUpstashBridge, type UpstashBridge } from "../../dev/upstash-bridge";
import { clearOfMinuteBoundary, closedPort } from "./limits";

interface Variant {
  name: string;
  env(): Promise<Record<string, string>>;
}

let bridge: UpstashBridge;
beforeAll(async () => {
  bridge = await startUpstashBridge();
});
afterAll(() => bridge.close());

const variants: Variant[] = [
  { name: "Upstash (real Redis)", env: async () => ({ UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token }) },
  { name: "memory", env: async () => ({}) },
];

describe.each(variants)("social write limit on $name", (variant) => {
  let h: TestApp;
  beforeAll(async () => {
    h = await createTestApp({ env: await variant.env() });
  });
  afterAll(() => h.close());

  const write = (key: string) => h.app.request("/api/v1/social/anything", { method: "POST", headers: h.json(key), body: "{}" });

  it("answers the 61st write in a minute across two keys of one user with 429 and Retry-After", async () => {
    const { userId, apiKey } = await h.createUser();
    const second = await h.createKey(userId, "second");
    const other = await h.createUser();
    await clearOfMinuteBoundary();

    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) statuses.push((await write(i % 2 === 0 ? apiKey : second)).status);
    // No route answers POST /anything: each write got past auth and the limiter, then 404.
    expect(new Set(statuses)).toEqual(new Set([404]));

    const over = await write(second);
    expect(over.status).toBe(429);
    expect(over.headers.get("RateLimit-Limit")).toBe("60");
    expect(over.headers.get("RateLimit-Remaining")).toBe("0");
    const retryAfter = Number(over.headers.get("Retry-After"));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    const body = (await over.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("RATE_LIMITED");
    expect(body.error.message).toMatch(/60 requests per minute/);
    expect((await write(apiKey)).status).toBe(429);

    // Another user has a budget of their own; the same user's reads have a separate one.
    const otherWrite = await write(other.apiKey);
    expect(otherWrite.status).toBe(404);
    const read = await h.app.request("/api/v1/social/accounts", { headers: h.auth(apiKey) });
    expect(read.status).toBe(200);
    expect(read.headers.get("RateLimit-Limit")).toBe("300");
  });
});

describe("Upstash limiter outage", () => {
  it("still serves requests when Redis is down (fail open)", async () => {
    const broken = await startUpstashBridge({ redisPort: await closedPort() });
    const logLines: string[] = [];
    const h = await createTestApp({ env: { UPSTASH_REDIS_REST_URL: broken.url, UPSTASH_REDIS_REST_TOKEN: broken.token }, logLines });
    try {
      const { apiKey } = await h.createUser();
      const res = await h.app.request("/api/v1/social/accounts", { headers: h.auth(apiKey) });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ data: { connectionStatus: "connected", accounts: [] } });
      expect(broken.requests).toBeGreaterThan(0);
      expect(logLines.some((l) => l.includes("rate limiter unavailable"))).toBe(true);
    } finally {
      await h.close();
      await broken.close();
    }
  });
});
