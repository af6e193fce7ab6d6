/**
 * Security headers of the API and file answers (Hono's secureHeaders, src/app.ts), through HTTP on the
 * embedded app: JSON, errors (from auth, validation, an unknown route and the body limit), the QR PNG and a
 * stored file all carry them; the hub keeps its own (test/hub/security.test.ts checks those in full).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness";

let h: TestApp;
let apiKey: string;
beforeAll(async () => {
  h = await createTestApp();
  ({ apiKey } = await h.createUser());
});
afterAll(() => h.close());

const API_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
  "cross-origin-resource-policy": "cross-origin",
  "cross-origin-opener-policy": "same-origin",
  "strict-transport-security": "max-age=15552000; includeSubDomains",
};

/** Headers for HTML pages or long-gone browsers, which an API answer does without. */
const HTML_ONLY = ["x-xss-protection", "x-dns-prefetch-control", "x-download-options", "x-permitted-cross-domain-policies", "origin-agent-cluster"];

function headersOf(res: Response): Record<string, string | null> {
  const present = HTML_ONLY.filter((name) => res.headers.has(name));
  expect(present, "HTML-only headers on an API answer").toEqual([]);
  return Object.fromEntries(Object.keys(API_HEADERS).map((name) => [name, res.headers.get(name)]));
}

describe("API and file answers", () => {
  it.each([
    ["a JSON answer", () => h.app.request("/api/v1/social/accounts", { headers: h.auth(apiKey) }), 200],
    ["the QR PNG", () => h.app.request(`/api/qr-code/generate/${apiKey}/hello`), 200],
    ["a 401", () => h.app.request("/api/v1/social/accounts"), 401],
    ["a 422", () => h.app.request("/api/qr-code/generate", { method: "POST", headers: h.json(apiKey), body: JSON.stringify({ type: "url" }) }), 422],
    ["a 404 under /api", () => h.app.request("/api/nothing-here"), 404],
    [
      "a 413 from the body limit",
      () => h.app.request("/api/qr-code/generate", { method: "POST", headers: h.json(apiKey), body: "x".repeat(21 * 1024 * 1024) }),
      413,
    ],
  ])("%s carries them", async (_name, send, status) => {
    const res = await send();
    expect(res.status).toBe(status);
    expect(headersOf(res)).toEqual(API_HEADERS);
  });

  it("a stored file carries them, and a missing one too", async () => {
    const url = await h.services.storage.put(`test/${crypto.randomUUID()}.png`, new Uint8Array([0x89, 0x50, 0x4e, 0x47]), "image/png");
    const res = await h.app.request(new URL(url).pathname);
    expect([res.status, res.headers.get("content-type")]).toEqual([200, "image/png"]);
    expect(headersOf(res)).toEqual(API_HEADERS);
    const missing = await h.app.request("/files/test/none.png");
    expect(missing.status).toBe(404);
    expect(headersOf(missing)).toEqual(API_HEADERS);
  });

  it("the hub's pages keep the hub's own policy", async () => {
    const res = await h.app.request("/hub/signin");
    expect(res.headers.get("referrer-policy")).toBe("same-origin");
    expect(res.headers.get("content-security-policy")).toMatch(/script-src 'nonce-/);
  });
});
