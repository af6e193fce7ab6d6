/**
 * The conformance check the harness puts on every `app.request()` (helpers/conformance.ts): real answers of
 * each area pass; an answer that drifts from /openapi.json (a field of the wrong type, an extra or missing
 * field, an undocumented status or content type) fails, end to end and case by case.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiDocument } from "../../src/http/api-document";
import type { AppEnv } from "../../src/http/env";
import { answerChecker, ConformanceError, type AnswerCheck } from "../helpers/conformance";
import { createTestApp, type TestApp } from "../helpers/harness";
import { makePng } from "../helpers/images";

let h: TestApp;
let checker: AnswerCheck;
const check = (answer: Parameters<AnswerCheck["check"]>[0]) => checker.check(answer);
let apiKey: string;

beforeAll(async () => {
  h = await createTestApp();
  ({ apiKey } = await h.createUser());
  checker = answerChecker(h.app, apiDocument(h.app as OpenAPIHono<AppEnv>, h.services.config));
});
afterAll(async () => h?.close());

const json = (method: string, path: string, status: number, body: unknown) => ({
  method,
  path,
  status,
  contentType: "application/json",
  body: JSON.stringify(body),
});

describe("the harness checks every answer against /openapi.json", () => {
  it("answers of each area pass, as the suites receive them", async () => {
    const got = [
      await h.app.request("/"),
      await h.app.request(`/api/qr-code/generate/${apiKey}/https://example.com/a/b`),
      await h.app.request(`/api/qr-code/generate-base64/${apiKey}/hello?bogus=1`),
      await h.app.request("/api/image/image-model-options"),
      await h.app.request(`/api/image/product-photography/jobs/${crypto.randomUUID()}`, { headers: h.auth(apiKey) }),
      await h.app.request("/api/v1/social/accounts", { headers: h.auth(apiKey) }),
      await h.app.request("/api/v1/social/posts", { method: "POST", headers: h.json(apiKey), body: "{}" }),
    ];
    expect(got.map((r) => r.status)).toEqual([200, 200, 422, 200, 404, 200, 400]);
  });

  it("an answer that drifts fails the request that got it, naming the operation and the field", async () => {
    const drifting = await createTestApp();
    try {
      const { apiKey: key } = await drifting.createUser();
      // The decoder hands back a number where the document promises the decoded text.
      drifting.services.heavy = { ...drifting.services.heavy, run: (async () => 42) as never };
      const base64 = (await makePng(64, 64)).toString("base64");
      const sent = drifting.app.request("/api/qr-code/decode", { method: "POST", headers: drifting.json(key), body: JSON.stringify({ base64 }) });
      await expect(sent).rejects.toThrow(ConformanceError);
      await expect(sent).rejects.toThrow(/POST \/api\/qr-code\/decode .*200.*\/data\/decodedText must be string/s);
    } finally {
      await drifting.close();
    }
  });

  it("leaves the bodies of undocumented routes unread (a sandbox fault may break its stream on purpose)", async () => {
    const broken = new ReadableStream({ pull: (controller) => controller.error(new Error("dropped on purpose")) });
    const other = await createTestApp({
      extras: { mount: (app) => app.get("/sandbox/broken", () => new Response(broken, { headers: { "Content-Type": "application/json" } })) },
    });
    try {
      const res = await other.app.request("/sandbox/broken");
      expect(res.status).toBe(200);
      await expect(res.text()).rejects.toThrow("dropped on purpose");
    } finally {
      await other.close();
    }
  });
});

describe("what counts as drift", () => {
  const ok = { data: { decodedText: "hello" } };

  it("passes a documented answer, and leaves undocumented routes and HEAD alone", () => {
    expect(check(json("POST", "/api/qr-code/decode", 200, ok))).toBe(true);
    expect(check(json("POST", "/api/qr-code/decode", 422, { error: { code: "QR_NOT_FOUND", message: "No code." } }))).toBe(true);
    expect(check({ method: "GET", path: "/api/qr-code/generate/KEY/a/b/c", status: 200, contentType: "image/png", body: "\u0089PNG" })).toBe(true);
    expect(check({ method: "GET", path: "/api/qr-code/generate/KEY/x", status: 304, contentType: null, body: "" })).toBe(true);
    expect(check(json("GET", "/hub/keys", 200, { anything: true }))).toBe(false);
    expect(check(json("HEAD", "/api/v1/social/accounts", 200, {}))).toBe(false);
    expect([checker.covers("GET", "/sandbox/posts"), checker.covers("GET", "/api/v1/social/posts/x")]).toEqual([false, true]);
  });

  it.each([
    ["a field of the wrong type", json("POST", "/api/qr-code/decode", 200, { data: { decodedText: 42 } }), /decodedText must be string/],
    ["a missing field", json("GET", "/api/v1/social/media/x", 200, { data: { id: crypto.randomUUID(), url: "u" } }), /must have required property/],
    [
      "a field the document does not name",
      json("POST", "/api/qr-code/decode", 200, { data: { decodedText: "x", format: "QR" } }),
      /must NOT have additional properties/,
    ],
    [
      "an undocumented status",
      json("POST", "/api/qr-code/decode", 404, { error: { code: "NOT_FOUND", message: "x" } }),
      /answered 404, which the document does not list/,
    ],
    ["an error body that is not the envelope", json("GET", "/api/v1/social/posts", 422, { message: "bad" }), /must have required property 'error'/],
    [
      "an undocumented content type",
      { method: "GET", path: "/api/image/demo/studio-white-sweep.png", status: 200, contentType: "image/jpeg", body: "x" },
      /as image\/jpeg; the document says image\/png/,
    ],
    [
      "a body where none is documented",
      { method: "GET", path: "/api/image/image-model-options", status: 304, contentType: "text/plain", body: "x" },
      /where the document describes none/,
    ],
  ])("%s fails", (_name, answer, message) => {
    expect(() => check(answer)).toThrow(message);
  });
});
