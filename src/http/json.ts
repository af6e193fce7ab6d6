/**
 * JSON bodies: the contract says a non-JSON body is 415 and malformed JSON is 400 INVALID_JSON.
 * Hono's own json validator skips bodies whose Content-Type is not JSON, so routes read bodies through here
 * (or, with inline images, through src/http/inline-images.ts).
 *
 * @example
 * const body = parseWith(QrRequestSchema, await readJson(c));
 */
import type { Context, MiddlewareHandler } from "hono";
import type { ZodType } from "zod";
import { ApiError, validationError } from "./errors";

export function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  const type = value.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

/** The body's text: 415 unless the Content-Type is JSON, 400 when it is empty. */
async function jsonText(c: Context): Promise<string> {
  if (!isJsonContentType(c.req.header("content-type"))) {
    throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with Content-Type: application/json.");
  }
  const text = utf8Json(new Uint8Array(await c.req.arrayBuffer()));
  if (text.trim() === "") throw new ApiError("INVALID_JSON", "The request body is empty; send a JSON document.");
  return text;
}

/**
 * A JSON body's bytes as text: JSON between systems is UTF-8 (RFC 8259, section 8.1), and bytes that are not
 * are 400 INVALID_JSON rather than read as U+FFFD, which would store or publish text the caller never sent.
 */
export function utf8Json(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError("INVALID_JSON", "The request body is not valid JSON: it is not UTF-8 text.");
  }
}

/**
 * For routes whose JSON body the OpenAPI validator reads (no inline images): the body's bytes decoded as
 * UTF-8, strictly, before the validator parses them (400 INVALID_JSON for any other bytes, as everywhere);
 * Hono's own reading would turn them into U+FFFD.
 */
export const strictUtf8Json: MiddlewareHandler = async (c, next) => {
  if (c.req.raw.body && isJsonContentType(c.req.header("content-type"))) {
    const text = utf8Json(new Uint8Array(await c.req.arrayBuffer()));
    // The validator parses this text (the bytes' cached copy goes: Hono reads its first cached form).
    c.req.bodyCache = {};
    (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(text);
  }
  await next();
};

export async function readJson(c: Context): Promise<unknown> {
  const text = await jsonText(c);
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError("INVALID_JSON", "The request body is not valid JSON.");
  }
}

/**
 * Validate a body with a zod schema; a failure is thrown as 422 VALIDATION_FAILED with one detail per field
 * (an unknown field named, with the known one it resembles).
 */
export function parseWith<T>(schema: ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(result.error.issues, { source: "body", input: value, schema });
  return result.data;
}
