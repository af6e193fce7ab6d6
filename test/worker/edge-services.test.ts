/**
 * buildEdgeServices / parseEdgeConfig in Node (the Worker test runs them in workerd): what the edge
 * requires, which adapters it picks, and that close() waits for deferred work.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config";
import { buildEdgeServices, parseEdgeConfig } from "../../src/edge-services";
import { generateTokenKey } from "../../src/adapters/token-cipher";

const base = {
  DATABASE_URL: "postgres://user:secret-password@db.example.test/app",
  TOKEN_ENCRYPTION_KEY: generateTokenKey(),
  S3_ENDPOINT: "https://acc.r2.example.test",
  S3_REGION: "auto",
  S3_BUCKET: "media",
  S3_ACCESS_KEY_ID: "AKID",
  S3_SECRET_ACCESS_KEY: "s3-secret",
  S3_PUBLIC_BASE_URL: "https://media.example.test/",
  LOG_LEVEL: "silent",
};

const ctx = () => {
  const waited: Array<Promise<unknown>> = [];
  return { waited, waitUntil: (p: Promise<unknown>) => void waited.push(p) };
};

describe("parseEdgeConfig", () => {
  it("names everything the edge cannot do without", () => {
    const err = (() => {
      try {
        parseEdgeConfig({ LOG_LEVEL: "info" });
      } catch (e) {
        return e;
      }
    })() as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    const text = err.problems.join("\n");
    for (const name of ["DATABASE_URL", "TOKEN_ENCRYPTION_KEY", "S3_ENDPOINT", "S3_BUCKET", "S3_PUBLIC_BASE_URL"]) expect(text).toContain(name);
  });

  it("reports the edge requirements together with ordinary config errors", () => {
    const { DATABASE_URL: _omit, ...rest } = base;
    expect(() => parseEdgeConfig({ ...rest, RATE_LIMIT_QR: "0" })).toThrow(/RATE_LIMIT_QR[\s\S]*DATABASE_URL/);
  });

  it("accepts a complete edge configuration and ignores non-string bindings", () => {
    const config = parseEdgeConfig({ ...base, SOME_KV: { get() {} } });
    expect(config.databaseUrl).toBe(base.DATABASE_URL);
    expect(config.s3?.publicBaseUrl).toBe("https://media.example.test");
  });
});

describe("buildEdgeServices", () => {
  it("wires the portable adapters", () => {
    const services = buildEdgeServices(base, ctx());
    expect(services.queue.kind).toBe("poller");
    expect(services.storage.urlFor("media/a b.jpg")).toBe("https://media.example.test/media/a%20b.jpg");
    expect(services.config.rateLimits.socialWrite).toBe(60);
  });

  it("keeps one rate limiter per isolate and configuration (the memory twin must count across requests)", async () => {
    const a = buildEdgeServices(base, ctx());
    const b = buildEdgeServices(base, ctx());
    expect(a.rateLimiter).toBe(b.rateLimiter);
    const id = crypto.randomUUID();
    await a.rateLimiter.limit("edge-test", id, 1);
    expect((await b.rateLimiter.limit("edge-test", id, 1)).success).toBe(false);

    const upstash = buildEdgeServices({ ...base, UPSTASH_REDIS_REST_URL: "https://redis.example.test", UPSTASH_REDIS_REST_TOKEN: "t" }, ctx());
    expect(upstash.rateLimiter).not.toBe(a.rateLimiter);
  });

  it("defers through ctx.waitUntil, and close() waits for deferred work before ending the pool", async () => {
    const c = ctx();
    const services = buildEdgeServices(base, c);
    const order: string[] = [];
    services.defer(new Promise((r) => setTimeout(r, 50)).then(() => order.push("deferred")));
    services.defer(Promise.reject(new Error("logged, not thrown")));
    expect(c.waited).toHaveLength(2);
    await services.close().then(() => order.push("closed"));
    expect(order).toEqual(["deferred", "closed"]);
  });

  it("refuses a config object that lacks what the edge needs", () => {
    expect(() => buildEdgeServices({}, ctx(), { config: { ...parseEdgeConfig(base), databaseUrl: undefined } })).toThrow(/DATABASE_URL/);
  });
});
