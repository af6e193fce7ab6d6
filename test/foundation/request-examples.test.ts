/**
 * Every request-body example of the OpenAPI document (what /docs shows a customer to copy) is accepted by
 * its operation as it stands: never 400 or 422. An example may name an id this user does not have (a 404
 * is then the answer), but its shape, its values and its inline images must pass (an image URL's host cannot
 * be resolved on a machine without network; that refusal is let through). Sent with a key of every area,
 * after the README's two sandbox accounts are connected.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { apiDocument } from "../../src/http/api-document";
import type { AppEnv } from "../../src/http/env";
import { createTestApp, type TestApp } from "../helpers/harness";

let h: TestApp;
let key: string;

beforeAll(async () => {
  h = await createTestApp({ env: { WEBHOOK_ALLOW_LOOPBACK: "on" } });
  key = (await h.createUser()).apiKey;
  for (const account of [
    { platform: "pageplatform", name: "Corner Shop", platformAccountId: "1001" },
    { platform: "photoplatform", name: "cornershop", platformAccountId: "2002" },
  ]) {
    const res = await h.app.request("/sandbox/accounts", { method: "POST", headers: h.json(key), body: JSON.stringify(account) });
    expect(res.status, await res.clone().text()).toBeLessThan(300);
  }
}, 60_000);
afterAll(async () => h?.close());

interface Example {
  operation: string;
  method: string;
  path: string;
  name: string;
  value: unknown;
}

/** Each JSON request-body example, with its path's parameters filled with placeholders. */
function requestExamples(): Example[] {
  const doc = apiDocument(h.app as OpenAPIHono<AppEnv>, h.services.config) as unknown as {
    paths: Record<
      string,
      Record<string, { operationId: string; requestBody?: { content?: Record<string, { examples?: Record<string, { value: unknown }> }> } }>
    >;
  };
  const out: Example[] = [];
  for (const [template, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const examples = op.requestBody?.content?.["application/json"]?.examples ?? {};
      const path = template.replace(/\{apiKey\}/g, key).replace(/\{[^}]+\}/g, "00000000-0000-4000-8000-000000000000");
      for (const [name, { value }] of Object.entries(examples)) out.push({ operation: op.operationId, method: method.toUpperCase(), path, name, value });
    }
  }
  return out;
}

describe("the document's request examples", () => {
  it("are each accepted by their operation: never 400 or 422", async () => {
    const examples = requestExamples();
    expect(examples.length).toBeGreaterThan(10);
    const refused: string[] = [];
    for (const [i, e] of examples.entries()) {
      const res = await h.app.request(e.path, {
        method: e.method,
        headers: h.json(key, { "Idempotency-Key": `example-${i}` }),
        body: JSON.stringify(e.value),
      });
      const text = await res.text();
      // An example's public image URL cannot be fetched here (no network): that is the machine, not the example.
      if (text.includes("could not be fetched: its host name could not be resolved")) continue;
      if (res.status === 400 || res.status === 422) refused.push(`${e.operation} "${e.name}": ${res.status} ${text.slice(0, 300)}`);
    }
    expect(refused).toEqual([]);
  }, 120_000);
});
