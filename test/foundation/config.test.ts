import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config";
import { embeddedDefaults } from "../../functions/node/embedded";

function problems(env: Record<string, string>): string {
  try {
    parseConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).message;
  }
  throw new Error("expected a ConfigError");
}

describe("config", () => {
  it("has embedded defaults for everything", () => {
    const c = parseConfig({});
    expect(c.port).toBe(8787);
    expect(c.host).toBe("127.0.0.1");
    expect(c.publicBaseUrl).toBe("http://127.0.0.1:8787");
    expect(c.dataDir).toBe(".data");
    expect(c.databaseUrl).toBeUndefined();
    expect(c.upstash).toBeUndefined();
    expect(c.qstash).toBeUndefined();
    expect(c.s3).toBeUndefined();
    expect(c.graph.baseUrl).toBeUndefined();
    expect(c.graph.sandbox).toBe(false);
    expect(c.graph.dialogBaseUrl).toBe("https://www.facebook.com");
    expect(c.rateLimits).toEqual({ qr: 120, photo: 20, photoRead: 300, socialRead: 300, socialWrite: 60 });
    expect(c.retentionDays).toBe(90);
  });

  it("reads values and ignores unknown variables", () => {
    const c = parseConfig({ PORT: "9000", HOST: "0.0.0.0", RATE_LIMIT_SOCIAL_WRITE: "5", PATH: "/usr/bin", PUBLIC_BASE_URL: "https://api.example.com/" });
    expect(c.port).toBe(9000);
    expect(c.rateLimits.socialWrite).toBe(5);
    expect(c.publicBaseUrl).toBe("https://api.example.com");
  });

  it("treats empty strings as unset", () => {
    expect(parseConfig({ DATABASE_URL: "", PORT: " " }).databaseUrl).toBeUndefined();
  });

  it.each([
    [{ PORT: "eighty" }, "PORT"],
    [{ PORT: "70000" }, "PORT"],
    [{ RATE_LIMIT_QR: "-1" }, "RATE_LIMIT_QR"],
    [{ RETENTION_DAYS: "1.5" }, "RETENTION_DAYS"],
    [{ DATABASE_URL: "mysql://localhost/db" }, "DATABASE_URL"],
    [{ PUBLIC_BASE_URL: "not a url" }, "PUBLIC_BASE_URL"],
    [{ TOKEN_ENCRYPTION_KEY: "c2hvcnQ=" }, "TOKEN_ENCRYPTION_KEY"],
    [{ GRAPH_API_VERSION: "23" }, "GRAPH_API_VERSION"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    [{ PLATFORM_SANDBOX: "yes" }, "PLATFORM_SANDBOX"],
    [{ PLATFORM_SANDBOX: "true" }, "PLATFORM_SANDBOX"],
  ])("refuses %j naming %s", (env, name) => {
    expect(problems(env)).toContain(name);
  });

  it("requires the whole group when one variable of it is set", () => {
    const message = problems({ QSTASH_URL: "https://qstash.example.com", QSTASH_TOKEN: "t" });
    expect(message).toContain("QSTASH_CURRENT_SIGNING_KEY");
    expect(message).toContain("QSTASH_NEXT_SIGNING_KEY");
    expect(problems({ UPSTASH_REDIS_REST_URL: "https://x.upstash.io" })).toContain("UPSTASH_REDIS_REST_TOKEN");
    expect(problems({ AUTH_JWKS_URL: "https://idp.example.com/jwks" })).toContain("AUTH_ISSUER");
  });

  it("turns the platform sandbox on only when PLATFORM_SANDBOX says on, and never with the real platforms", () => {
    expect(parseConfig({ PLATFORM_SANDBOX: "on" }).graph).toMatchObject({ sandbox: true, dialogBaseUrl: undefined });
    expect(parseConfig({ PLATFORM_SANDBOX: "off" }).graph.sandbox).toBe(false);
    expect(parseConfig({ PLATFORM_SANDBOX: "" }).graph.sandbox).toBe(false);
    const message = problems({ PLATFORM_SANDBOX: "on", GRAPH_API_BASE: "https://graph.example.com", META_APP_ID: "a", META_APP_SECRET: "b" });
    expect(message).toContain("PLATFORM_SANDBOX");
    expect(message).toContain("GRAPH_API_BASE");
  });

  it("npm start turns the sandbox on for the embedded database only, and never over an explicit setting", () => {
    const sandbox = (env: Record<string, string>) => parseConfig(embeddedDefaults(env)).graph.sandbox;
    expect(sandbox({})).toBe(true);
    expect(sandbox({ DATABASE_URL: "postgres://db.example.com/app" })).toBe(false);
    expect(sandbox({ GRAPH_API_BASE: "https://graph.example.com", META_APP_ID: "a", META_APP_SECRET: "b" })).toBe(false);
    expect(sandbox({ PLATFORM_SANDBOX: "off" })).toBe(false);
    expect(sandbox({ DATABASE_URL: "postgres://127.0.0.1/dev", PLATFORM_SANDBOX: "on" })).toBe(true);
  });

  it("never echoes a secret value in its message", () => {
    const message = problems({ TOKEN_ENCRYPTION_KEY: "super-secret-value" });
    expect(message).not.toContain("super-secret-value");
  });
});
