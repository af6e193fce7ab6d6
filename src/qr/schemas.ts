/**
 * Request and response schemas of area A, written from spec/interface.md section A: the generate body (type
 * fields plus the shared design fields), the GET path and query, the decode body, and the two answers. All
 * request schemas are closed: an unknown field or parameter is refused like any other invalid one. Parsing
 * failures are 422 VALIDATION_FAILED whose details name the field. The same objects validate the requests
 * (through @hono/zod-openapi's validators) and describe them in the OpenAPI document.
 *
 * @example
 * const request = parseGenerateRequest(await readJson(c)); // { type: "url", value, size: 512, ... }
 */
import { z } from "@hono/zod-openapi";
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

const Color = z.string({ error: "must be a string like #1A73E8" }).regex(HEX_COLOR, {
  // The GET routes' query may leave the # out (a bare # would start the URL's fragment); a JSON body says it.
  error: (issue) =>
    typeof issue.input === "string" && /^(?:[0-9a-fA-F]{3}){1,2}$/.test(issue.input)
      ? `must start with # in a JSON body: #${issue.input}`
      : "must be a hex colour: #RGB or #RRGGBB, e.g. #1A73E8",
});

const Size = z
  .number({ error: `must be a whole number of pixels from ${MIN_SIZE} to ${MAX_SIZE}` })
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
    .number({ error: `must be a number from ${MIN_LOGO_RATIO} to ${MAX_LOGO_RATIO}` })
    .min(MIN_LOGO_RATIO, { error: `must be at least ${MIN_LOGO_RATIO}` })
    .max(MAX_LOGO_RATIO, { error: `must be at most ${MAX_LOGO_RATIO}` })
    .default(0.2),
  isTransparent: z.boolean({ error: "must be true or false" }).default(false),
};

// Closed like every body of the service: a field the type does not take is 422, never silently ignored.
export const GenerateRequestSchema = z
  .discriminatedUnion("type", [
    UrlPayloadSchema.extend(DesignShape).strict(),
    TextPayloadSchema.extend(DesignShape).strict(),
    WifiPayloadSchema.extend(DesignShape).strict(),
    EmailPayloadSchema.extend(DesignShape).strict(),
    VcardPayloadSchema.extend(DesignShape).strict(),
    UpiPayloadSchema.extend(DesignShape).strict(),
  ])
  .openapi("QrGenerateRequest", {
    description:
      "`type` selects the fields: url `value`; text `value`; wifi `ssid`, `password` (empty for nopass), `encryption` (WPA, WEP, nopass), `hidden`; email `to`, `subject`, `body`; vcard `firstName`, `lastName`, `organization`, `phoneWork`, `email`, `website`; upi `upiId`, `payeeName`, `amount`, `note`. Every type also takes the design fields `size`, `fgColor`, `bgColor`, `logoUrl`, `logoSizeRatio`, `isTransparent`.",
  });
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

const queryColor = (description: string, example: string) =>
  z
    .string()
    .transform((v) => (v.startsWith("#") ? v : `#${v}`))
    .pipe(Color)
    .optional()
    .openapi({ param: { description, example }, type: "string", pattern: "^#?([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$" });

/** Design fields the GET routes take from the query string; `#` may be left out of colours there. No others. */
export const GenerateQuerySchema = z.strictObject({
  size: z
    .string()
    .regex(/^\d{1,5}$/, { error: `must be a whole number of pixels from ${MIN_SIZE} to ${MAX_SIZE}` })
    .transform(Number)
    .pipe(Size)
    .optional()
    .openapi({
      param: { description: `Width and height in pixels, ${MIN_SIZE} to ${MAX_SIZE}; default ${DEFAULT_SIZE}.`, example: "300" },
      type: "string",
      pattern: "^\\d{1,5}$",
    }),
  fgColor: queryColor("Colour of the dark modules: hex `#RGB` or `#RRGGBB`, the `#` (sent as `%23`) may be left out; default 000000.", "1A73E8"),
  bgColor: queryColor("Background colour, as fgColor; default FFFFFF.", "FFFFFF"),
  isTransparent: z
    .enum(["true", "false", "1", "0"], { error: "must be true or false" })
    .transform((v) => v === "true" || v === "1")
    .optional()
    .openapi({
      param: { description: "`true` or `1` makes the background transparent; default false.", example: "false" },
      type: "string",
      enum: ["true", "false", "1", "0"],
    }),
});

export const BLANK_TEXT = "must not be empty: put the URL-encoded text after the key";

/**
 * The path of the GET routes. `text` is the rest of the path after the key, URL-decoded: slashes may be sent
 * as they are (`https://example.com/a/b`), but a `?` or `#` of the text must be encoded.
 */
export const QrPathSchema = z.object({
  apiKey: z.string().openapi({
    param: {
      name: "apiKey",
      in: "path",
      description:
        "Your API key. It is a secret: a URL with it works for anyone who has the URL, so use these links only where the URL stays private (your own server, a private page); never publish them. The service never logs it.",
      example: "YOUR_API_KEY",
    },
    format: "password",
  }),
  text: z
    .string()
    .refine((v) => v.trim() !== "", { error: BLANK_TEXT, abort: true })
    .max(7089, { error: "must be at most 7089 characters" })
    .openapi({
      param: {
        name: "text",
        in: "path",
        description:
          "The text or URL to encode, URL-encoded (1 to 7089 characters once decoded). An absolute http(s) URL is encoded as type url, anything else as text. Unencoded slashes are taken as part of the text; a `?` belongs to the query string unless encoded (`%3F`).",
        example: "https://example.com/menu",
      },
    }),
});

export const QrCodeResponseSchema = z
  .object({
    data: z.object({
      qrCodeDataUrl: z
        .string()
        .regex(/^data:image\/png;base64,[A-Za-z0-9+/]+=*$/)
        .openapi({ description: "The PNG as a data URI: `data:image/png;base64,<BASE64_PNG>`." }),
      warnings: z
        .array(z.string())
        .optional()
        .openapi({ description: "What was adjusted to keep the code scannable (e.g. a logo reduced in size); absent when nothing was." }),
    }),
  })
  .openapi("QrCodeResponse");

export const QrDecodeResponseSchema = z
  .object({ data: z.object({ decodedText: z.string().openapi({ description: "The text the code holds." }) }) })
  .openapi("QrDecodeResponse");

export const DecodeRequestSchema = z
  .strictObject({
    url: z
      .string({ error: "must be a string" })
      .max(4096, { error: "must be at most 4096 characters" })
      .optional()
      .openapi({ description: "A public https URL of a JPEG, PNG or WebP image (port 443, no redirects, no private addresses)." }),
    base64: z.string({ error: "must be a string" }).optional().openapi({ description: "The image as a data URI or bare Base64." }),
  })
  .superRefine((v, ctx) => {
    // An empty string given is named as itself: it is not the missing other one's fault.
    const empty = (["url", "base64"] as const).find((field) => v[field] === "");
    if (empty) {
      ctx.addIssue({ code: "custom", path: [empty], message: "must not be empty" });
      return;
    }
    const given = [v.url, v.base64].filter((x) => x !== undefined).length;
    if (given !== 1) {
      ctx.addIssue({
        code: "custom",
        path: [given === 0 ? "url" : "base64"],
        message: given === 0 ? "give exactly one of url or base64 (none was given)" : "give exactly one of url or base64, not both",
      });
    }
  })
  .openapi("QrDecodeRequest", { description: "Exactly one of `url` or `base64`." });
export type DecodeRequest = z.infer<typeof DecodeRequestSchema>;
