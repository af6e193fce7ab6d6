/**
 * Request schemas of area A, written from spec/interface.md section A: the generate body (type fields plus the
 * shared design fields), the GET query, and the decode body. All are closed: an unknown field or parameter is
 * refused like any other invalid one. Parsing failures are 422 VALIDATION_FAILED whose details name the field.
 *
 * @example
 * const request = parseGenerateRequest(await readJson(c)); // { type: "url", value, size: 512, ... }
 */
import { z } from "zod";
import { ApiError, invalidField } from "../http/errors";
import { parseWith } from "../http/json";
import { HEX_COLOR } from "./colors";
import {
  EmailPayloadSchema,
  isHttpUrl,
  QR_TYPES,
  TextPayloadSchema,
  UpiPayloadSchema,
  UrlPayloadSchema,
  VcardPayloadSchema,
  WifiPayloadSchema,
} from "./payloads";
import { MAX_SIZE, MIN_SIZE } from "./render";

export const MIN_LOGO_RATIO = 0.1;
export const MAX_LOGO_RATIO = 0.4;

const Color = z
  .string({ error: "must be a string like #1A73E8" })
  .regex(HEX_COLOR, { error: "must be a hex colour: #RGB or #RRGGBB, e.g. #1A73E8" });

const Size = z
  .number({ error: "must be a number of pixels" })
  .int({ error: "must be a whole number of pixels" })
  .min(MIN_SIZE, { error: `must be at least ${MIN_SIZE}` })
  .max(MAX_SIZE, { error: `must be at most ${MAX_SIZE}` });

export const DEFAULT_SIZE = 512;

/** A logo is fetched from a public https URL, or given inline as an image data URI. */
function isLogoSource(value: string): boolean {
  return /^data:image\//i.test(value) || (isHttpUrl(value) && value.toLowerCase().startsWith("https:"));
}

export const DesignShape = {
  size: Size.default(DEFAULT_SIZE),
  fgColor: Color.default("#000000"),
  bgColor: Color.default("#FFFFFF"),
  logoUrl: z
    .string({ error: "must be a string" })
    .max(15_000_000, { error: "is too long" })
    .refine(isLogoSource, { error: "must be a public https:// URL of a JPEG, PNG or WebP image (or a data:image/...;base64 URI)" })
    .optional(),
  logoSizeRatio: z
    .number({ error: "must be a number" })
    .min(MIN_LOGO_RATIO, { error: `must be at least ${MIN_LOGO_RATIO}` })
    .max(MAX_LOGO_RATIO, { error: `must be at most ${MAX_LOGO_RATIO}` })
    .default(0.2),
  isTransparent: z.boolean({ error: "must be true or false" }).default(false),
};

// Closed like every body of the service: a field the type does not take is 422, never silently ignored.
export const GenerateRequestSchema = z.discriminatedUnion("type", [
  UrlPayloadSchema.extend(DesignShape).strict(),
  TextPayloadSchema.extend(DesignShape).strict(),
  WifiPayloadSchema.extend(DesignShape).strict(),
  EmailPayloadSchema.extend(DesignShape).strict(),
  VcardPayloadSchema.extend(DesignShape).strict(),
  UpiPayloadSchema.extend(DesignShape).strict(),
]);
export type GenerateRequest = z.infer<typeof GenerateRequestSchema>;
export type Design = Pick<GenerateRequest, "size" | "fgColor" | "bgColor" | "logoUrl" | "logoSizeRatio" | "isTransparent">;

/**
 * Parses a POST generate body. `type` is checked first so a missing or unknown type gets one clear message
 * listing the allowed types instead of a union error.
 *
 * @example
 * parseGenerateRequest({ type: "text", value: "hi" }); // { type: "text", value: "hi", size: 512, ... }
 */
export function parseGenerateRequest(body: unknown): GenerateRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError("VALIDATION_FAILED", "The body must be a JSON object with a type field.", {
      details: [{ path: "(body)", message: "must be a JSON object" }],
    });
  }
  const type = (body as { type?: unknown }).type;
  if (type === undefined) throw invalidField("type", `is required: one of ${QR_TYPES.join(", ")}`);
  if (typeof type !== "string" || !(QR_TYPES as readonly string[]).includes(type)) {
    throw invalidField("type", `must be one of ${QR_TYPES.join(", ")}`);
  }
  return parseWith(GenerateRequestSchema, body);
}

/** Design fields the GET routes take from the query string; `#` may be left out of colours there. No others. */
export const GenerateQuerySchema = z.strictObject({
  size: z
    .string()
    .regex(/^\d{1,5}$/, { error: `must be a whole number of pixels from ${MIN_SIZE} to ${MAX_SIZE}` })
    .transform(Number)
    .pipe(Size)
    .optional(),
  fgColor: z
    .string()
    .transform((v) => (v.startsWith("#") ? v : `#${v}`))
    .pipe(Color)
    .optional(),
  bgColor: z
    .string()
    .transform((v) => (v.startsWith("#") ? v : `#${v}`))
    .pipe(Color)
    .optional(),
  isTransparent: z
    .enum(["true", "false", "1", "0"], { error: "must be true or false" })
    .transform((v) => v === "true" || v === "1")
    .optional(),
});

export const DecodeRequestSchema = z
  .strictObject({
    url: z.string({ error: "must be a string" }).max(4096, { error: "must be at most 4096 characters" }).optional(),
    base64: z.string({ error: "must be a string" }).optional(),
  })
  .superRefine((v, ctx) => {
    const given = [v.url, v.base64].filter((x) => x !== undefined && x !== "").length;
    if (given !== 1) {
      ctx.addIssue({
        code: "custom",
        path: [given === 0 ? "url" : "base64"],
        message: given === 0 ? "give exactly one of url or base64 (none was given)" : "give exactly one of url or base64, not both",
      });
    }
  });
export type DecodeRequest = z.infer<typeof DecodeRequestSchema>;
