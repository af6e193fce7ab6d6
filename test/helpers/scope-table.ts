/**
 * The scope table: one request per operation of the OpenAPI document and per way it takes a key (the key in
 * the path, the Bearer header), built from the document itself, so an operation added later is in the table
 * without anyone listing it. Each authenticated operation must name its scope in `x-required-scope`; an
 * operation that names none must answer without credentials.
 *
 * @example
 * for (const c of scopeTable(doc)) {
 *   const res = await app.request(c.request(key).path, c.request(key).init);
 * }
 */
import { API_KEY_SCOPES, type ApiKeyScope } from "../../src/lib/scopes";

type Json = any;

export interface ScopeCase {
  /** `GET /api/qr-code/generate/{apiKey}/{text} (key in path)` */
  name: string;
  operationId: string;
  /** The scope the operation declares; null for a public operation. */
  scope: ApiKeyScope | null;
  /** The request with `key` (null: no credentials at all). */
  request(key: string | null): { path: string; init: RequestInit };
}

const SAMPLE: Record<string, string> = {
  text: "hello",
  id: "7c1e4b2a-9d3f-4a6e-b8c5-2f0d1e3a4b5c",
  file: "studio-white-sweep.png",
};

/** Every operation of the document, once per way of sending the key. */
export function scopeTable(doc: Json): ScopeCase[] {
  const cases: ScopeCase[] = [];
  for (const [template, item] of Object.entries<Json>(doc.paths)) {
    for (const method of ["get", "post", "put", "patch", "delete"]) {
      const op = item[method];
      if (!op) continue;
      const scope = (op["x-required-scope"] ?? null) as ApiKeyScope | null;
      if (scope !== null && !API_KEY_SCOPES.includes(scope)) throw new Error(`${op.operationId}: unknown x-required-scope ${scope}`);
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])] as Json[];
      const pathKey = params.some((p) => p.in === "path" && p.name === "apiKey");
      const bearer = (op.security ?? doc.security ?? []).some((s: Json) => "bearerAuth" in s);
      const ways: Array<"path" | "bearer" | "none"> = [];
      if (pathKey) ways.push("path");
      if (bearer) ways.push("bearer");
      if (ways.length === 0) ways.push("none");
      for (const way of ways) {
        cases.push({
          name: `${method.toUpperCase()} ${template}${way === "none" ? "" : ` (key in ${way === "path" ? "path" : "Bearer header"})`}`,
          operationId: op.operationId,
          scope,
          request(key) {
            const path = template.replace(/\{(\w+)\}/g, (_, name: string) => (name === "apiKey" ? (way === "path" && key ? key : "-") : (SAMPLE[name] ?? "x")));
            const headers: Record<string, string> = {};
            if (way === "bearer" && key) headers.Authorization = `Bearer ${key}`;
            const init: RequestInit = { method: method.toUpperCase(), headers };
            if (method !== "get" && method !== "delete") {
              headers["Content-Type"] = "application/json";
              headers["Idempotency-Key"] = crypto.randomUUID();
              init.body = "{}";
            }
            return { path, init };
          },
        });
      }
    }
  }
  return cases;
}

/** Every scope but `scope`: the widest key that still lacks it. */
export function allScopesBut(scope: ApiKeyScope): ApiKeyScope[] {
  return API_KEY_SCOPES.filter((s) => s !== scope);
}
