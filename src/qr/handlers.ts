/**
 * Area A's handlers, one per operation of openapi.ts, each typed by its route (`RouteHandler<typeof route,
 * AppEnv>`): what it reads is what the route validated, and what it answers is a response the route declares.
 * The key and the rate limit were checked by the route's middleware before any of them runs.
 *
 * GET `{text}` is the URL-decoded rest of the path (slashes allowed), encoded as type url when it is an
 * absolute http(s) URL and as type text otherwise (the bits are the same; the type only decides the
 * validation). The path key is never logged here; the app's access log redacts paths.
 *
 * @example
 * router.openapi(qrRoutes.decode, decode, validationHook(qrRoutes.decode));
 */
import type { RouteHandler } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../http/env";
import { ApiError, invalidField } from "../http/errors";
import { toHex } from "../lib/encoding";
import type { qrRoutes } from "./openapi";
import { isHttpUrl } from "./payloads";
import { DEFAULT_SIZE, parseGenerateRequest, type Design } from "./schemas";
import { decodeQrCode, generateQrCode, pngDataUrl } from "./service";

/** The path carries a key: only the caller's own cache may keep the image, for a day. */
const GET_CACHE_CONTROL = "private, max-age=86400";

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

/** The code of a GET: the path's text with the query's design, refused where the text's escapes are not UTF-8. */
async function generateFromPath(c: Context<AppEnv>, input: GetInput) {
  checkTextEncoding(c);
  const result = await namingText(async () => generateQrCode(c.get("services"), c.get("userId"), getRequest(input)));
  c.header("Cache-Control", GET_CACHE_CONTROL);
  applyWarnings(c, result.warnings);
  return result;
}

function applyWarnings(c: Context<AppEnv>, warnings: string[]): void {
  // Header values must be one line of visible ASCII; our warnings are.
  if (warnings.length) c.header("X-QR-Warnings", warnings.join(" | "));
}

/**
 * Each PNG's strong ETag, the one Hono's etag() would make from the answer (its SHA-1 in hex, quoted), made
 * once per PNG: a kept code (service.ts) is the same bytes on every request, so etag() finds the header and
 * only compares it, without copying and hashing the body of each answer.
 */
const etags = new WeakMap<Uint8Array, string>();

async function pngEtag(png: Uint8Array): Promise<string> {
  let tag = etags.get(png);
  if (tag === undefined) {
    tag = `"${toHex(new Uint8Array(await crypto.subtle.digest("SHA-1", png as Uint8Array<ArrayBuffer>)))}"`;
    etags.set(png, tag);
  }
  return tag;
}

export const generatePng: RouteHandler<typeof qrRoutes.generatePng, AppEnv> = async (c) => {
  const result = await generateFromPath(c, { text: c.req.valid("param").text, query: c.req.valid("query") });
  c.header("ETag", await pngEtag(result.png));
  c.header("Content-Disposition", 'inline; filename="qr-code.png"');
  return c.body(result.png as Uint8Array<ArrayBuffer>, 200, { "Content-Type": "image/png" });
};

export const generateBase64: RouteHandler<typeof qrRoutes.generateBase64, AppEnv> = async (c) => {
  const result = await generateFromPath(c, { text: c.req.valid("param").text, query: c.req.valid("query") });
  c.header("Vary", "Authorization");
  return c.json({ data: { qrCodeDataUrl: pngDataUrl(result.png) } }, 200);
};

export const generate: RouteHandler<typeof qrRoutes.generate, AppEnv> = async (c) => {
  const result = await generateQrCode(c.get("services"), c.get("userId"), c.req.valid("json"));
  const data: { qrCodeDataUrl: string; warnings?: string[] } = { qrCodeDataUrl: pngDataUrl(result.png) };
  if (result.warnings.length) data.warnings = result.warnings;
  return c.json({ data }, 200);
};

export const decode: RouteHandler<typeof qrRoutes.decode, AppEnv> = async (c) =>
  c.json({ data: await decodeQrCode(c.get("services"), c.get("userId"), c.req.valid("json")) }, 200);
