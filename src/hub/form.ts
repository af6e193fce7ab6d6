/**
 * The hub's one form reader. Every hub form is `application/x-www-form-urlencoded` (no file uploads), so a
 * body is read up to HUB_MAX_BODY_BYTES by `readCapped`, the reader of every capped body (counted as it
 * streams; a declared length over it is refused from its header), decoded as UTF-8 and parsed by the platform's `URLSearchParams`. What comes back is one string
 * per field name. A repeated name, a field or name over its size, too many fields, a NUL, bytes that are not
 * UTF-8, or another content type are refused with a HubError (4xx page), never a 500; a hub form never
 * produces any of them.
 *
 * The CSRF guard and the route both read the form of one request, so it is read once and kept for that
 * request.
 *
 * @example
 * const form = await readHubForm(c);
 * const name = (form.name ?? "").trim();
 */
import type { Context } from "hono";
import { readCapped } from "../adapters/fetch/fetch-core";
import type { HubEnv } from "./env";
import { HubError } from "./errors";

/** The largest hub request body: the forms carry a few short fields. */
export const HUB_MAX_BODY_BYTES = 64 * 1024;
/** Fields in one form at most. */
export const HUB_MAX_FIELDS = 32;
/** Characters in one field's value at most (a key name is 100, a token under 100). */
export const HUB_MAX_FIELD_CHARS = 4096;
/** Characters in one field's name at most. */
export const HUB_MAX_NAME_CHARS = 64;

/** A parsed form: each field name once, its value a string. */
export type HubForm = Readonly<Record<string, string>>;

const FORM_TYPE = "application/x-www-form-urlencoded";

/** The request's form, read and parsed once per request (the CSRF guard and the route share it). */
const read = new WeakMap<Request, Promise<HubForm>>();

export function readHubForm(c: Context<HubEnv>): Promise<HubForm> {
  const request = c.req.raw;
  let form = read.get(request);
  if (!form) {
    form = readForm(request);
    read.set(request, form);
  }
  return form;
}

/**
 * Reads and parses a request's form body within `maxBytes`. The content type is judged before the body is
 * opened: none (only an empty body then) or urlencoded, in UTF-8 when a charset is named.
 */
export async function readForm(request: Request, maxBytes = HUB_MAX_BODY_BYTES): Promise<HubForm> {
  const type = request.headers.get("content-type");
  const urlencoded = type !== null && isUrlencoded(type);
  if (type !== null && !urlencoded) throw new HubError(415, "This page takes a form, and what was sent is not one. Go back and use the form on the page.");
  const bytes = await readAtMost(request, maxBytes);
  if (bytes.length === 0) return Object.freeze(Object.create(null) as Record<string, string>);
  if (!urlencoded) throw new HubError(415, "This page takes a form, and what was sent is not one. Go back and use the form on the page.");
  return parseForm(bytes);
}

/** Parses urlencoded bytes into one string per field, or throws a 400 HubError naming what is wrong. */
export function parseForm(bytes: Uint8Array): HubForm {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw refused("The form was not sent as UTF-8 text.");
  }
  const form = Object.create(null) as Record<string, string>;
  let count = 0;
  for (const [name, value] of new URLSearchParams(text)) {
    if (++count > HUB_MAX_FIELDS) throw refused("The form has more fields than any hub form.");
    if (name.length > HUB_MAX_NAME_CHARS || value.length > HUB_MAX_FIELD_CHARS) throw refused("A field of the form is longer than the hub takes.");
    if (name.includes("\0") || value.includes("\0")) throw refused("A field of the form holds a NUL character.");
    if (Object.hasOwn(form, name)) throw refused("The form has a field twice.");
    form[name] = value;
  }
  return Object.freeze(form);
}

function isUrlencoded(contentType: string): boolean {
  const [essence, ...params] = contentType.split(";");
  if (essence!.trim().toLowerCase() !== FORM_TYPE) return false;
  for (const param of params) {
    const [key, value] = param.split("=");
    if (key?.trim().toLowerCase() === "charset" && value?.trim().replace(/^"|"$/g, "").toLowerCase() !== "utf-8") return false;
  }
  return true;
}

/** The body's bytes, refused once more than `maxBytes` arrive (413); a body that breaks off is a 400. */
async function readAtMost(request: Request, maxBytes: number): Promise<Uint8Array> {
  try {
    return await readCapped(request, maxBytes, tooLarge);
  } catch (err) {
    if (err instanceof HubError) throw err;
    throw refused("The form did not arrive whole.");
  }
}

/** The hub's answer to a body over its limit (also used by the hub router's body limit). */
export function tooLarge(): HubError {
  return new HubError(413, `This form is larger than the hub takes (${HUB_MAX_BODY_BYTES / 1024} KB).`);
}

function refused(reason: string): HubError {
  return new HubError(400, `${reason} Go back, reload the page and try again.`);
}
