/**
 * Area C in the API's one OpenAPI 3.1 document (/openapi.json; the whole document is checked in
 * test/foundation/api-document.test.ts) and on the reference page (/docs): complete (every area C route of
 * the app is in it), generated from the same schemas that validate requests. The area's former document
 * paths answer 301 to the new ones.
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostCreateSchema } from "../../../src/social/schemas";
import { createSocialTestApp, SOCIAL, type SocialTestApp } from "../../helpers/social";

let h: SocialTestApp;
let doc: any;

beforeAll(async () => {
  h = await createSocialTestApp();
  const res = await h.app.request("/openapi.json");
  expect(res.status).toBe(200);
  const whole = await res.json();
  // Area C's part: its paths, with every component the document has.
  doc = { ...whole, paths: Object.fromEntries(Object.entries<any>(whole.paths).filter(([path]) => path.startsWith(SOCIAL))) };
});
afterAll(async () => h?.close());

/** The app's area C operations as "METHOD /path/{param}", from Hono's own route table. */
function appOperations(): string[] {
  const seen = new Set<string>();
  for (const r of h.app.routes) {
    if (!r.path.startsWith(SOCIAL) || r.method === "ALL") continue;
    if (r.path === `${SOCIAL}/openapi.json` || r.path === `${SOCIAL}/docs`) continue;
    seen.add(`${r.method} ${r.path.replace(/:([^/]+)/g, "{$1}")}`);
  }
  return [...seen].sort();
}

function documentOperations(): string[] {
  const ops: string[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of ["get", "post", "put", "patch", "delete"]) if (item[method]) ops.push(`${method.toUpperCase()} ${path}`);
  }
  return ops.sort();
}

describe("area C in GET /openapi.json", () => {
  it("validates as OpenAPI 3.1", async () => {
    expect(doc.openapi).toBe("3.1.0");
    const api = (await SwaggerParser.validate(structuredClone(doc))) as any;
    expect(api.info.title).toBe("Shopkit API");
    // The validator is not vacuous: a broken copy is refused.
    const broken = structuredClone(doc);
    broken.paths[`${SOCIAL}/posts`].post.responses["202"] = { content: {} };
    await expect(SwaggerParser.validate(broken)).rejects.toThrow();
  });

  it("holds every area C route of the app, and nothing else", () => {
    const ops = appOperations();
    expect(ops).toEqual([
      "DELETE /api/v1/social/posts/{id}",
      "GET /api/v1/social/accounts",
      "GET /api/v1/social/media/{id}",
      "GET /api/v1/social/posts",
      "GET /api/v1/social/posts/{id}",
      "POST /api/v1/social/media",
      "POST /api/v1/social/posts",
    ]);
    expect(documentOperations()).toEqual(ops);
  });

  it("names each operation, requires the bearer scheme, and shares the error responses", () => {
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
    const ids = new Set<string>();
    for (const item of Object.values<any>(doc.paths)) {
      for (const op of Object.values<any>(item)) {
        expect(op.operationId).toMatch(/^[a-z][A-Za-z]+$/);
        ids.add(op.operationId);
        expect(op.security).toEqual([{ bearerAuth: [] }]);
        for (const status of ["401", "429", "500"]) expect(op.responses[status].$ref).toMatch(/^#\/components\/responses\//);
      }
    }
    expect(ids.size).toBe(7);
    for (const name of [
      "BadRequest",
      "Unauthorized",
      "NotFound",
      "Conflict",
      "Gone",
      "PayloadTooLarge",
      "UnsupportedMediaType",
      "ValidationFailed",
      "RateLimited",
      "Internal",
    ]) {
      expect(doc.components.responses[name].content["application/json"].schema.$ref).toBe("#/components/schemas/Error");
    }
    expect(doc.components.responses.Conflict.headers["Retry-After"]).toBeDefined();
  });

  it("documents POST /posts as the validators enforce it", () => {
    const op = doc.paths[`${SOCIAL}/posts`].post;
    expect(op.parameters).toContainEqual(expect.objectContaining({ name: "Idempotency-Key", in: "header", required: true }));
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["200", "201", "202", "400", "404", "409", "410", "413", "415", "422"]));
    expect(op.responses["200"].headers["Idempotency-Replayed"]).toBeDefined();
    const schema = doc.components.schemas.PostCreate;
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(["accountIds"]);
    expect(Object.keys(schema.properties).sort()).toEqual(Object.keys(PostCreateSchema.shape).sort());
    expect(schema.properties.images.maxItems).toBe(10);
    expect(doc.components.schemas.ImageItem.anyOf).toHaveLength(5); // a string, {url}, {base64}, {mediaId}, {galleryId}
    const list = doc.paths[`${SOCIAL}/posts`].get.parameters.map((p: any) => p.name).sort();
    expect(list).toEqual(["fromDate", "limit", "offset", "platform", "status", "toDate"]);
  });

  it("the former /api/v1/social/openapi.json and /docs answer 301 to /openapi.json and /docs, publicly and not rate limited", async () => {
    for (const headers of [{}, { Authorization: "Bearer nonsense" }] as Array<Record<string, string>>) {
      for (const [old, now] of [
        ["/openapi.json", "/openapi.json"],
        ["/docs", "/docs"],
      ] as const) {
        const res = await h.request(old, { headers });
        expect(res.status, old).toBe(301);
        expect(res.headers.get("location"), old).toBe(now);
        expect(res.headers.get("ratelimit-limit")).toBeNull();
      }
    }
  });
});

describe("area C on GET /docs", () => {
  // The page as a whole (HTML, no scripts, no outside links): test/foundation/api-document.test.ts.
  it("lists every operation of the document with its summary, the Idempotency-Key and area C's error codes", async () => {
    const page = await (await h.app.request("/docs")).text();
    for (const item of Object.values<any>(doc.paths)) {
      for (const op of Object.values<any>(item)) {
        expect(page).toContain(`id="${op.operationId}"`);
        expect(page).toContain(escapeHtml(op.summary));
      }
    }
    for (const path of Object.keys(doc.paths)) expect(page).toContain(`<code>${path}</code>`);
    expect(page).toContain("Idempotency-Key");
    expect(page).toContain("POST_NOT_CANCELLABLE");
  });
});

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}
