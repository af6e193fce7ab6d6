/**
 * The API's OpenAPI document covers every route the app mounts: Hono's own route table (`app.routes`, as the
 * Node server builds the app, admin route included) against the document's operations, both ways. Left out,
 * each for its reason (src/http/api-document.ts): `use()` middleware (method ALL), the hub, stored files,
 * the sandbox, the internal queue callbacks, the admin command, and the documents themselves.
 */
import type { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdminRoutes } from "../../functions/node/admin-server";
import type { AppEnv } from "../../src/http/env";
import { createTestApp, type TestApp } from "../helpers/harness";

/** Prefixes that are not part of the public API, and why. */
const EXCLUDED: Array<[prefix: string, why: string]> = [
  ["/hub", "HTML pages for people signed in with a session cookie"],
  ["/files", "the stored images that answers link to: addresses, not operations"],
  ["/sandbox", "the platform fake for development and tests, off in production"],
  ["/api/internal", "the queue's signed delivery callbacks"],
  ["/_admin", "the Node server's admin command for the host's CLI"],
];

/** The documents, /docs with a slash added, and the former per-area document paths that redirect to them. */
const DOCUMENTS = ["GET /openapi.json", "GET /docs", "GET /docs/", "GET /api/v1/social/openapi.json", "GET /api/v1/social/docs", "GET /api/image/openapi.json"];

const METHODS = ["get", "post", "put", "patch", "delete"];

let h: TestApp;

beforeAll(async () => {
  h = await createTestApp({ extras: { mount: (app) => app.route("/", createAdminRoutes("test-token")) } });
});
afterAll(async () => h?.close());

/** `/a/:id` and `/a/:text{.+}` (Hono) as `/a/{id}` and `/a/{text}` (OpenAPI). */
function template(honoPath: string): string {
  return honoPath.replace(/:([A-Za-z_]\w*)(\{[^/]*\})?/g, "{$1}");
}

function excluded(path: string): boolean {
  return EXCLUDED.some(([prefix]) => path === prefix || path.startsWith(`${prefix}/`));
}

/** The app's public operations as "METHOD /template", from its route table. */
function appOperations(app: Hono<AppEnv>): string[] {
  const ops = new Set<string>();
  for (const r of app.routes) {
    if (r.method === "ALL" || excluded(r.path)) continue;
    const op = `${r.method} ${template(r.path)}`;
    if (!DOCUMENTS.includes(op)) ops.add(op);
  }
  return [...ops].sort();
}

async function documentOperations(app: Hono<AppEnv>): Promise<string[]> {
  const doc = (await (await app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(doc.paths)
    .flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`))
    .sort();
}

/** Operations the app mounts that the document lacks, and the reverse. */
async function coverage(app: Hono<AppEnv>) {
  const mounted = appOperations(app);
  const documented = await documentOperations(app);
  return { mounted, missing: mounted.filter((op) => !documented.includes(op)), phantom: documented.filter((op) => !mounted.includes(op)) };
}

describe("the OpenAPI document covers the app", () => {
  it("every public route the app mounts is in the document, and the document has nothing the app does not mount", async () => {
    const { mounted, missing, phantom } = await coverage(h.app);
    expect(missing, `mounted but not in /openapi.json: ${missing.join(", ")}`).toEqual([]);
    expect(phantom, `in /openapi.json but not mounted: ${phantom.join(", ")}`).toEqual([]);
    expect(mounted).toEqual(
      expect.arrayContaining([
        "GET /api/qr-code/generate/{apiKey}/{text}",
        "POST /api/image/product-photography",
        "DELETE /api/v1/social/posts/{id}",
        "GET /health",
      ]),
    );
    expect(mounted.length).toBe(31); // 2 service, 4 QR, 9 photography (credits and gallery among them), 7 social, 9 webhooks
  });

  it("the excluded prefixes hold routes the app really mounts (the exclusions are not stale)", () => {
    for (const [prefix] of EXCLUDED)
      expect(
        h.app.routes.some((r) => r.method !== "ALL" && (r.path === prefix || r.path.startsWith(`${prefix}/`))),
        prefix,
      ).toBe(true);
    for (const op of DOCUMENTS)
      expect(
        h.app.routes.some((r) => `${r.method} ${r.path}` === op),
        op,
      ).toBe(true);
  });

  it("fails naming a route mounted without a createRoute, in any area", async () => {
    const extra = await createTestApp({
      extras: {
        mount: (app) => {
          app.post("/api/qr-code/batch", (c) => c.json({ data: [] }));
          app.get("/api/v2/things/:id", (c) => c.json({ data: {} }));
          app.get("/hub/extra", (c) => c.text("a page"));
        },
      },
    });
    try {
      const { missing } = await coverage(extra.app);
      expect(missing).toEqual(["GET /api/v2/things/{id}", "POST /api/qr-code/batch"]);
    } finally {
      await extra.close();
    }
  });
});
