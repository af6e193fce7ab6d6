/**
 * The API's one OpenAPI 3.1 document (GET /openapi.json) and its reference page (GET /docs), through HTTP:
 * valid OpenAPI 3.1 (@apidevtools/swagger-parser), public, the configured base URL as its server, the former
 * per-area document paths answering 301 to it, and a script-free page listing every operation.
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness";

let h: TestApp;
let doc: any;

beforeAll(async () => {
  h = await createTestApp({ env: { PUBLIC_BASE_URL: "https://api.shop.example", RATE_LIMIT_QR: "77" } });
  const res = await h.app.request("/openapi.json");
  expect(res.status).toBe(200);
  doc = await res.json();
});
afterAll(async () => h?.close());

function operations(): Array<{ method: string; path: string; op: any }> {
  return Object.entries<any>(doc.paths).flatMap(([path, item]) =>
    ["get", "post", "put", "patch", "delete"].filter((m) => item[m]).map((method) => ({ method, path, op: item[method] })),
  );
}

describe("GET /openapi.json", () => {
  it("validates as OpenAPI 3.1, and a broken copy does not", async () => {
    expect(doc.openapi).toBe("3.1.0");
    const api = (await SwaggerParser.validate(structuredClone(doc))) as any;
    expect(api.info.title).toBe("Shopkit API");
    const broken = structuredClone(doc);
    broken.paths["/api/qr-code/decode"].post.responses["200"] = { content: {} };
    await expect(SwaggerParser.validate(broken)).rejects.toThrow();
  });

  it("every pattern is a compilable ECMA-262 source without regex flags left in it (a flagged zod regex leaves its /u)", () => {
    const patterns: string[] = [];
    const walk = (v: unknown) => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) k === "pattern" && typeof x === "string" ? patterns.push(x) : walk(x);
    };
    walk(doc);
    expect(patterns.length).toBeGreaterThan(0);
    for (const p of patterns) {
      expect(p, p).not.toMatch(/\/[dgimsuvy]*$/);
      expect(() => new RegExp(p, "u"), p).not.toThrow();
    }
  });

  it("holds areas A, B and C and the service routes, with unique operation ids, each tagged", () => {
    const prefixes = new Set(Object.keys(doc.paths).map((p) => p.split("/").slice(0, 3).join("/")));
    expect([...prefixes].sort()).toEqual(["/", "/api/image", "/api/qr-code", "/api/v1", "/health"]);
    const ids = operations().map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const tags = new Set(doc.tags.map((t: { name: string }) => t.name));
    for (const { method, path, op } of operations()) {
      expect(op.tags?.length, `${method} ${path}`).toBe(1);
      expect(tags, `${method} ${path}`).toContain(op.tags[0]);
    }
  });

  it("writes Hono's pattern parameters as plain {name}", () => {
    const paths = Object.keys(doc.paths);
    expect(paths).toContain("/api/qr-code/generate/{apiKey}/{text}");
    expect(paths).toContain("/api/image/demo/{file}");
    for (const path of paths) expect(path, path).not.toMatch(/\{[^}]*\{|:/);
  });

  it("has this deployment's base URL as its server and its rate limits in the description", () => {
    expect(doc.servers).toEqual([{ url: "https://api.shop.example" }]);
    expect(doc.info.description).toContain("QR 77");
  });

  it("documents the QR path key as a secret, with a placeholder example that is no key", () => {
    for (const path of ["/api/qr-code/generate/{apiKey}/{text}", "/api/qr-code/generate-base64/{apiKey}/{text}"]) {
      const key = doc.paths[path].get.parameters.find((p: any) => p.name === "apiKey");
      expect(key).toMatchObject({ in: "path", required: true, schema: { type: "string", format: "password" } });
      expect(key.description).toMatch(/secret/i);
      expect(key.example).toBe("YOUR_API_KEY");
    }
    expect(JSON.stringify(doc)).not.toMatch(/sk_[A-Za-z0-9]{8,}/);
    expect(doc.paths["/api/qr-code/generate/{apiKey}/{text}"].get.security).toEqual([]);
    expect(doc.paths["/api/qr-code/generate-base64/{apiKey}/{text}"].get.security).toEqual([{ bearerAuth: [] }, {}]);
  });

  it("is public: no credentials needed, bad ones ignored, not rate limited", async () => {
    for (const headers of [{}, { Authorization: "Bearer nonsense" }] as Array<Record<string, string>>) {
      const res = await h.app.request("/openapi.json", { headers });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/application\/json/);
      expect(res.headers.get("ratelimit-limit")).toBeNull();
    }
  });

  it("the former per-area documents answer 301 to /openapi.json and /docs", async () => {
    const moved: Array<[string, string]> = [
      ["/api/v1/social/openapi.json", "/openapi.json"],
      ["/api/v1/social/docs", "/docs"],
      ["/api/image/openapi.json", "/openapi.json"],
    ];
    for (const [old, now] of moved) {
      const res = await h.app.request(old);
      expect([res.status, res.headers.get("location")], old).toEqual([301, now]);
      expect((await h.app.request(now)).status, now).toBe(200);
    }
  });

  it("is linked from the front door", async () => {
    const { data } = (await (await h.app.request("/")).json()) as { data: { links: Record<string, string> } };
    expect(data.links).toMatchObject({ reference: "/docs", openApi: "/openapi.json" });
    expect(Object.values(data.links).filter((l) => /openapi|docs/.test(l))).toEqual(["/docs", "/openapi.json"]);
  });
});

describe("GET /docs", () => {
  it("is a script-free HTML page with every operation, its examples, and every error code", async () => {
    const res = await h.app.request("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
    const page = await res.text();
    expect(page).toMatch(/^<!doctype html>/i);
    expect(page).not.toMatch(/<script/i);
    expect(page).not.toMatch(/(src|href)="https?:\/\//i);
    expect(page).toContain('href="openapi.json"');
    for (const { path, op } of operations()) {
      expect(page).toContain(`id="${op.operationId}"`);
      expect(page).toContain(`<code>${path}</code>`);
    }
    for (const tag of ["QR codes", "Product photography", "Accounts", "Media", "Posts", "Service"]) expect(page).toContain(`<h2>${tag}</h2>`);
    expect(page).toContain("YOUR_API_KEY");
    expect(page).toContain("Request example: A URL");
    expect(page).toContain("<code>QR_NOT_SCANNABLE</code></td><td>422</td>");
  });

  it("with a slash added, sends the reader to the page (its links are relative to /docs)", async () => {
    const res = await h.app.request("/docs/");
    expect([res.status, res.headers.get("location")]).toEqual([301, "/docs"]);
  });
});
