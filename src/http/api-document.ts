/**
 * The API's one OpenAPI 3.1 document, served at `GET /openapi.json`, and its reference page at `GET /docs`.
 *
 * How it is assembled: every operation is a `createRoute` on an `OpenAPIHono` router, and the app is an
 * `OpenAPIHono` too, so `app.route(prefix, router)` copies each router's definitions into the app's registry
 * with the mount prefix (areas A /api/qr-code, B /api/image, C /api/v1/social), beside the app's own
 * `GET /` and `GET /health`. The document is generated from that registry on the first request for a base
 * URL and kept. Hono's pattern parameters (`{text{[\s\S]+}}`, a parameter that may hold slashes) are written as
 * plain `{text}` in the document.
 *
 * Not in the document, on purpose: they are plain Hono routers, so nothing of theirs can slip in.
 * - `/hub`: HTML pages for people signed in with a session cookie, not an API.
 * - `/files`: the stored images that answers link to (`url`, `imageUrl`, ...); addresses, not operations.
 * - `/sandbox`: the platform fake for development and tests; off in production.
 * - `/api/internal`: the queue's signed delivery callbacks, called by the queue only.
 * - `/_admin`: the Node server's admin command, for the host's CLI with the admin token.
 * - the two documents themselves, and the former per-area document paths, which answer 301 here.
 *
 * @example
 * const app = new OpenAPIHono<AppEnv>();
 * app.route("/api/qr-code", createQrRoutes());
 * mountApiDocument(app); // GET /openapi.json, GET /docs
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Handler } from "hono";
import type { Config } from "../config";
import { renderDocsPage } from "./docs-page";
import type { AppEnv } from "./env";
import { SERVICE } from "./front-door";
import { ErrorSchema } from "./openapi";
import { CLOSED_INPUT_RULE } from "./validate";

export const OPENAPI_PATH = "/openapi.json";
export const REFERENCE_PATH = "/docs";

/**
 * The handler of a former document path: 301 to where it lives now.
 *
 * @example
 * router.get("/openapi.json", movedTo(OPENAPI_PATH));
 */
export function movedTo(path: string): Handler {
  return (c) => c.redirect(path, 301);
}

/** `/a/{text{[\s\S]+}}` (Hono's pattern parameter) -> `/a/{text}`. */
export function documentPath(path: string): string {
  return path.replace(/\{([A-Za-z_]\w*)\{[^/]*\}\}/g, "{$1}");
}

function description(limits: Config["rateLimits"]): string {
  return [
    "QR codes (area A), product photography (area B) and social publishing (area C) over HTTP: one document for the whole API.",
    "**Authentication.** `Authorization: Bearer <API_KEY>`, with a key made in the hub's key-management area; area C also accepts an identity-provider ID token. Keys belong on your server. The QR GET operations take the key as a path segment instead (`{apiKey}`: a secret, so the URL is one too); generate-base64 also accepts the Bearer header. `GET /`, `GET /health` and area B's catalogue are public.",
    "**Errors.** Every error is `{error:{code, message, details?, requestId?}}`: `code` is a stable UPPER_SNAKE name with a fixed status, `details` names each invalid field (422), and a 500 carries the `requestId` to quote.",
    `**Limits.** Requests per user and minute on this deployment: QR ${limits.qr}; product photography ${limits.photo} generations and ${limits.photoRead} job polls; social publishing ${limits.socialRead} reads and ${limits.socialWrite} writes, shared by all the user's keys. Over a limit: 429 with \`Retry-After\` seconds. Area C answers are never cached (\`Cache-Control: no-store\`).`,
    CLOSED_INPUT_RULE,
    "**Not described here:** the web hub (`/hub`, HTML pages for people), stored files (`/files`, the addresses that answers link to), the development sandbox (`/sandbox`) and internal queue callbacks (`/api/internal`).",
  ].join("\n\n");
}

/**
 * The document for this deployment: every operation registered on `app` (and the routers it mounted).
 *
 * @example
 * apiDocument(app, config).paths["/api/qr-code/decode"].post.operationId; // "decodeQr"
 */
export function apiDocument(app: OpenAPIHono<AppEnv>, config: Pick<Config, "publicBaseUrl" | "rateLimits">) {
  const doc = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: { title: "Shopkit API", version: SERVICE.version, description: description(config.rateLimits) },
    servers: [{ url: config.publicBaseUrl }],
    tags: [
      { name: "QR codes", description: "Area A: QR codes for URLs, text, Wi-Fi, e-mail, contact cards and payments; decoding from an image." },
      { name: "Product photography", description: "Area B: scene templates, image models with prices, and product-photo generation." },
      { name: "Accounts", description: "Area C: accounts connected in the social hub." },
      { name: "Media", description: "Area C: images prepared for posting." },
      { name: "Posts", description: "Area C: idempotent creation, delivery status, listing and cancellation." },
      {
        name: "Webhooks",
        description:
          "Signed status messages (Standard Webhooks) to your endpoints, instead of polling: the endpoints, their deliveries, and in the document's `webhooks` section every event's message.",
      },
      { name: "Service", description: "The service itself: what it is and whether it is healthy." },
    ],
  });
  const paths = Object.fromEntries(Object.entries(doc.paths ?? {}).map(([path, item]) => [documentPath(path), item]));
  return withDefaultedRequestBodiesInline({ ...doc, paths });
}

type JsonNode = { [key: string]: unknown };
const COMPONENT_SCHEMA = "#/components/schemas/";

/**
 * The document with every request body whose schema has a `default` (at any depth) written in place instead of
 * as a `$ref` to a shared component schema; a component no reference is left to is dropped.
 *
 * Why: a defaulted request field is optional (it is not in `required`), but generators read a `default` in a
 * shared component as "always present in an answer" and type the field as required there (openapi-typescript's
 * default `defaultNonNullable` does, except under `requestBody` and `parameters`). Written in place under the
 * operation's `requestBody`, the schema reads as input to every generator, and `{ type: "url", value }` is a
 * whole QR request. Components without defaults stay shared.
 */
export function withDefaultedRequestBodiesInline<D extends { paths?: object; components?: { schemas?: object } }>(doc: D): D {
  const schemas = (doc.components?.schemas ?? {}) as Record<string, unknown>;
  const defaulted = new Map<string, boolean>();
  const refName = (node: JsonNode) =>
    typeof node.$ref === "string" && node.$ref.startsWith(COMPONENT_SCHEMA) ? node.$ref.slice(COMPONENT_SCHEMA.length) : undefined;
  // Walks schemas: `properties` maps names to schemas (a field may be called "default"); examples are values.
  const hasDefault = (node: unknown): boolean => {
    if (Array.isArray(node)) return node.some(hasDefault);
    if (!node || typeof node !== "object") return false;
    const name = refName(node as JsonNode);
    if (name !== undefined) {
      if (!defaulted.has(name)) {
        defaulted.set(name, false); // a schema that refers back to itself adds nothing on the way round
        defaulted.set(name, hasDefault(schemas[name]));
      }
      return defaulted.get(name)!;
    }
    return Object.entries(node).some(([key, value]) =>
      key === "default"
        ? true
        : key === "properties"
          ? Object.values(value as JsonNode).some(hasDefault)
          : key !== "examples" && key !== "example" && hasDefault(value),
    );
  };
  const inline = (node: unknown, trail: string[]): unknown => {
    if (Array.isArray(node)) return node.map((item) => inline(item, trail));
    if (!node || typeof node !== "object") return node;
    const name = refName(node as JsonNode);
    if (name !== undefined) return hasDefault(node) && !trail.includes(name) ? inline(schemas[name], [...trail, name]) : node;
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, key === "examples" || key === "example" ? value : inline(value, trail)]));
  };

  const paths = Object.fromEntries(
    Object.entries(doc.paths ?? {}).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item as Record<string, JsonNode>).map(([method, op]) => {
          const content = (op?.requestBody as JsonNode | undefined)?.content as Record<string, JsonNode> | undefined;
          if (!content || !Object.values(content).some((media) => hasDefault(media.schema))) return [method, op];
          const inlined = Object.fromEntries(Object.entries(content).map(([type, media]) => [type, { ...media, schema: inline(media.schema, []) }]));
          return [method, { ...op, requestBody: { ...(op.requestBody as JsonNode), content: inlined } }];
        }),
      ),
    ]),
  );
  const withPaths = { ...doc, paths };
  const inlinedAway = new Set([...defaulted].filter(([, yes]) => yes).map(([name]) => name));
  if (inlinedAway.size === 0) return withPaths;
  // What is still referenced: from the document outside the component schemas, and from every kept schema.
  const referenced = (node: unknown) => [...JSON.stringify(node).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
  const reached = new Set(referenced({ ...withPaths, components: { ...withPaths.components, schemas: {} } }));
  const pending = Object.keys(schemas).filter((name) => !inlinedAway.has(name) || reached.has(name));
  for (let name = pending.pop(); name !== undefined; name = pending.pop())
    for (const next of referenced(schemas[name])) if (!reached.has(next)) reached.add(next), pending.push(next);
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => !inlinedAway.has(name) || reached.has(name)));
  return { ...withPaths, components: { ...withPaths.components, schemas: kept } };
}

/**
 * Registers the API-wide components and `GET /openapi.json` and `GET /docs` on the app. Call it once every
 * router is mounted (the document is built on the first request, so the order only matters for routing).
 */
export function mountApiDocument(app: OpenAPIHono<AppEnv>): void {
  const registry = app.openAPIRegistry;
  registry.register("Error", ErrorSchema);
  registry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description:
      "An API key from the key-management area (`Authorization: Bearer <API_KEY>`); area C also accepts an identity-provider ID token. " +
      "A key has scopes: every area (the default) or only some of `qr`, `photo` and `social`. Each operation names the scope it needs in `x-required-scope`; " +
      "a key without it gets 403 INSUFFICIENT_SCOPE. A key shown in public pages (an `<img>` tag's URL) should have the `qr` scope alone.",
  });

  let built: { key: string; doc: ReturnType<typeof apiDocument> } | undefined;
  const documentFor = (config: Config) => {
    const key = JSON.stringify([config.publicBaseUrl, config.rateLimits]);
    if (built?.key !== key) built = { key, doc: apiDocument(app, config) };
    return built.doc;
  };
  app.get(OPENAPI_PATH, (c) => c.json(documentFor(c.get("services").config)));
  app.get(REFERENCE_PATH, (c) => c.html(renderDocsPage(documentFor(c.get("services").config))));
  // A person's page: typed or linked with a slash added, it is still the page (API paths take none).
  app.get(`${REFERENCE_PATH}/`, (c) => c.redirect(REFERENCE_PATH, 301));
}
