/**
 * The API document in workerd: the Worker as deployed (dev/edge-worker.ts builds it with wrangler and runs
 * it in Miniflare against this machine's stand-ins) serves /openapi.json, /docs and the 301s of the former
 * document paths, and area A answers through its createRoutes, as the Node server does.
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DbHandle } from "../../db/client";
import { openNodeDb } from "../../db/node";
import { startLocalEdge, type LocalEdge } from "../../dev/edge-worker";
import { checkDispatchConformance } from "../helpers/conformance";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { createApiKey, createUser } from "../../src/http/api-keys";
import { createTestApp } from "../helpers/harness";

const ORIGIN = "http://api.test";
let edge: LocalEdge;
let scratch: ScratchDatabase;
let handle: DbHandle;
let apiKey: string;

beforeAll(async () => {
  scratch = await createScratchDatabase();
  handle = await openNodeDb({ url: scratch.url, poolSize: 2 });
  const { userId } = await createUser(handle.db, `workerd-doc-${crypto.randomUUID().slice(0, 8)}@example.test`);
  ({ key: apiKey } = await createApiKey(handle.db, userId));
  edge = await startLocalEdge({ databaseUrl: scratch.url, vars: { LOG_LEVEL: "warn", PUBLIC_BASE_URL: "https://api.example.test" } });
  checkDispatchConformance(edge.mf); // answers of documented operations are checked against /openapi.json
}, 180_000);

afterAll(async () => {
  for (const step of [() => edge?.dispose(), () => handle?.close(), () => scratch?.drop()])
    await Promise.resolve()
      .then(step)
      .catch(() => {});
});

const fetchEdge = (path: string, init?: RequestInit) => edge.mf.dispatchFetch(`${ORIGIN}${path}`, { redirect: "manual", ...init } as never);

describe("the API document in workerd", () => {
  it("serves /openapi.json: valid OpenAPI 3.1, every area, this deployment's base URL", async () => {
    const res = await fetchEdge("/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { servers: unknown; paths: Record<string, unknown> };
    await SwaggerParser.validate(structuredClone(doc) as never);
    expect(doc.servers).toEqual([{ url: "https://api.example.test" }]);
    // The same operations as the Node server's document, every area's.
    const node = await createTestApp();
    try {
      const nodeDoc = (await (await node.app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
      const operations = (d: { paths: Record<string, unknown> }) =>
        Object.entries(d.paths)
          .flatMap(([path, item]) => Object.keys(item as object).map((method) => `${method} ${path}`))
          .sort();
      expect(operations(doc)).toEqual(operations(nodeDoc));
      expect(Object.keys(doc.paths).some((p) => p.startsWith("/api/qr-code/"))).toBe(true);
      expect(Object.keys(doc.paths).some((p) => p.startsWith("/api/image/"))).toBe(true);
      expect(Object.keys(doc.paths).some((p) => p.startsWith("/api/v1/social/"))).toBe(true);
      expect(Object.keys(doc.paths).some((p) => p.startsWith("/api/v1/webhooks"))).toBe(true);
    } finally {
      await node.close();
    }
  });

  it("serves the script-free /docs and the 301s of the former paths", async () => {
    const page = await fetchEdge("/docs");
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('id="generateQrBase64"');
    expect(html).not.toMatch(/<script/i);
    for (const [old, now] of [
      ["/api/v1/social/openapi.json", "/openapi.json"],
      ["/api/v1/social/docs", "/docs"],
      ["/api/image/openapi.json", "/openapi.json"],
    ] as const) {
      const res = await fetchEdge(old);
      expect([res.status, res.headers.get("location")], old).toEqual([301, now]);
      await res.arrayBuffer();
    }
  });

  it("answers area A through its createRoutes: the PNG for a text with slashes, 401 for a wrong key, 422 with the hint for an unencoded URL's query", async () => {
    const png = await fetchEdge(`/api/qr-code/generate/${apiKey}/https://example.com/a/b`);
    expect([png.status, png.headers.get("content-type")]).toEqual([200, "image/png"]);
    await png.arrayBuffer();
    const wrong = await fetchEdge("/api/qr-code/generate-base64/nope/hello");
    expect(wrong.status).toBe(401);
    await wrong.arrayBuffer();
    const leaked = await fetchEdge(`/api/qr-code/generate-base64/${apiKey}/https://example.com/p?id=5`);
    expect(leaked.status).toBe(422);
    expect(((await leaked.json()) as { error: { message: string } }).error.message).toContain("if it belongs to the text, URL-encode the text");
  });
});
