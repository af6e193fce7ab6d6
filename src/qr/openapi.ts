/**
 * Area A's operations as `createRoute` definitions: the one description the validators and the OpenAPI
 * document are built from, and each operation's middleware. The GET paths end in `{text{[\s\S]+}}`, Hono's
 * pattern for a parameter that may hold slashes and line breaks (`.` would not match an encoded `%0A`, and the
 * route would be a 404); the OpenAPI document writes it `{text}`. Every operation is `authenticated`: its key
 * (in the path for the GETs) and the `qr` rate limit are checked before its own middleware and validation.
 *
 * @example
 * router.openapi(qrRoutes.decode, handlers.decode, validationHook(qrRoutes.decode));
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { etag } from "hono/etag";
import type { AppEnv } from "../http/env";
import { inlineImageBody, type InlineImageField } from "../http/inline-images";
import { authenticated, errorResponse, internalError, json, type Access, type ErrorExample } from "../http/openapi";
import { NoQuerySchema, parseQuery } from "../http/validate";
import { DecodeRequestSchema, GenerateQuerySchema, GenerateRequestSchema, QrCodeResponseSchema, QrDecodeResponseSchema, QrPathSchema } from "./schemas";

export const QR_BASE_PATH = "/api/qr-code";

const TAG = "QR codes";
const bearer = [{ bearerAuth: [] }];
/** A Bearer header, or none (then the key in the path authenticates). */
const bearerOrNone: Array<Record<string, string[]>> = [{ bearerAuth: [] }, {}];

/** A real answer: the code for "hello" at size 64 (GET /generate-base64/{apiKey}/hello?size=64). */
const PNG_DATA_URL =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAEAAAABAAQMAAACQp+OdAAAABlBMVEX///8AAABVwtN+AAAAkUlEQVR4nL2QsRXDIAxEUYpkBWjCavYWTocasoLUmNVME69gN1HowtEnKij+e/p3wv1joj3ZDnf5Ek8rJd+TcOZHESRcR7IGJJ5SQE80Vcxyjo729B7Nk5960upwWnpynYtE8Ny9owRbN60qYG75rxm2ovFeh9v5vWCfU/cN0ttvUN2QFAnD7ZkE+kQrip6fzweSODkNU2ci0gAAAABJRU5ErkJggg==";

const imageHeaders = z.object({
  "Cache-Control": z.string().openapi({ description: "`private, max-age=86400`: the URL holds a key, so only the caller's own cache keeps it." }),
  "X-QR-Warnings": z.string().optional().openapi({ description: "What was adjusted to keep the code scannable, `|`-separated; absent when nothing was." }),
});

const unauthorized = (message: string) => errorResponse("Missing, malformed or revoked API key.", ["UNAUTHORIZED", message]);
const rateLimited = errorResponse(
  "The per-user QR budget is used up, or too much image work is waiting; wait Retry-After seconds.",
  ["RATE_LIMITED", "Rate limit of 120 requests per minute reached; retry in 12 s."],
  ["RATE_LIMITED", "Too many image jobs at once for this key: 2 running and 4 waiting; retry in 3 s."],
);
const tooLarge = (description: string) => errorResponse(description, ["PAYLOAD_TOO_LARGE", "The request body is larger than 20 MB."]);
const notJson = errorResponse("The body is not JSON.", ["UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with Content-Type: application/json."]);
const badJson = errorResponse("The body is empty or not valid JSON.", ["INVALID_JSON", "The request body is not valid JSON."]);

const getInvalid: ErrorExample[] = [["VALIDATION_FAILED", "size: must be at least 64", [{ path: "size", message: "must be at least 64" }]]];

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

const withPathKey: Access = { scope: "qr", rateLimit: "qr", key: "path" };
const withBearerOrPathKey: Access = { scope: "qr", rateLimit: "qr", key: "bearer-or-path" };
const withBearer: Access = { scope: "qr", rateLimit: "qr" };

const GET_DESCRIPTION =
  "The key is the path segment after the operation name. Design comes from the query string (`size`, `fgColor`, `bgColor`, `isTransparent`), each once; any other parameter is 422 naming it, with the hint to URL-encode the text when an unencoded URL's own query string is the cause.";

export const qrRoutes = {
  generatePng: authenticated(
    withPathKey,
    createRoute({
      method: "get",
      path: "/generate/{apiKey}/{text{[\\s\\S]+}}",
      // Hono's etag(): 304 when If-None-Match has the PNG's strong ETag, which the handler sets (its digest).
      middleware: [etag()],
      operationId: "generateQrPng",
      tags: [TAG],
      summary: "QR code as a PNG image",
      description: `Answers the PNG itself (not JSON), so the URL can be an image source where it stays private. ${GET_DESCRIPTION} A strong ETag allows 304 answers.`,
      security: [],
      request: { params: QrPathSchema, query: GenerateQuerySchema },
      responses: {
        200: {
          description: "The QR code.",
          headers: imageHeaders.extend({ ETag: z.string().openapi({ description: "Strong validator of the image; send it back in If-None-Match." }) }),
          content: { "image/png": { schema: { type: "string", contentMediaType: "image/png" } } },
        },
        304: { description: "Not modified: the If-None-Match ETag is the image's." },
        401: unauthorized("The API key is not valid or has been revoked."),
        422: errorResponse("Invalid text or query parameter; `details` names it.", ...getInvalid, [
          "VALIDATION_FAILED",
          "id: is not a known query parameter; this operation takes size, fgColor, bgColor, isTransparent (if it belongs to the text, URL-encode the text)",
          [
            {
              path: "id",
              message:
                "is not a known query parameter; this operation takes size, fgColor, bgColor, isTransparent (if it belongs to the text, URL-encode the text)",
            },
          ],
        ]),
        429: rateLimited,
        500: internalError,
      },
    }),
  ),

  generateBase64: authenticated(
    withBearerOrPathKey,
    createRoute({
      method: "get",
      path: "/generate-base64/{apiKey}/{text{[\\s\\S]+}}",
      operationId: "generateQrBase64",
      tags: [TAG],
      summary: "QR code as a data URI (JSON)",
      description: `Answers \`{data:{qrCodeDataUrl}}\`. With an \`Authorization: Bearer\` header the header's key is used and the path segment is ignored (send \`-\`); without one, the path key. ${GET_DESCRIPTION}`,
      security: bearerOrNone,
      request: { params: QrPathSchema, query: GenerateQuerySchema },
      responses: {
        200: {
          description: "The QR code as a PNG data URI.",
          headers: imageHeaders,
          content: json(QrCodeResponseSchema, { hello: { summary: "The text hello", value: { data: { qrCodeDataUrl: PNG_DATA_URL } } } }),
        },
        401: unauthorized("The API key is not valid or has been revoked."),
        422: errorResponse("Invalid text or query parameter; `details` names it.", ...getInvalid),
        429: rateLimited,
        500: internalError,
      },
    }),
  ),

  generate: authenticated(
    withBearer,
    createRoute({
      method: "post",
      path: "/generate",
      middleware: [closedJsonBody([{ path: ["logoUrl"], kind: "image-or-url" }])],
      operationId: "generateQr",
      tags: [TAG],
      summary: "QR code for a URL, text, Wi-Fi, e-mail, contact card or payment",
      description:
        "Builds the payload for `type` to the standard phone scanners read (Wi-Fi `WIFI:`, e-mail `mailto:`, vCard 3.0, UPI `upi://pay`), draws it with the design fields and an optional centred logo (fetched from a public https URL or given as a data URI), and checks that the result scans. Answers `{data:{qrCodeDataUrl, warnings?}}` for every type.",
      security: bearer,
      request: {
        query: NoQuerySchema,
        body: {
          required: true,
          content: json(GenerateRequestSchema, {
            url: { summary: "A URL", value: { type: "url", value: "https://example.com/menu", size: 512 } },
            wifi: { summary: "Wi-Fi credentials", value: { type: "wifi", ssid: "Cafe Guest", password: "coffee-2024", encryption: "WPA" } },
            vcard: {
              summary: "A contact card, blue on white",
              value: { type: "vcard", firstName: "Jane", lastName: "Doe", organization: "Acme", phoneWork: "+1 555 0100", fgColor: "#1A73E8" },
            },
            upi: { summary: "A payment request", value: { type: "upi", upiId: "shop@okbank", payeeName: "Corner Shop", amount: 249.5, note: "Order 1042" } },
          }),
        },
      },
      responses: {
        200: {
          description: "The QR code as a PNG data URI, and what was adjusted to keep it scannable.",
          content: json(QrCodeResponseSchema, {
            plain: { summary: "Nothing adjusted", value: { data: { qrCodeDataUrl: PNG_DATA_URL } } },
            logo: {
              summary: "The logo was reduced",
              value: {
                data: {
                  qrCodeDataUrl: PNG_DATA_URL,
                  warnings: [
                    "logoSizeRatio 0.4 would hide too much of this code to scan reliably; the logo was reduced to 0.28 of the code's width. A shorter payload or a larger size leaves room for a bigger logo.",
                  ],
                },
              },
            },
          }),
        },
        400: badJson,
        401: unauthorized("Missing or invalid credentials: send Authorization: Bearer <API key>."),
        413: tooLarge("The body is over 20 MB, or the logo over 10 MB."),
        415: notJson,
        422: errorResponse(
          "Invalid or unknown fields (`details` names each), a logo that cannot be used, or colours that do not scan (QR_NOT_SCANNABLE).",
          ["VALIDATION_FAILED", "lastName: is required", [{ path: "lastName", message: "is required" }]],
          ["QR_NOT_SCANNABLE", "The generated code did not decode in our scan check; try darker or more contrasting colours."],
        ),
        429: rateLimited,
        500: internalError,
      },
    }),
  ),

  decode: authenticated(
    withBearer,
    createRoute({
      method: "post",
      path: "/decode",
      middleware: [closedJsonBody([{ path: ["base64"], kind: "base64" }])],
      operationId: "decodeQr",
      tags: [TAG],
      summary: "Read a QR code from an image",
      description: "Reads the code in a JPEG, PNG or WebP image, fetched from a public https URL or given inline. Answers `{data:{decodedText}}`.",
      security: bearer,
      request: {
        query: NoQuerySchema,
        body: {
          required: true,
          content: json(DecodeRequestSchema, {
            url: { summary: "An image URL", value: { url: "https://cdn.example.com/poster.jpg" } },
            base64: { summary: "An inline image", value: { base64: PNG_DATA_URL } },
          }),
        },
      },
      responses: {
        200: {
          description: "The decoded text.",
          content: json(QrDecodeResponseSchema, { text: { summary: "A URL was encoded", value: { data: { decodedText: "https://example.com/menu" } } } }),
        },
        400: badJson,
        401: unauthorized("Missing or invalid credentials: send Authorization: Bearer <API key>."),
        413: tooLarge("The body is over 20 MB, or the image over 10 MB."),
        415: notJson,
        422: errorResponse(
          "Not exactly one of url or base64, an image that cannot be read or fetched, or no code in it.",
          [
            "VALIDATION_FAILED",
            "url: give exactly one of url or base64 (none was given)",
            [{ path: "url", message: "give exactly one of url or base64 (none was given)" }],
          ],
          [
            "QR_NOT_FOUND",
            "No QR code could be read in this image. Send a sharper or larger picture with the whole code visible, including the white margin around it.",
          ],
          ["INVALID_IMAGE", "The image data is corrupt or uses a feature we cannot decode; re-save it as a standard JPEG, PNG or WebP."],
          ["INVALID_IMAGE_URL", "The image URL answered HTTP 404; it must answer 200 with the image."],
        ),
        429: rateLimited,
        500: internalError,
      },
    }),
  ),
};
