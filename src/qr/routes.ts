/**
 * Area A routes, mounted at /api/qr-code:
 * - GET  /generate/{apiKey}/{text}         the PNG itself (key in the path)
 * - GET  /generate-base64/{apiKey}/{text}  `{data:{qrCodeDataUrl}}` (key in the path, or a Bearer header)
 * - POST /generate                         `{data:{qrCodeDataUrl, warnings?}}` (Bearer)
 * - POST /decode                           `{data:{decodedText}}` (Bearer)
 *
 * GET `{text}` is the URL-decoded rest of the path (slashes allowed), encoded as type url when it is an
 * absolute http(s) URL and as type text otherwise (the bits are the same; the type only decides the
 * validation). GET also takes `size`, `fgColor`, `bgColor` (the `#` may be left out) and `isTransparent`
 * from the query string, each once; any other parameter is 422 (src/http/validate.ts), as is an unknown body
 * field of the POST routes, which take no query parameters. The path key is never logged by this router; the
 * app's access log redacts paths. Every operation is a `createRoute` definition (openapi.ts): its schemas
 * validate the request and describe it in the API's OpenAPI document; auth and rate limits are route
 * middleware, so they run before validation, as before.
 *
 * @example
 * app.route("/api/qr-code", createQrRoutes());
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { etag } from "hono/etag";
import type { Context, MiddlewareHandler } from "hono";
import { authenticateApiKey, bearerToken, requestPage, requireAuth, unauthorized } from "../http/auth";
import { looksLikeApiKey } from "../http/api-keys";
import type { AppEnv } from "../http/env";
import { ApiError, invalidField } from "../http/errors";
import { inlineImageBody, type InlineImageField } from "../http/inline-images";
import { NoQuerySchema, parseQuery, validationHook } from "../http/validate";
import { rateLimit } from "../http/rate-limit";
import { qrRoutes } from "./openapi";
import { isHttpUrl } from "./payloads";
import { BLANK_TEXT, DEFAULT_SIZE, parseGenerateRequest, type Design } from "./schemas";
import { decodeQrCode, generateQrCode, pngDataUrl } from "./service";

/** The path carries a key: only the caller's own cache may keep the image, for a day. */
const GET_CACHE_CONTROL = "private, max-age=86400";

/** An unencoded URL's own query string lands in ours; say so rather than encode half the URL. */
const UNKNOWN_QUERY_HINT = "if it belongs to the text, URL-encode the text";

/**
 * Authenticates the `{apiKey}` path segment as an API key. A segment that is no key at all (a placeholder such
 * as `-` with the header forgotten) is told where the key goes, rather than that the key is not valid.
 */
function pathKeyAuth(orBearer: boolean): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const segment = c.req.param("apiKey") ?? "";
    if (!looksLikeApiKey(segment)) {
      throw unauthorized(`No API key in the path: put your API key in place of {apiKey}${orBearer ? ", or send Authorization: Bearer <API key>" : ""}.`);
    }
    c.set("userId", await authenticateApiKey(c.get("services"), segment, "qr", requestPage(c)));
    c.set("authKind", "api_key");
    await next();
  };
}

/** A Bearer header when there is one (then the path segment is not used), else the path key. */
function bearerOrPathKeyAuth(): MiddlewareHandler<AppEnv> {
  const bearer = requireAuth("qr");
  const path = pathKeyAuth(true);
  return (c, next) => (bearerToken(c.req.header("authorization")) !== null ? bearer(c, next) : path(c, next));
}

/**
 * Refuses a path text whose escapes are not UTF-8 (`%E0%A4`, `%FF`): Hono hands such a text over as it came,
 * which would encode the escapes themselves instead of what the caller meant. The text is the raw path from
 * the route's `{text}` segment on; a `%` not followed by two hex digits is a percent sign, as Hono reads it
 * (`100%`, typed in an address bar).
 */
function checkTextEncoding(c: Context<AppEnv>): void {
  const at = c.req.routePath.split("/").findIndex((segment) => segment.startsWith(":text"));
  if (at < 0) return;
  const raw = new URL(c.req.url).pathname.split("/").slice(at).join("/");
  try {
    decodeURIComponent(raw.replace(/%(?![0-9A-Fa-f]{2})/g, "%25"));
  } catch {
    throw invalidField("text", "is not valid percent-encoded UTF-8; encode the text with encodeURIComponent or an equivalent");
  }
}

type GetInput = { text: string; query: { size?: number; fgColor?: string; bgColor?: string; isTransparent?: boolean } };

/**
 * A QR GET whose text is missing: nothing after the key, or a text of "." or "..", which every URL parser
 * (the client's, then the server's) removes as a dot segment, taking the key with it for "..". Such a request
 * matches no route (the router is mounted at /api/qr-code); the app's 404 adds this hint.
 */
const GET_WITHOUT_TEXT = /^\/api\/qr-code\/generate(-base64)?(\/[^/]*)?\/?$/;
const GET_WITHOUT_TEXT_HINT =
  " A QR code GET is /api/qr-code/generate/{apiKey}/{text} (or generate-base64) with the URL-encoded text after the key;" +
  ' a text of "." or ".." cannot travel in a path (URLs drop those segments, encoded or not): send it with POST /api/qr-code/generate.';

/**
 * What the app's 404 adds for a request that matched no route: how to send a QR code's text when it looks like a
 * GET whose text went missing, else nothing.
 *
 * @example
 * qrNotFoundHint("GET", "/api/qr-code/generate/sk_abc/"); // " A QR code GET is …"
 */
export function qrNotFoundHint(method: string, path: string): string {
  return method === "GET" && GET_WITHOUT_TEXT.test(path) ? GET_WITHOUT_TEXT_HINT : "";
}

/**
 * The GET request as a generate request, checked by the same rules as the POST body (control characters,
 * lengths): type url or text from the path, design from the query.
 */
function getRequest({ text, query }: GetInput) {
  const design: Design = {
    size: query.size ?? DEFAULT_SIZE,
    fgColor: query.fgColor ?? "#000000",
    bgColor: query.bgColor ?? "#FFFFFF",
    logoSizeRatio: 0.2,
    isTransparent: query.isTransparent ?? false,
  };
  return parseGenerateRequest({ type: isHttpUrl(text) ? "url" : "text", value: text, ...design });
}

/** The GET routes take the content as the path's `{text}`: what is said about the request's `value` names it so. */
async function namingText<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof ApiError) || !err.details?.some((d) => d.path === "value")) throw err;
    const details = err.details.map((d) => (d.path === "value" ? { ...d, path: "text" } : d));
    throw new ApiError(err.code, err.message.replace(/^value: /, "text: "), { details, headers: err.headers });
  }
}

/**
 * The POST routes refuse in the order they always have: an unknown query parameter (422) before a body that
 * is not JSON (415) or is empty (400). The route's own query validator then finds nothing left to refuse.
 * A logo or an image to read given inline is decoded as the body streams in (src/http/inline-images.ts).
 */
const closedJsonBody = (images: readonly InlineImageField[]): MiddlewareHandler<AppEnv> => {
  const body = inlineImageBody(images);
  return async (c, next) => {
    parseQuery(c, NoQuerySchema);
    await body(c, next);
  };
};

function applyWarnings(c: Context<AppEnv>, warnings: string[]): void {
  // Header values must be one line of visible ASCII; our warnings are.
  if (warnings.length) c.header("X-QR-Warnings", warnings.join(" | "));
}

/**
 * The area A router; mount it at /api/qr-code.
 *
 * @example
 * app.route("/api/qr-code", createQrRoutes());
 */
export function createQrRoutes(): OpenAPIHono<AppEnv> {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: validationHook() });
  // The query is validated before the path, yet a blank text is named first: it is the likelier mistake.
  const getHook = (route: typeof qrRoutes.generatePng | typeof qrRoutes.generateBase64) =>
    validationHook(
      route,
      (result, c) => {
        if (result.target === "query" && (c.req.param("text") ?? "").trim() === "") throw invalidField("text", BLANK_TEXT);
      },
      { unknownHint: UNKNOWN_QUERY_HINT },
    );

  router.openapi(
    // Hono's etag(): a strong ETag from the PNG's digest, and 304 when If-None-Match has it.
    { ...qrRoutes.generatePng, middleware: [pathKeyAuth(false), rateLimit("qr"), etag()] },
    async (c) => {
      checkTextEncoding(c);
      const input = { text: c.req.valid("param").text, query: c.req.valid("query") };
      const result = await namingText(async () => generateQrCode(c.get("services"), c.get("userId"), getRequest(input)));
      c.header("Cache-Control", GET_CACHE_CONTROL);
      c.header("Content-Disposition", 'inline; filename="qr-code.png"');
      applyWarnings(c, result.warnings);
      return c.body(result.png as Uint8Array<ArrayBuffer>, 200, { "Content-Type": "image/png" }) as never;
    },
    getHook(qrRoutes.generatePng),
  );

  router.openapi(
    { ...qrRoutes.generateBase64, middleware: [bearerOrPathKeyAuth(), rateLimit("qr")] },
    async (c) => {
      checkTextEncoding(c);
      const input = { text: c.req.valid("param").text, query: c.req.valid("query") };
      const result = await namingText(async () => generateQrCode(c.get("services"), c.get("userId"), getRequest(input)));
      c.header("Cache-Control", GET_CACHE_CONTROL);
      c.header("Vary", "Authorization");
      applyWarnings(c, result.warnings);
      return c.json({ data: { qrCodeDataUrl: pngDataUrl(result.png) } }, 200) as never;
    },
    getHook(qrRoutes.generateBase64),
  );

  router.openapi(
    { ...qrRoutes.generate, middleware: [requireAuth("qr"), rateLimit("qr"), closedJsonBody([{ path: ["logoUrl"], kind: "image-or-url" }])] },
    async (c) => {
      const result = await generateQrCode(c.get("services"), c.get("userId"), c.req.valid("json"));
      const data: { qrCodeDataUrl: string; warnings?: string[] } = { qrCodeDataUrl: pngDataUrl(result.png) };
      if (result.warnings.length) data.warnings = result.warnings;
      return c.json({ data }, 200);
    },
    // A missing or unknown `type` gets one message listing the types rather than a union error.
    validationHook(qrRoutes.generate, (result) => {
      if (!result.success && result.target === "json") parseGenerateRequest((result as { data?: unknown }).data);
    }),
  );

  router.openapi(
    { ...qrRoutes.decode, middleware: [requireAuth("qr"), rateLimit("qr"), closedJsonBody([{ path: ["base64"], kind: "base64" }])] },
    async (c) => c.json({ data: await decodeQrCode(c.get("services"), c.get("userId"), c.req.valid("json")) }, 200),
    validationHook(qrRoutes.decode),
  );

  return router;
}
