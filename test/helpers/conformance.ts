/**
 * Response conformance to the API's OpenAPI document, for the test harness: `checkConformance(app, doc)`
 * wraps `app.request` so every answer to a documented operation is checked as the suite receives it. The
 * status must be one the operation documents, the content type one that status documents (or no body where
 * it documents none), and a JSON body must be valid against the documented schema (ajv, JSON Schema
 * 2020-12), where, in tests only, an object may not carry a property its schema does not name. A response
 * that drifts from the document makes `app.request` reject with what drifted, so the test fails there.
 *
 * Routes the document does not describe (the hub, files, sandbox, internal callbacks) and HEAD requests pass
 * unchecked; that every mounted route is documented is test/foundation/api-coverage.test.ts's job.
 *
 * @example
 * checkConformance(app, apiDocument(app, services.config));
 * await app.request("/api/qr-code/decode", init); // rejects when the answer is not as documented
 */
import type { Hono } from "hono";
import { TrieRouter } from "hono/router/trie-router";
import { documentSchemas, type DocumentSchemas } from "./openapi";

type Json = Record<string, any>;

/** What a drifted response is reported with. */
export class ConformanceError extends Error {
  override name = "ConformanceError";
}

export interface Answer {
  method: string;
  /** The request path (no query string). */
  path: string;
  status: number;
  contentType: string | null;
  body: string;
}

export interface AnswerCheck {
  /** Whether the document describes the operation this request reaches (HEAD never: it has no body to check). */
  covers(method: string, path: string): boolean;
  /**
   * Checks one answer against the document; throws ConformanceError naming what drifted. Answers to routes
   * the document does not describe return false (unchecked); checked ones return true.
   */
  check(answer: Answer): boolean;
}

const METHODS = ["get", "post", "put", "patch", "delete"];

/**
 * The checker for one app and its document. The app's own route table decides which operation a path is
 * (Hono's matching, so `{text}` takes slashes where the route's pattern does).
 */
export function answerChecker(app: Hono<any>, doc: Json): AnswerCheck {
  const strict = closedObjects(structuredClone(doc));
  const schemas: DocumentSchemas = documentSchemas(strict);
  const router = new TrieRouter<string>();
  const added = new Set<string>();
  for (const r of app.routes) {
    const template = r.path.replace(/:([A-Za-z_]\w*)(\{[^/]*\})?/g, "{$1}");
    const method = r.method.toLowerCase();
    if (!METHODS.includes(method) || !doc.paths?.[template]?.[method] || added.has(`${r.method} ${r.path}`)) continue;
    added.add(`${r.method} ${r.path}`);
    router.add(r.method, r.path, template);
  }

  const templateOf = (method: string, path: string): string | undefined => {
    if (method === "HEAD") return undefined;
    const [matches] = router.match(method, path) as unknown as [Array<[string, unknown]>];
    return matches?.[0]?.[0];
  };

  const covers = (method: string, path: string) => templateOf(method, path) !== undefined;
  const check = ({ method, path, status, contentType, body }: Answer) => {
    const template = templateOf(method, path);
    if (!template) return false;
    const name = `${method} ${path} (${method} ${template})`;
    const op = doc.paths[template][method.toLowerCase()];
    const declared = op.responses?.[String(status)] ?? op.responses?.default;
    if (!declared) throw new ConformanceError(`${name} answered ${status}, which the document does not list (it lists ${Object.keys(op.responses ?? {}).join(", ")}). Body: ${body.slice(0, 300)}`);
    const [at, response] = resolveResponse(doc, ["paths", template, method.toLowerCase(), "responses", op.responses?.[String(status)] ? String(status) : "default"], declared);
    const content = (response.content ?? {}) as Json;
    if (body === "") return true;
    const essence = contentType?.split(";")[0]!.trim().toLowerCase() ?? "";
    if (Object.keys(content).length === 0) throw new ConformanceError(`${name} answered ${status} with a ${essence || "typeless"} body, where the document describes none`);
    if (!(essence in content)) throw new ConformanceError(`${name} answered ${status} as ${essence || "no content type"}; the document says ${Object.keys(content).join(" or ")}`);
    if (essence !== "application/json") return true;
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      throw new ConformanceError(`${name} answered ${status} with a body that is not JSON: ${body.slice(0, 200)}`);
    }
    const errors = schemas.errors([...at, "content", "application/json", "schema"], value);
    if (errors.length) throw new ConformanceError(`${name} answered ${status} with a body the document does not allow:\n  ${errors.join("\n  ")}\nBody: ${body.slice(0, 500)}`);
    return true;
  };
  return { covers, check };
}

/**
 * Wraps `app.request` (in place) so each answer is checked; `doc` is built on first use.
 *
 * @example
 * checkConformance(app, () => apiDocument(app, config));
 */
export function checkConformance(app: Hono<any>, doc: () => Json): void {
  const request = app.request;
  let checker: AnswerCheck | undefined;
  app.request = (async (input: RequestInfo | URL, init?: RequestInit, ...rest: unknown[]) => {
    const res = await (request as (...args: unknown[]) => Promise<Response>)(input, init, ...rest);
    checker ??= answerChecker(app, doc());
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    const url = input instanceof Request ? input.url : input instanceof URL ? input.href : /^https?:/.test(input) ? input : `http://localhost${input}`;
    const path = new URL(url).pathname;
    // Only answers the document describes are read: others (the sandbox's, the hub's) may stream or fail on purpose.
    if (!checker.covers(method, path)) return res;
    const body = res.status === 304 || res.body === null ? "" : await res.clone().text();
    checker.check({ method, path, status: res.status, contentType: res.headers.get("content-type"), body });
    return res;
  }) as typeof app.request;
}

function resolveResponse(doc: Json, at: string[], response: Json): [string[], Json] {
  if (typeof response.$ref !== "string") return [at, response];
  const segments = response.$ref.slice(2).split("/");
  return [segments, segments.reduce((node: Json, key: string) => node?.[key], doc)];
}

/** Every object schema that names its properties and says nothing of others is closed (tests only). */
function closedObjects(node: unknown): Json {
  if (Array.isArray(node)) node.forEach(closedObjects);
  else if (node && typeof node === "object") {
    const schema = node as Json;
    if (schema.type === "object" && schema.properties && schema.additionalProperties === undefined && schema.unevaluatedProperties === undefined) {
      schema.additionalProperties = false;
    }
    for (const value of Object.values(schema)) closedObjects(value);
  }
  return node as Json;
}
