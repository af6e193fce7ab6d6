/**
 * The API reference page for area C, rendered on the server from the same OpenAPI document the API serves:
 * one section per operation with its parameters, request body and responses. Plain HTML and inline CSS, no
 * scripts, so it works offline and under a strict CSP.
 *
 * @example
 * router.get("/docs", (c) => c.html(renderDocsPage(document)));
 */
import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

type Json = Record<string, any>;
type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

const METHODS = ["get", "post", "put", "patch", "delete"] as const;

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1c1e21;background:#fafafa}
main{max-width:960px;margin:0 auto;padding:24px}
h1{margin:0 0 4px}h2{margin-top:40px;border-bottom:1px solid #ddd;padding-bottom:4px}
nav ul{columns:2;padding-left:18px}
section.op{background:#fff;border:1px solid #e3e3e3;border-radius:8px;padding:12px 18px;margin:18px 0}
.m{display:inline-block;min-width:64px;text-align:center;font:600 13px monospace;border-radius:4px;padding:2px 6px;color:#fff}
.get{background:#2f7d32}.post{background:#1565c0}.delete{background:#c62828}.put,.patch{background:#ef6c00}
code,pre{font-family:ui-monospace,monospace;font-size:13px}pre{background:#f4f4f4;padding:10px;overflow:auto;border-radius:6px;max-height:420px}
table{border-collapse:collapse;width:100%}td,th{border-top:1px solid #eee;padding:4px 8px;text-align:left;vertical-align:top}
.muted{color:#666}
`;

export function renderDocsPage(doc: Json): Html {
  const operations = collectOperations(doc);
  const info = doc.info ?? {};
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${info.title} reference</title>
<style>${raw(STYLE)}</style>
</head>
<body><main>
<h1>${info.title}</h1>
<p class="muted">Version ${info.version} · OpenAPI ${doc.openapi} · machine-readable: <a href="openapi.json"><code>openapi.json</code></a></p>
${paragraphs(info.description)}
<h2>Authentication</h2>
<p>Send <code>Authorization: Bearer &lt;API_KEY&gt;</code> (or an identity-provider ID token) and <code>Content-Type: application/json</code>. Keys belong on your server; media and posts are visible only to the key's owner.</p>
<h2>Operations</h2>
<nav><ul>${operations.map((op) => html`<li><a href="#${op.operationId}"><span class="m ${op.method}">${op.method.toUpperCase()}</span> <code>${op.path}</code></a> ${op.summary}</li>`)}</ul></nav>
${operations.map((op) => renderOperation(doc, op))}
<h2>Errors</h2>
<table><tr><th>Status</th><th>Meaning</th></tr>
${Object.values<Json>(doc.components?.responses ?? {}).map((r) => {
  const [status, ...meaning] = String(r.description).split(": ");
  return html`<tr><td>${status}</td><td>${inline(meaning.join(": "))}</td></tr>`;
})}
</table>
<p>Every error body is <code>{"error":{"code","message","details?"}}</code>; <code>details</code> lists <code>{path, message}</code> per invalid field.</p>
</main></body></html>`;
}

interface Operation {
  method: string;
  path: string;
  operationId: string;
  summary: string;
  op: Json;
}

function collectOperations(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (op) out.push({ method, path, operationId: op.operationId ?? `${method}-${path}`, summary: op.summary ?? "", op });
    }
  }
  return out;
}

function renderOperation(doc: Json, { method, path, operationId, summary, op }: Operation): Html {
  const params = (op.parameters ?? []) as Json[];
  const body = op.requestBody?.content?.["application/json"]?.schema;
  return html`<section class="op" id="${operationId}">
<h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${path}</code></h3>
<p><strong>${summary}</strong> <span class="muted">(operationId <code>${operationId}</code>)</span></p>
${paragraphs(op.description)}
${params.length
    ? html`<h4>Parameters</h4><table><tr><th>Name</th><th>In</th><th>Required</th><th>Description</th></tr>
${params.map((p) => html`<tr><td><code>${p.name}</code></td><td>${p.in}</td><td>${p.required ? "yes" : "no"}</td><td>${inline(p.description ?? p.schema?.description ?? "")}${enumOf(p.schema)}</td></tr>`)}</table>`
    : ""}
${body ? renderBody(resolve(doc, body)) : ""}
<h4>Responses</h4>
<table><tr><th>Status</th><th>Description</th></tr>
${Object.entries<Json>(op.responses ?? {}).map(([status, r]) => html`<tr><td>${status}</td><td>${inline(String(resolve(doc, r).description ?? "").replace(/^\d{3}: /, ""))}</td></tr>`)}
</table>
</section>`;
}

/** Field table for an object body (the common case), with the full schema folded away below it. */
function renderBody(schema: Json): Html {
  const props = Object.entries<Json>(schema.properties ?? {});
  const required = new Set<string>(schema.required ?? []);
  return html`<h4>Request body</h4>
${props.length
    ? html`<table><tr><th>Field</th><th>Type</th><th>Required</th><th>Description</th></tr>
${props.map(([name, p]) => html`<tr><td><code>${name}</code></td><td>${typeOf(p)}</td><td>${required.has(name) ? "yes" : "no"}</td><td>${inline(p.description ?? "")}${enumOf(p)}</td></tr>`)}</table>`
    : html`<p>${typeOf(schema)}</p>`}
<details><summary>JSON Schema</summary><pre>${JSON.stringify(schema, null, 2)}</pre></details>`;
}

/** A short type description: "string", "array of string", "string or array of string", ... */
function typeOf(schema: Json | undefined): string {
  if (!schema) return "any";
  const union = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (union) return union.map(typeOf).join(" or ");
  if (schema.type === "array") return `array of ${typeOf(schema.items)}`;
  if (schema.type === "object" || schema.properties) return `{${Object.keys(schema.properties ?? {}).join(", ")}}`;
  const type = Array.isArray(schema.type) ? schema.type.join(" | ") : String(schema.type ?? "any");
  return schema.format ? `${type} (${schema.format})` : type;
}

/** Text with `code` spans, escaped. */
function inline(text: string): Html {
  const parts = text.split("`");
  return html`${parts.map((part, i) => (i % 2 === 1 ? html`<code>${part}</code>` : html`${part}`))}`;
}

function enumOf(schema: Json | undefined): Html | string {
  const values = schema?.enum as unknown[] | undefined;
  return values ? html` <span class="muted">One of: ${values.map(String).join(", ")}.</span>` : "";
}

function paragraphs(text: unknown): Html | string {
  if (typeof text !== "string" || text === "") return "";
  return html`${text.split(/\n\n+/).map((p) => html`<p>${inline(p)}</p>`)}`;
}

/** Inlines `$ref`s (depth-limited) so a schema reads on its own. */
function resolve(doc: Json, node: unknown, depth = 0): any {
  if (depth > 8 || node === null || typeof node !== "object") return node;
  if (Array.isArray(node)) return node.map((n) => resolve(doc, n, depth + 1));
  const ref = (node as Json).$ref;
  if (typeof ref === "string" && ref.startsWith("#/")) {
    const target = ref.slice(2).split("/").reduce<any>((at, key) => at?.[key], doc);
    return resolve(doc, target, depth + 1);
  }
  return Object.fromEntries(Object.entries(node as Json).map(([k, v]) => [k, resolve(doc, v, depth + 1)]));
}
