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
 * app's access log redacts paths.
 *
 * @example
 * app.route("/api/qr-code", createQrRoutes());
 */
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { authenticateApiKey, bearerToken, requireAuth } from "../http/auth";
import type { AppEnv } from "../http/env";
import { invalidField } from "../http/errors";
import { parseWith, readJson } from "../http/json";
import { NoQuerySchema, parseQuery } from "../http/validate";
import { rateLimit } from "../http/rate-limit";
import { isHttpUrl } from "./payloads";
import { DecodeRequestSchema, DEFAULT_SIZE, GenerateQuerySchema, parseGenerateRequest, type Design } from "./schemas";
import { decodeQrCode, generateQrCode, pngDataUrl } from "./service";
import { sha256Hex } from "../lib/encoding";

/** The path carries a key: only the caller's own cache may keep the image, for a day. */
const GET_CACHE_CONTROL = "private, max-age=86400";

/** Authenticates the `{apiKey}` path segment as an API key. */
function pathKeyAuth(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("userId", await authenticateApiKey(c.var.services, c.req.param("apiKey") ?? ""));
    c.set("authKind", "api_key");
    await next();
  };
}

/** A Bearer header when there is one (then the path segment is not used), else the path key. */
function bearerOrPathKeyAuth(): MiddlewareHandler<AppEnv> {
  const bearer = requireAuth();
  const path = pathKeyAuth();
  return (c, next) => (bearerToken(c.req.header("authorization")) !== null ? bearer(c, next) : path(c, next));
}

/** The GET request as a generate request: type url or text from the path, design from the query. */
function getRequest(c: Context<AppEnv>) {
  const text = c.req.param("text") ?? "";
  if (text.trim() === "") throw invalidField("text", "must not be empty: put the URL-encoded text after the key");
  // An unencoded URL's own query string lands here; say so rather than encode half the URL.
  const query = parseQuery(c, GenerateQuerySchema, { unknownHint: "if it belongs to the text, URL-encode the text" });
  const design: Design = {
    size: query.size ?? DEFAULT_SIZE,
    fgColor: query.fgColor ?? "#000000",
    bgColor: query.bgColor ?? "#FFFFFF",
    logoSizeRatio: 0.2,
    isTransparent: query.isTransparent ?? false,
  };
  if (text.length > 7089) throw invalidField("text", "must be at most 7089 characters");
  return isHttpUrl(text) ? { type: "url" as const, value: text, ...design } : { type: "text" as const, value: text, ...design };
}

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
export function createQrRoutes(): Hono<AppEnv> {
  const router = new Hono<AppEnv>();

  router.get("/generate/:apiKey/:text{.+}", pathKeyAuth(), rateLimit("qr"), async (c) => {
    const result = await generateQrCode(c.var.services, c.var.userId, getRequest(c));
    const etag = `"${await shortHash(result.png)}"`;
    c.header("Cache-Control", GET_CACHE_CONTROL);
    c.header("Referrer-Policy", "no-referrer");
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Content-Disposition", 'inline; filename="qr-code.png"');
    c.header("ETag", etag);
    applyWarnings(c, result.warnings);
    if (c.req.header("if-none-match")?.split(/\s*,\s*/).includes(etag)) return c.body(null, 304);
    return c.body(result.png as Uint8Array<ArrayBuffer>, 200, { "Content-Type": "image/png" });
  });

  router.get("/generate-base64/:apiKey/:text{.+}", bearerOrPathKeyAuth(), rateLimit("qr"), async (c) => {
    const result = await generateQrCode(c.var.services, c.var.userId, getRequest(c));
    c.header("Cache-Control", GET_CACHE_CONTROL);
    c.header("Referrer-Policy", "no-referrer");
    c.header("Vary", "Authorization");
    applyWarnings(c, result.warnings);
    return c.json({ data: { qrCodeDataUrl: pngDataUrl(result.png) } });
  });

  router.post("/generate", requireAuth(), rateLimit("qr"), async (c) => {
    parseQuery(c, NoQuerySchema);
    const request = parseGenerateRequest(await readJson(c));
    const result = await generateQrCode(c.var.services, c.var.userId, request);
    const data: { qrCodeDataUrl: string; warnings?: string[] } = { qrCodeDataUrl: pngDataUrl(result.png) };
    if (result.warnings.length) data.warnings = result.warnings;
    return c.json({ data });
  });

  router.post("/decode", requireAuth(), rateLimit("qr"), async (c) => {
    parseQuery(c, NoQuerySchema);
    const request = parseWith(DecodeRequestSchema, await readJson(c));
    return c.json({ data: await decodeQrCode(c.var.services, c.var.userId, request) });
  });

  return router;
}

async function shortHash(bytes: Uint8Array): Promise<string> {
  return (await sha256Hex(bytes)).slice(0, 24);
}
