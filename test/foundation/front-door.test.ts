/**
 * The front door (`GET /`) and `/health` with each dependency's state, through HTTP on the embedded app.
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness";

let h: TestApp;
beforeAll(async () => {
  h = await createTestApp();
});
afterAll(() => h.close());

describe("GET /", () => {
  it("names the service and its version, and every link it gives answers", async () => {
    const res = await h.app.request("/");
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { name: string; version: string; links: Record<string, string> } };
    const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as { name: string; version: string };
    expect([data.name, data.version]).toEqual([pkg.name, pkg.version]);
    for (const [name, link] of Object.entries(data.links)) {
      if (link.includes("{")) continue; // a template, not a page
      const answer = await h.app.request(link);
      expect([200, 302, 303], `${name}: ${link}`).toContain(answer.status);
    }
  });
});

describe("GET /health", () => {
  it("reports each dependency's kind and state, and nothing of where it is", async () => {
    const res = await h.app.request("/health");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { status: string; checks: Record<string, { kind: string; status: string }> } };
    expect(body.data.status).toBe("ok");
    expect(Object.fromEntries(Object.entries(body.data.checks).map(([k, v]) => [k, `${v.kind} ${v.status}`]))).toEqual({
      database: "pglite ok",
      kv: "memory ok",
      queue: "poller ok",
      storage: "local ok",
    });
    expect(JSON.stringify(body)).not.toMatch(/https?:|postgres|127\.0\.0\.1|sk_/);
  });

  it("answers 503 'degraded' naming the dependency that fails, without its error text", async () => {
    const broken = await createTestApp({
      overrides: {
        storage: {
          get: async () => {
            throw new Error("connect ECONNREFUSED 10.1.2.3:9000 (secret-bucket)");
          },
          put: async () => "",
          delete: async () => {},
          urlFor: () => "",
        },
      },
    });
    try {
      const res = await broken.app.request("/health");
      expect(res.status).toBe(503);
      const text = await res.text();
      expect(JSON.parse(text).data).toMatchObject({
        status: "degraded",
        checks: { storage: { status: "error", error: "unreachable" }, database: { status: "ok" } },
      });
      expect(text).not.toMatch(/ECONNREFUSED|10\.1\.2\.3|secret-bucket/);
    } finally {
      await broken.close();
    }
  });
});
