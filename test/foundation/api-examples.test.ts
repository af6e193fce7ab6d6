/**
 * The examples of the API's OpenAPI document (GET /openapi.json): every operation has request examples
 * (each parameter, and each JSON body) and response examples (each JSON response), and every example in the
 * document, down to the schema-level `example`s, is valid against its schema (ajv, JSON Schema 2020-12).
 * An error example's code has the status of the response it illustrates. Request examples also pass the
 * operation's own zod validators, so an example is one the API accepts, not only one the document allows.
 */
import type { RouteConfig } from "@hono/zod-openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ZodType } from "zod";
import { codeToStatus } from "../../src/http/errors";
import { serviceRoutes } from "../../src/http/front-door";
import { photoRoutes } from "../../src/photo/openapi";
import { qrRoutes } from "../../src/qr/openapi";
import { routes as socialRoutes } from "../../src/social/openapi";
import { routes as webhookRoutes } from "../../src/webhooks/openapi";
import { createTestApp, type TestApp } from "../helpers/harness";
import { documentSchemas, type DocumentSchemas } from "../helpers/openapi";

let h: TestApp;
let doc: any;
let schemas: DocumentSchemas;

beforeAll(async () => {
  h = await createTestApp();
  doc = await (await h.app.request("/openapi.json")).json();
  schemas = documentSchemas(doc);
});
afterAll(async () => h?.close());

const METHODS = ["get", "post", "put", "patch", "delete"];

interface Sample {
  /** Where the example is, for messages. */
  where: string;
  /** Path segments of the schema it must satisfy. */
  schema: string[];
  value: unknown;
}

function operations(): Array<{ name: string; path: string; method: string; op: any }> {
  return Object.entries<any>(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ name: `${method.toUpperCase()} ${path}`, path, method, op: item[method] })),
  );
}

/** A `$ref`'d response as [its segments, the response]; an inline one as given. */
function response(at: string[], r: any): [string[], any] {
  if (typeof r?.$ref !== "string") return [at, r];
  const segments = r.$ref.slice(2).split("/");
  return [segments, segments.reduce((node: any, key: string) => node?.[key], doc)];
}

/** The examples of one media type (Example Objects under `examples`, or one `example`). */
function mediaSamples(where: string, at: string[], media: any): Sample[] {
  const out: Sample[] = Object.entries<any>(media?.examples ?? {}).map(([name, e]) => ({
    where: `${where} example ${name}`,
    schema: [...at, "schema"],
    value: e.value,
  }));
  if (media && "example" in media) out.push({ where: `${where} example`, schema: [...at, "schema"], value: media.example });
  return out;
}

function parameterSamples(name: string, at: string[], p: any): Sample[] {
  const where = `${name} parameter ${p.name}`;
  const out: Sample[] = Object.entries<any>(p.examples ?? {}).map(([n, e]) => ({ where: `${where} example ${n}`, schema: [...at, "schema"], value: e.value }));
  if ("example" in p) out.push({ where, schema: [...at, "schema"], value: p.example });
  return out;
}

function operationSamples({ name, path, method, op }: ReturnType<typeof operations>[number]) {
  const base = ["paths", path, method];
  const request: Sample[] = [];
  (op.parameters ?? []).forEach((p: any, i: number) => {
    request.push(...parameterSamples(name, [...base, "parameters", String(i)], p));
  });
  const body = op.requestBody?.content?.["application/json"];
  if (body) request.push(...mediaSamples(`${name} request body`, [...base, "requestBody", "content", "application/json"], body));
  const responses: Array<{ status: string; samples: Sample[] }> = [];
  for (const [status, raw] of Object.entries<any>(op.responses ?? {})) {
    const [at, r] = response([...base, "responses", status], raw);
    const media = r?.content?.["application/json"];
    if (media) responses.push({ status, samples: mediaSamples(`${name} ${status}`, [...at, "content", "application/json"], media) });
  }
  return { request, responses };
}

/** Every schema-level `example` in the document's schemas (components and parameters). */
function schemaSamples(): Sample[] {
  const out: Sample[] = [];
  const walk = (node: any, at: string[]) => {
    if (!node || typeof node !== "object") return;
    if ("example" in node && (node.type !== undefined || node.anyOf || node.oneOf || node.$ref))
      out.push({ where: `schema ${at.join("/")}`, schema: at, value: node.example });
    for (const key of ["properties", "patternProperties", "$defs"]) for (const [k, v] of Object.entries<any>(node[key] ?? {})) walk(v, [...at, key, k]);
    for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"])
      (node[key] ?? []).forEach((v: any, i: number) => {
        walk(v, [...at, key, String(i)]);
      });
    for (const key of ["items", "additionalProperties", "not"]) if (typeof node[key] === "object") walk(node[key], [...at, key]);
  };
  for (const [name, schema] of Object.entries<any>(doc.components?.schemas ?? {})) walk(schema, ["components", "schemas", name]);
  for (const { path, method, op } of operations())
    (op.parameters ?? []).forEach((p: any, i: number) => {
      walk(p.schema, ["paths", path, method, "parameters", String(i), "schema"]);
    });
  return out;
}

describe("examples of GET /openapi.json", () => {
  it("every operation has request examples for its input and an example of each JSON response", () => {
    const missing: string[] = [];
    for (const operation of operations()) {
      const { op, name } = operation;
      const { request, responses } = operationSamples(operation);
      for (const p of op.parameters ?? [])
        if (!request.some((s) => s.where.startsWith(`${name} parameter ${p.name}`))) missing.push(`${name}: parameter ${p.name}`);
      if (op.requestBody && !request.some((s) => s.where.includes("request body"))) missing.push(`${name}: request body`);
      for (const { status, samples } of responses) if (samples.length === 0) missing.push(`${name}: response ${status}`);
      if (responses.length === 0 && !op.responses?.["200"]?.content) missing.push(`${name}: no JSON or binary success response`);
    }
    expect(missing).toEqual([]);
    expect(operations().length).toBeGreaterThan(15);
  });

  it("every example is valid against its schema", () => {
    const samples = operations().flatMap((o) => {
      const { request, responses } = operationSamples(o);
      return [...request, ...responses.flatMap((r) => r.samples)];
    });
    expect(samples.length).toBeGreaterThan(80);
    const invalid = [...samples, ...schemaSamples()].flatMap((s) => schemas.errors(s.schema, s.value).map((e) => `${s.where}: ${e}`));
    expect(invalid).toEqual([]);
  });

  it("an error example's code has the status of its response", () => {
    const wrong: string[] = [];
    for (const operation of operations()) {
      for (const { status, samples } of operationSamples(operation).responses) {
        for (const s of samples) {
          const code = (s.value as { error?: { code?: string } })?.error?.code;
          if (Number(status) < 400) expect(code, s.where).toBeUndefined();
          else if (code !== undefined && codeToStatus[code as keyof typeof codeToStatus] !== Number(status)) wrong.push(`${s.where}: ${code} is not ${status}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("the check is not vacuous: a wrong example, a wrong parameter example and a missing field are refused", () => {
    const body = ["paths", "/api/qr-code/decode", "post", "requestBody", "content", "application/json", "schema"];
    expect(schemas.errors(body, { url: "https://example.com/x.png" })).toEqual([]);
    expect(schemas.errors(body, { url: 5 })).not.toEqual([]);
    expect(schemas.errors(body, { uri: "https://example.com/x.png" })).not.toEqual([]);
    const post = ["components", "schemas", "PostResponse"];
    const example = doc.paths["/api/v1/social/posts/{id}"].get.responses["200"].content["application/json"].examples.queued.value;
    expect(schemas.errors(post, example)).toEqual([]);
    const { accounts: _dropped, ...incomplete } = example.data;
    expect(schemas.errors(post, { data: incomplete })).not.toEqual([]);
    const size = doc.paths["/api/qr-code/generate/{apiKey}/{text}"].get.parameters.findIndex((p: any) => p.name === "size");
    expect(schemas.errors(["paths", "/api/qr-code/generate/{apiKey}/{text}", "get", "parameters", String(size), "schema"], "big")).not.toEqual([]);
  });
});

describe("request examples and the validators", () => {
  const definitions = [
    ...Object.values(qrRoutes),
    ...Object.values(photoRoutes),
    ...Object.values(socialRoutes),
    ...Object.values(webhookRoutes),
    ...Object.values(serviceRoutes),
  ] as RouteConfig[];

  it("every request body example passes the operation's own zod validator", () => {
    let checked = 0;
    for (const route of definitions) {
      const media = route.request?.body?.content?.["application/json"] as { schema: ZodType; examples?: Record<string, { value: unknown }> } | undefined;
      for (const [name, example] of Object.entries(media?.examples ?? {})) {
        const result = media!.schema.safeParse(example.value);
        expect(result.success, `${route.method} ${route.path} ${name}: ${JSON.stringify(result.error?.issues)}`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });

  it("the path and query examples of each operation, sent together, pass its validators", () => {
    for (const { path, method, op } of operations()) {
      const route = definitions.find((r) => r.method === method && documentPathOf(r) === path);
      expect(route, `${method} ${path}`).toBeDefined();
      for (const where of ["path", "query"] as const) {
        const given = Object.fromEntries((op.parameters ?? []).filter((p: any) => p.in === where).map((p: any) => [p.name, String(p.example)]));
        const schema = (where === "path" ? route!.request?.params : route!.request?.query) as ZodType | undefined;
        if (!schema) continue;
        const result = schema.safeParse(given);
        expect(result.success, `${method} ${path} ${where}: ${JSON.stringify(result.error?.issues)}`).toBe(true);
      }
    }
  });
});

/** The document path of a route defined under an area's mount prefix. */
function documentPathOf(route: RouteConfig): string {
  const prefix = Object.values(qrRoutes).includes(route as never)
    ? "/api/qr-code"
    : Object.values(photoRoutes).includes(route as never)
      ? "/api/image"
      : Object.values(socialRoutes).includes(route as never)
        ? "/api/v1/social"
        : Object.values(webhookRoutes).includes(route as never)
          ? "/api/v1/webhooks"
          : "";
  return `${prefix}${route.path}`.replace(/\{([A-Za-z_]\w*)\{[^/]*\}\}/g, "{$1}").replace(/(.)\/$/, "$1");
}
