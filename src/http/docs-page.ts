/**
 * The API reference page (GET /docs), rendered on the server from the same OpenAPI document the API serves
 * at /openapi.json: the overview, then one section per operation, grouped by tag, with its parameters,
 * request body, responses and examples; last, every error code with its status. Plain HTML and inline CSS,
 * no scripts, so it works offline, in workerd, and under a strict CSP. On a phone's width nothing but a wide
 * table's own frame scrolls sideways.
 *
 * @example
 * app.get("/docs", (c) => c.html(renderDocsPage(document)));
 */
import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { codeToStatus } from "./errors";

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is walked as untyped JSON
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
details{margin:6px 0}summary{cursor:pointer}
code{overflow-wrap:anywhere}
@media (max-width:640px){
main{padding:12px}nav ul{columns:1;padding-left:0;list-style:none}nav li{margin:4px 0}
section.op{padding:10px 12px}
table{display:block;overflow-x:auto}
}
`;

/** The hub's icon (src/hub/ui/styles.ts serves it; this layer does not import the hub). */
const ICON_PATH = "/hub/assets/favicon.svg";

export function renderDocsPage(doc: Json): Html {
  const operations = collectOperations(doc);
  const info = doc.info ?? {};
  const tags = [...((doc.tags ?? []) as Json[]).map((t) => String(t.name)), ...operations.flatMap((op) => op.tags)].filter((t, i, all) => all.indexOf(t) === i);
  const tagged = tags.map((tag) => ({
    tag,
    description: ((doc.tags ?? []) as Json[]).find((t) => t.name === tag)?.description,
    ops: operations.filter((op) => op.tags[0] === tag),
  }));
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${info.title} reference</title>
<link rel="icon" href="${ICON_PATH}" type="image/svg+xml">
<style>${raw(STYLE)}</style>
</head>
<body><main>
<h1>${info.title}</h1>
<p class="muted">Version ${info.version} · OpenAPI ${doc.openapi} · base URL <code>${doc.servers?.[0]?.url ?? ""}</code> · machine-readable: <a href="openapi.json"><code>openapi.json</code></a></p>
${paragraphs(info.description)}
<h2>Authentication</h2>
<table><tr><th>Scheme</th><th>Description</th></tr>
${Object.entries<Json>(doc.components?.securitySchemes ?? {}).map(([name, scheme]) => html`<tr><td><code>${name}</code> (${scheme.type} ${scheme.scheme ?? ""})</td><td>${inline(scheme.description ?? "")}</td></tr>`)}
</table>
<h2>Operations</h2>
<nav>${tagged
    .filter((t) => t.ops.length)
    .map(
      (t) =>
        html`<h3>${t.tag}</h3><ul>${t.ops.map((op) => html`<li><a href="#${op.operationId}"><span class="m ${op.method}">${op.method.toUpperCase()}</span> <code>${op.path}</code></a> ${op.summary}</li>`)}</ul>`,
    )}</nav>
${tagged.filter((t) => t.ops.length).map((t) => html`<h2>${t.tag}</h2>${paragraphs(t.description)}${t.ops.map((op) => renderOperation(doc, op))}`)}
<h2>Errors</h2>
<p>Every error body is <code>{"error":{"code","message","details?","requestId?"}}</code>; <code>details</code> lists <code>{path, message}</code> per invalid field, and a 500 carries the <code>requestId</code>. Each code always comes with the same status:</p>
<table><tr><th>Code</th><th>Status</th></tr>
${Object.entries(codeToStatus).map(([code, status]) => html`<tr><td><code>${code}</code></td><td>${status}</td></tr>`)}
</table>
</main></body></html>`;
}

interface Operation {
  method: string;
  path: string;
  operationId: string;
  summary: string;
  tags: string[];
  op: Json;
}

function collectOperations(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (op)
        out.push({
          method,
          path,
          operationId: op.operationId ?? `${method}-${path}`,
          summary: op.summary ?? "",
          tags: op.tags?.length ? op.tags : ["Other"],
          op,
        });
    }
  }
  return out;
}

function renderOperation(doc: Json, { method, path, operationId, summary, op }: Operation): Html {
  const params = (op.parameters ?? []) as Json[];
  const media = op.requestBody?.content?.["application/json"] as Json | undefined;
  const responses = Object.entries<Json>(op.responses ?? {}).map(([status, r]) => [status, resolve(doc, r) as Json] as const);
  return html`<section class="op" id="${operationId}">
<h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${path}</code></h3>
<p><strong>${summary}</strong> <span class="muted">(operationId <code>${operationId}</code>; ${authOf(op.security)}${op["x-required-scope"] ? html`; key scope <code>${op["x-required-scope"]}</code>` : ""})</span></p>
${paragraphs(op.description)}
${
  params.length
    ? html`<h4>Parameters</h4><table><tr><th>Name</th><th>In</th><th>Required</th><th>Description</th><th>Example</th></tr>
${params.map((p) => html`<tr><td><code>${p.name}</code></td><td>${p.in}</td><td>${p.required ? "yes" : "no"}</td><td>${inline(p.description ?? p.schema?.description ?? "")}${enumOf(p.schema)}</td><td>${p.example === undefined ? "" : html`<code>${String(p.example)}</code>`}</td></tr>`)}</table>`
    : ""
}
${media?.schema ? renderBody(resolve(doc, media.schema)) : ""}
${media ? examplesOf("Request example", media) : ""}
<h4>Responses</h4>
<table><tr><th>Status</th><th>Description</th></tr>
${responses.map(([status, r]) => html`<tr><td>${status}</td><td>${inline(String(r.description ?? "").replace(/^\d{3}: /, ""))}${Object.entries<Json>(r.content ?? {}).map(([type, m]) => html`${type === "application/json" ? "" : html` <span class="muted">(${type})</span>`}${examplesOf("Example", m)}`)}</td></tr>`)}
</table>
</section>`;
}

function authOf(security: Json[] | undefined): string {
  if (!security || security.length === 0) return "public";
  const ways = security.map((s) => Object.keys(s).join(" + ") || "the key in the path");
  return `authentication: ${ways.join(" or ")}`;
}

/** Each example of a media type, folded away, as JSON. */
function examplesOf(label: string, media: Json): Html | string {
  const examples = Object.entries<Json>(media.examples ?? {}).map(([name, e]) => [e.summary ?? name, e.value] as const);
  if (media.example !== undefined) examples.push(["", media.example]);
  return html`${examples.map(([name, value]) => html`<details><summary>${label}${name ? `: ${name}` : ""}</summary><pre>${JSON.stringify(value, null, 2)}</pre></details>`)}`;
}

/** Field table for an object body (the common case), with the full schema folded away below it. */
function renderBody(schema: Json): Html {
  const props = Object.entries<Json>(schema.properties ?? {});
  const required = new Set<string>(schema.required ?? []);
  return html`<h4>Request body</h4>
${
  props.length
    ? html`<table><tr><th>Field</th><th>Type</th><th>Required</th><th>Description</th></tr>
${props.map(([name, p]) => html`<tr><td><code>${name}</code></td><td>${typeOf(p)}</td><td>${required.has(name) ? "yes" : "no"}</td><td>${inline(p.description ?? "")}${enumOf(p)}</td></tr>`)}</table>`
    : html`<p>${typeOf(schema)}</p>`
}
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

/** Text with `code` spans and **bold** runs, escaped. */
function inline(text: string): Html {
  const parts = text.split("`");
  return html`${parts.map((part, i) => (i % 2 === 1 ? html`<code>${part}</code>` : bold(part)))}`;
}

function bold(text: string): Html {
  const parts = text.split("**");
  return html`${parts.map((part, i) => (i % 2 === 1 ? html`<strong>${part}</strong>` : html`${part}`))}`;
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
// biome-ignore lint/suspicious/noExplicitAny: a resolved node is any part of the document
function resolve(doc: Json, node: unknown, depth = 0): any {
  if (depth > 8 || node === null || typeof node !== "object") return node;
  if (Array.isArray(node)) return node.map((n) => resolve(doc, n, depth + 1));
  const ref = (node as Json).$ref;
  if (typeof ref === "string" && ref.startsWith("#/")) {
    const target = ref
      .slice(2)
      .split("/")
      // biome-ignore lint/suspicious/noExplicitAny: a JSON pointer walks untyped JSON
      .reduce<any>((at, key) => at?.[key], doc);
    return resolve(doc, target, depth + 1);
  }
  return Object.fromEntries(Object.entries(node as Json).map(([k, v]) => [k, resolve(doc, v, depth + 1)]));
}
