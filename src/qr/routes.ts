/**
 * Area A routes, mounted at /api/qr-code:
 * - GET  /generate/{apiKey}/{text}         the PNG itself (key in the path)
 * - GET  /generate-base64/{apiKey}/{text}  `{data:{qrCodeDataUrl}}` (key in the path, or a Bearer header)
 * - POST /generate                         `{data:{qrCodeDataUrl, warnings?}}` (Bearer)
 * - POST /decode                           `{data:{decodedText}}` (Bearer)
 *
 * GET also takes `size`, `fgColor`, `bgColor` (the `#` may be left out) and `isTransparent` from the query
 * string, each once; any other parameter is 422 (src/http/validate.ts), as is an unknown body field of the
 * POST routes, which take no query parameters. Each operation is its definition (openapi.ts: schemas, access,
 * middleware), its handler (handlers.ts) and its validation hook, wired here.
 *
 * @example
 * app.route("/api/qr-code", createQrRoutes());
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../http/env";
import { invalidField } from "../http/errors";
import { validationHook } from "../http/validate";
import * as handlers from "./handlers";
import { qrRoutes } from "./openapi";
import { BLANK_TEXT, parseGenerateRequest } from "./schemas";

/** An unencoded URL's own query string lands in ours; say so rather than encode half the URL. */
const UNKNOWN_QUERY_HINT = "if it belongs to the text, URL-encode the text";

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

/** The GETs' hook: the query is validated before the path, yet a blank text is named first, the likelier mistake. */
const getHook = (route: typeof qrRoutes.generatePng | typeof qrRoutes.generateBase64) =>
  validationHook(
    route,
    (result, c) => {
      if (result.target === "query" && (c.req.param("text") ?? "").trim() === "") throw invalidField("text", BLANK_TEXT);
    },
    { unknownHint: UNKNOWN_QUERY_HINT },
  );

/**
 * The area A router; mount it at /api/qr-code.
 *
 * @example
 * app.route("/api/qr-code", createQrRoutes());
 */
export function createQrRoutes(): OpenAPIHono<AppEnv> {
  const router = new OpenAPIHono<AppEnv>({ defaultHook: validationHook() });
  router.openapi(qrRoutes.generatePng, handlers.generatePng, getHook(qrRoutes.generatePng));
  router.openapi(qrRoutes.generateBase64, handlers.generateBase64, getHook(qrRoutes.generateBase64));
  router.openapi(
    qrRoutes.generate,
    handlers.generate,
    // A missing or unknown `type` gets one message listing the types rather than a union error.
    validationHook(qrRoutes.generate, (result) => {
      if (!result.success && result.target === "json") parseGenerateRequest((result as { data?: unknown }).data);
    }),
  );
  router.openapi(qrRoutes.decode, handlers.decode, validationHook(qrRoutes.decode));
  return router;
}
