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
 * Suites that reach a server over HTTP (a child process, the Worker in workerd) get the same check through
 * `answerChecks`: test/helpers/conformance-setup.ts (a vitest setup file) checks every answer of the global
 * `fetch` with it, and the workerd suites wrap Miniflare's `dispatchFetch` with `conformingFetch`.
 *
 * @example
 * checkConformance(app, apiDocument(app, services.config));
 * await app.request("/api/qr-code/decode", init); // rejects when the answer is not as documented
 * const get = conformingFetch((url: string, init?: RequestInit) => edge.mf.dispatchFetch(url, init));
 */
import type { Hono } from "hono";
import { TrieRouter } from "hono/router/trie-router";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config";
import { apiDocument } from "../../src/http/api-document";
import type { AppEnv } from "../../src/http/env";
import type { Services } from "../../src/services";
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
    if (!declared)
      throw new ConformanceError(
        `${name} answered ${status}, which the document does not list (it lists ${Object.keys(op.responses ?? {}).join(", ")}). Body: ${body.slice(0, 300)}`,
      );
    const [at, response] = resolveResponse(
      doc,
      ["paths", template, method.toLowerCase(), "responses", op.responses?.[String(status)] ? String(status) : "default"],
      declared,
    );
    const content = (response.content ?? {}) as Json;
    if (body === "") return true;
    const essence = (contentType?.split(";")[0] ?? "").trim().toLowerCase();
    if (Object.keys(content).length === 0)
      throw new ConformanceError(`${name} answered ${status} with a ${essence || "typeless"} body, where the document describes none`);
    if (!(essence in content))
      throw new ConformanceError(`${name} answered ${status} as ${essence || "no content type"}; the document says ${Object.keys(content).join(" or ")}`);
    if (essence !== "application/json") return true;
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      throw new ConformanceError(`${name} answered ${status} with a body that is not JSON: ${body.slice(0, 200)}`);
    }
    const errors = schemas.errors([...at, "content", "application/json", "schema"], value);
    if (errors.length)
      throw new ConformanceError(`${name} answered ${status} with a body the document does not allow:\n  ${errors.join("\n  ")}\nBody: ${body.slice(0, 500)}`);
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

/** What the checker reads of an answer (the platform's Response, or Miniflare's). */
interface AnswerLike {
  status: number;
  headers: { get(name: string): string | null };
  body: unknown;
  ok: boolean;
  json(): Promise<unknown>;
  clone(): { text(): Promise<string> };
}
type FetchLike = (input: any, init?: any) => Promise<AnswerLike>;

let local: { app: Hono<any>; check: AnswerCheck } | undefined;
/** This code's routes and document (no services: nothing is ever called), to tell which answers to check. */
function localChecker(): { app: Hono<any>; check: AnswerCheck } {
  if (!local) {
    const app = createApp({} as Services) as OpenAPIHono<AppEnv>;
    local = { app, check: answerChecker(app, apiDocument(app, parseConfig({}))) };
  }
  return local;
}

/** One request as fetch was called with it: its method and URL. */
export function requestOf(input: any, init?: any): { method: string; url: URL } {
  const isRequest = typeof input === "object" && input !== null && "method" in input && "url" in input;
  return { method: String(init?.method ?? (isRequest ? input.method : "GET")).toUpperCase(), url: new URL(isRequest ? input.url : String(input)) };
}

/**
 * The check of answers got through `fetchFn`: resolves when the answer is one the document allows (or one it
 * does not describe), rejects with ConformanceError when it drifts. The document is the one the server
 * itself serves at /openapi.json (fetched once per origin, through `fetchFn`); origins that serve none (a
 * fake answering `/`), or that cannot be reached any more, pass unchecked. `copy` is a clone of the answer taken before its body was read.
 *
 * @example
 * const check = answerChecks(fetch);
 * const res = await fetch(url); await check("GET", new URL(url), res, res.clone());
 */
export function answerChecks(
  fetchFn: FetchLike,
): (method: string, url: URL, res: Pick<AnswerLike, "status" | "headers">, copy: { text(): Promise<string> } | null) => Promise<void> {
  const checkers = new Map<string, Promise<AnswerCheck | null>>();
  const checkerFor = (origin: string) => {
    let checker = checkers.get(origin);
    if (!checker) {
      checker = (async () => {
        const res = await fetchFn(`${origin}/openapi.json`);
        const doc = res.ok ? ((await res.json().catch(() => null)) as Json | null) : null;
        return doc && typeof doc.openapi === "string" ? answerChecker(localChecker().app, doc) : null;
      })();
      // A server that went away since it answered (a suite stopping it) leaves this answer unchecked; the next asks again.
      checker = checker.catch(() => {
        checkers.delete(origin);
        return null;
      });
      checkers.set(origin, checker);
    }
    return checker;
  };
  return async (method, url, res, copy) => {
    if (!localChecker().check.covers(method, url.pathname)) return;
    const checker = await checkerFor(url.origin);
    if (!checker?.covers(method, url.pathname)) return;
    const body = copy === null ? "" : await copy.text();
    checker.check({ method, path: url.pathname, status: res.status, contentType: res.headers.get("content-type"), body });
  };
}

/** Whether an answer has a body to read for the check (a clone must be taken before the caller reads it). */
export const hasBody = (res: AnswerLike) => res.status !== 304 && res.body !== null;

/**
 * `fetchFn` with each answer checked by `answerChecks` before it is returned: a drifting answer makes the call
 * reject with ConformanceError. Answers to other paths (the hub, files, fakes' paths) and HEAD pass untouched.
 *
 * @example
 * const get = conformingFetch((url: string) => edge.mf.dispatchFetch(url));
 */
export function conformingFetch<F extends FetchLike>(fetchFn: F): F {
  const check = answerChecks(fetchFn);
  const wrapped = async (input: any, init?: any) => {
    const res = await fetchFn(input, init);
    const { method, url } = requestOf(input, init);
    if (localChecker().check.covers(method, url.pathname)) await check(method, url, res, hasBody(res) ? res.clone() : null);
    return res;
  };
  return wrapped as F;
}

/**
 * Replaces (in place) Miniflare's `dispatchFetch` with a conforming one, for the suites that send requests
 * to the Worker in workerd without HTTP.
 *
 * @example
 * edge = await startLocalEdge(options);
 * checkDispatchConformance(edge.mf);
 */
export function checkDispatchConformance(mf: { dispatchFetch: FetchLike }): void {
  mf.dispatchFetch = conformingFetch(mf.dispatchFetch.bind(mf)) as typeof mf.dispatchFetch;
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
