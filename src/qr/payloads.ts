/**
 * What goes inside the code for each `type`, built to the standard that phone scanners read:
 * - url: the absolute http(s) URL as given;
 * - text: the text as given;
 * - wifi: ZXing "WIFI:" form, `\ ; , : "` backslash-escaped (what phone scanners parse);
 * - email: RFC 6068 `mailto:`, UTF-8 percent-encoding, `%20` for spaces, `%0D%0A` line breaks;
 * - vcard: vCard 3.0 (RFC 2426), TEXT escaping, CRLF lines folded at 75 octets;
 * - upi: NPCI `upi://pay?pa=&pn=&am=&tn=&cu=INR`, amount with two decimals.
 *
 * @example
 * buildPayload({ type: "wifi", ssid: "Cafe;1", password: "p:w", encryption: "WPA" });
 * // 'WIFI:T:WPA;S:Cafe\;1;P:p\:w;;'
 */
import { z } from "zod";
import { CONTROL_CHARACTER } from "../lib/encoding";

export const QR_TYPES = ["url", "text", "wifi", "email", "vcard", "upi"] as const;
export type QrType = (typeof QR_TYPES)[number];

/** Largest UPI amount accepted: 10 lakh rupees, the highest per-transaction limit NPCI allows any category. */
export const UPI_MAX_AMOUNT = 1_000_000;

// Characters that have no business in a one-line field; a newline in an SSID or a name is a client bug.
const CONTROL_EXCEPT_NEWLINES = /[\u0000-\u0009\u000b\u000c\u000e-\u001f\u007f]/;

const required = (what: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? "is required" : `must be ${what}`),
});

const line = (max: number) =>
  z
    .string(required("a string"))
    .min(1, { error: "must not be empty" })
    .max(max, { error: `must be at most ${max} characters` })
    .refine((v) => !CONTROL_CHARACTER.test(v), { error: "must not contain line breaks or control characters" });

const multiline = (max: number) =>
  z
    .string(required("a string"))
    .max(max, { error: `must be at most ${max} characters` })
    .refine((v) => !CONTROL_EXCEPT_NEWLINES.test(v), { error: "must not contain control characters other than line breaks" });

/**
 * An absolute http: or https: URL with a host.
 *
 * @example
 * isHttpUrl("https://example.com/a"); // true; isHttpUrl("example.com") is false
 */
export function isHttpUrl(value: string): boolean {
  if (/\s/.test(value)) return false;
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

const httpUrl = z
  .string(required("a string"))
  .trim()
  .min(1, { error: "must not be empty" })
  .max(4096, { error: "must be at most 4096 characters" })
  .refine(isHttpUrl, { error: "must be an absolute http:// or https:// URL, e.g. https://example.com/page" });

// Deliberately loose: one address, something@domain.tld, none of the characters that would need quoting.
const EMAIL = /^[^\s@,;:<>()[\]"\\]+@[^\s@,;:<>()[\]"\\]+\.[^\s@,;:<>()[\]"\\.]{2,}$/u;
const email = z
  .string(required("a string"))
  .trim()
  .max(254, { error: "must be at most 254 characters" })
  .refine((v) => EMAIL.test(v), { error: "must be one e-mail address, e.g. name@example.com" });

const PHONE = /^\+?[0-9][0-9 ()\-./]{2,31}$|^\([0-9][0-9 ()\-./]{2,31}$/;

/** A payee virtual payment address: `name@handle`. */
export const VPA = /^[A-Za-z0-9._-]{2,256}@[A-Za-z][A-Za-z0-9.-]{1,63}$/;

export const UrlPayloadSchema = z.object({ type: z.literal("url"), value: httpUrl });
export const TextPayloadSchema = z.object({
  type: z.literal("text"),
  value: multiline(7089).min(1, { error: "must not be empty" }),
});
export const WifiPayloadSchema = z
  .object({
    type: z.literal("wifi"),
    ssid: line(64).refine((v) => utf8Length(v) <= 32, { error: "must be at most 32 bytes (the 802.11 SSID limit)" }),
    // Required by the contract for every encryption; an open network (nopass) sends it empty, and it is ignored.
    password: z
      .string({
        error: (issue) => (issue.input === undefined ? 'is required ("" for an open network, with encryption nopass)' : "must be a string"),
      })
      .max(256, { error: "must be at most 256 characters" }),
    encryption: z.preprocess(
      (v) => (typeof v === "string" ? (({ wpa: "WPA", wep: "WEP", nopass: "nopass" } as Record<string, string>)[v.toLowerCase()] ?? v) : v),
      z.enum(["WPA", "WEP", "nopass"], {
        error: (issue) => (issue.input === undefined ? "is required" : "must be one of WPA, WEP, nopass"),
      }),
    ),
    hidden: z.boolean({ error: "must be true or false" }).optional(),
  })
  .superRefine((v, ctx) => {
    if (v.encryption === "nopass") return;
    if (v.password === "")
      ctx.addIssue({ code: "custom", path: ["password"], message: `must not be empty for ${v.encryption}; use encryption nopass for an open network` });
    else if (CONTROL_CHARACTER.test(v.password))
      ctx.addIssue({ code: "custom", path: ["password"], message: "must not contain line breaks or control characters" });
  });
export const EmailPayloadSchema = z.object({
  type: z.literal("email"),
  to: email,
  subject: z
    .string({ error: "must be a string" })
    .max(998, { error: "must be at most 998 characters" })
    .refine((v) => !CONTROL_EXCEPT_NEWLINES.test(v), { error: "must not contain control characters" })
    .optional(),
  body: multiline(4000).optional(),
});
export const VcardPayloadSchema = z.object({
  type: z.literal("vcard"),
  firstName: multiline(200).min(1, { error: "must not be empty" }),
  lastName: multiline(200).min(1, { error: "must not be empty" }),
  organization: multiline(200).optional(),
  phoneWork: z
    .string({ error: "must be a string" })
    .trim()
    .refine((v) => PHONE.test(v) && (v.match(/[0-9]/g)?.length ?? 0) >= 3, {
      error: "must be a phone number of at least 3 digits, with only spaces, + ( ) - . / beside them, e.g. +1 555 0100",
    })
    .optional(),
  email: email.optional(),
  website: httpUrl.optional(),
});
export const UpiPayloadSchema = z.object({
  type: z.literal("upi"),
  upiId: z
    .string(required("a string"))
    .trim()
    .refine((v) => VPA.test(v), { error: "must be a UPI virtual payment address like name@bank" }),
  payeeName: line(99),
  amount: z
    .number({ error: "must be a number" })
    .positive({ error: "must be greater than 0" })
    .max(UPI_MAX_AMOUNT, { error: `must be at most ${UPI_MAX_AMOUNT} (INR)` })
    .refine((v) => Math.abs(v * 100 - Math.round(v * 100)) < 1e-6, { error: "must have at most two decimal places" })
    // Within the rounding tolerance above, 1e-9 has "two decimals" and would be written as am=0.00.
    .refine((v) => v <= 0 || v >= 0.01, { error: "must be at least 0.01 (one paisa)" })
    .optional(),
  note: line(80).optional(),
});

/** The type-specific part of a generate request, discriminated on `type`. */
export const PayloadSchema = z.discriminatedUnion("type", [
  UrlPayloadSchema,
  TextPayloadSchema,
  WifiPayloadSchema,
  EmailPayloadSchema,
  VcardPayloadSchema,
  UpiPayloadSchema,
]);
export type PayloadInput = z.infer<typeof PayloadSchema>;

/**
 * The string to encode for one validated payload.
 *
 * @example
 * buildPayload({ type: "upi", upiId: "shop@okbank", payeeName: "My Shop", amount: 99.5 });
 * // 'upi://pay?pa=shop@okbank&pn=My%20Shop&am=99.50&cu=INR'
 */
export function buildPayload(input: PayloadInput): string {
  switch (input.type) {
    case "url":
      return input.value;
    case "text":
      return input.value;
    case "wifi":
      return wifiPayload(input);
    case "email":
      return mailtoPayload(input);
    case "vcard":
      return vcardPayload(input);
    case "upi":
      return upiPayload(input);
  }
}

/**
 * Backslash before `\ ; , : "`, as ZXing's MECARD-style fields require.
 *
 * @example
 * escapeWifi("a;b"); // "a\\;b"
 */
export function escapeWifi(value: string): string {
  return value.replace(/[\\;,:"]/g, "\\$&");
}

/**
 * The ZXing WIFI: string; P is left out for nopass.
 *
 * @example
 * wifiPayload({ ssid: "Home", password: "pw", encryption: "WPA", hidden: true }); // "WIFI:T:WPA;S:Home;P:pw;H:true;;"
 */
export function wifiPayload(input: { ssid: string; password: string; encryption: "WPA" | "WEP" | "nopass"; hidden?: boolean }): string {
  let out = `WIFI:T:${input.encryption};S:${escapeWifi(input.ssid)};`;
  if (input.encryption !== "nopass") out += `P:${escapeWifi(input.password)};`;
  if (input.hidden) out += "H:true;";
  return `${out};`;
}

const utf8 = new TextEncoder();

/** Percent-encodes the UTF-8 bytes of every character outside `keep` (plus the RFC 3986 unreserved set). */
function percentEncode(value: string, keep: RegExp): string {
  let out = "";
  for (const ch of value) {
    if (/[A-Za-z0-9\-._~]/.test(ch) || keep.test(ch)) out += ch;
    else for (const byte of utf8.encode(ch)) out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/**
 * RFC 6068 hfvalue: everything outside unreserved is percent-encoded, so `+` is %2B and space %20.
 *
 * @example
 * encodeMailtoValue("a b+c"); // "a%20b%2Bc"
 */
export function encodeMailtoValue(value: string): string {
  return percentEncode(value, /(?!)/);
}

/**
 * RFC 6068 mailto: with subject and body as percent-encoded UTF-8.
 *
 * @example
 * mailtoPayload({ to: "a@example.com", subject: "Hi there" }); // "mailto:a@example.com?subject=Hi%20there"
 */
export function mailtoPayload(input: { to: string; subject?: string; body?: string }): string {
  // The address keeps RFC 6068 some-delims (e.g. "+" in bill+ietf@) readable; the rest is encoded.
  const to = percentEncode(input.to, /[!$'()*+,;:@]/);
  const fields: string[] = [];
  if (input.subject) fields.push(`subject=${encodeMailtoValue(input.subject.replace(/\r\n|\r|\n/g, " "))}`);
  if (input.body) fields.push(`body=${encodeMailtoValue(input.body.replace(/\r\n|\r|\n/g, "\r\n"))}`);
  return `mailto:${to}${fields.length ? `?${fields.join("&")}` : ""}`;
}

/**
 * vCard TEXT escaping (RFC 2426 5.8.4): `\\`, `\,`, `\;` and `\n` for a line break.
 *
 * @example
 * escapeVcardText("a,b;c"); // "a\\,b\\;c"
 */
export function escapeVcardText(value: string): string {
  return value.replace(/\r\n|[\\,;\r\n]/g, (m) => (m === "\\" ? "\\\\" : m === "," || m === ";" ? `\\${m}` : "\\n"));
}

/**
 * Folds one content line to at most 75 octets per physical line (RFC 2425 5.8.1): CRLF plus one space
 * before each continuation, never splitting a UTF-8 sequence.
 *
 * @example
 * foldLine("x".repeat(76)); // 75 x, CRLF, " x"
 */
export function foldLine(text: string, limit = 75): string {
  const lines: string[] = [];
  let current = "";
  let octets = 0;
  for (const ch of text) {
    const size = utf8Length(ch);
    if (octets + size > limit) {
      lines.push(current);
      current = " ";
      octets = 1;
    }
    current += ch;
    octets += size;
  }
  lines.push(current);
  return lines.join("\r\n");
}

/**
 * vCard 3.0 with N, FN and the optional ORG, TEL;TYPE=WORK, EMAIL, URL; CRLF lines, folded.
 *
 * @example
 * vcardPayload({ firstName: "Jane", lastName: "Doe" }); // "BEGIN:VCARD\r\nVERSION:3.0\r\nN:Doe;Jane;;;\r\n..."
 */
export function vcardPayload(input: {
  firstName: string;
  lastName: string;
  organization?: string;
  phoneWork?: string;
  email?: string;
  website?: string;
}): string {
  const first = input.firstName.trim();
  const last = input.lastName.trim();
  const lines = ["BEGIN:VCARD", "VERSION:3.0", `N:${escapeVcardText(last)};${escapeVcardText(first)};;;`, `FN:${escapeVcardText(`${first} ${last}`)}`];
  if (input.organization?.trim()) lines.push(`ORG:${escapeVcardText(input.organization.trim())}`);
  if (input.phoneWork) lines.push(`TEL;TYPE=WORK:${input.phoneWork.trim()}`);
  if (input.email) lines.push(`EMAIL;TYPE=INTERNET:${input.email.trim()}`);
  if (input.website) lines.push(`URL:${input.website.trim()}`);
  lines.push("END:VCARD");
  return `${lines.map((l) => foldLine(l)).join("\r\n")}\r\n`;
}

/**
 * Query values of a upi:// link: RFC 3986 unreserved stay, `@` stays (it is legal in a query), the rest is encoded.
 *
 * @example
 * encodeUpiValue("My Shop"); // "My%20Shop"
 */
export function encodeUpiValue(value: string, keepAt = false): string {
  return percentEncode(value, keepAt ? /@/ : /(?!)/);
}

/**
 * NPCI upi://pay link: pa, pn, am (two decimals), tn, cu=INR.
 *
 * @example
 * upiPayload({ upiId: "shop@okbank", payeeName: "Shop", amount: 5 }); // "upi://pay?pa=shop@okbank&pn=Shop&am=5.00&cu=INR"
 */
export function upiPayload(input: { upiId: string; payeeName: string; amount?: number; note?: string }): string {
  const params = [`pa=${encodeUpiValue(input.upiId.trim(), true)}`, `pn=${encodeUpiValue(input.payeeName)}`];
  if (input.amount !== undefined) params.push(`am=${(Math.round(input.amount * 100) / 100).toFixed(2)}`);
  if (input.note) params.push(`tn=${encodeUpiValue(input.note)}`);
  params.push("cu=INR");
  return `upi://pay?${params.join("&")}`;
}

/**
 * Octets of the UTF-8 encoding.
 *
 * @example
 * utf8Length("é€"); // 5
 */
export function utf8Length(value: string): number {
  let n = 0;
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  return n;
}
