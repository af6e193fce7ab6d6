/**
 * Platform errors, classified the way the delivery engine acts on them. The Graph API reports failures as
 * `{error:{message,type,code,error_subcode,is_transient,fbtrace_id}}`; `classifyGraphError` maps a body (and
 * the HTTP status) to one of five kinds. Pure: unit-tested against the real bodies.
 *
 * @example
 * classifyGraphError(400, { code: 190, error_subcode: 463 }); // "auth"
 */

/** What the engine does: auth -> reconnect, no retry; rate_limit and transient -> retry later; invalid -> give up; ambiguous -> reconcile first. */
export type ErrorKind = "auth" | "rate_limit" | "transient" | "invalid" | "ambiguous";

export interface GraphErrorBody {
  message?: string;
  type?: string;
  code?: number;
  error_subcode?: number;
  is_transient?: boolean;
  fbtrace_id?: string;
  error_user_msg?: string;
}

export class PlatformError extends Error {
  override readonly name = "PlatformError";
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly details: { status?: number; code?: number; subcode?: number; fbtraceId?: string; retryAfterMs?: number } = {},
  ) {
    super(message);
  }
}

/** Token invalid, expired or permissions lost (190 and its subcodes, 102 session, 10 and 200-299 permissions). */
const AUTH_CODES = new Set([102, 190, 10]);
const AUTH_SUBCODES = new Set([458, 459, 460, 463, 464, 467, 492]);
/** App, user, page and custom limits; 341 application limit; 368 "posting too fast"; 9 the photoplatform's publishing cap. */
const RATE_LIMIT_CODES = new Set([4, 17, 32, 341, 368, 613, 9]);
/** Server-side trouble the docs say to retry: unknown/service errors, media not ready (9007), builder expired (24/2207008). */
const TRANSIENT_CODES = new Set([1, 2, -1, -2, 9007]);
const TRANSIENT_SUBCODES = new Set([2207001, 2207003, 2207008, 2207020, 2207027, 2207032]);
/** Permanent despite a rate-limit or transient-looking code: 4/2207051 is a spam restriction, 25/2207050 a checkpointed account. */
const PERMANENT_SUBCODES = new Set([2207051]);
const RECONNECT_SUBCODES = new Set([2207050, 1404078]);

export function classifyGraphError(status: number, error: GraphErrorBody | undefined): ErrorKind {
  if (!error || typeof error.code !== "number") {
    if (status === 401) return "auth";
    if (status === 429) return "rate_limit";
    if (status >= 500) return "transient";
    return "invalid";
  }
  const { code, error_subcode: subcode } = error;
  if (subcode !== undefined && PERMANENT_SUBCODES.has(subcode)) return "invalid";
  if (AUTH_CODES.has(code) || (code >= 200 && code <= 299)) return "auth";
  if (subcode !== undefined && (AUTH_SUBCODES.has(subcode) || RECONNECT_SUBCODES.has(subcode))) return "auth";
  if (RATE_LIMIT_CODES.has(code) || (code >= 80001 && code <= 80014)) return "rate_limit";
  if (error.is_transient === true || TRANSIENT_CODES.has(code)) return "transient";
  if (subcode !== undefined && TRANSIENT_SUBCODES.has(subcode)) return "transient";
  if (code === 24 && subcode === 2207008) return "transient";
  if (status >= 500) return "transient";
  return "invalid";
}

/** A readable one-line account of a Graph error, keeping code, subcode and fbtrace_id for support. */
export function describeGraphError(status: number, error: GraphErrorBody | undefined): string {
  if (!error) return `The platform answered HTTP ${status} without an error body.`;
  const parts = [`code ${error.code ?? "?"}`];
  if (error.error_subcode !== undefined) parts.push(`subcode ${error.error_subcode}`);
  if (error.fbtrace_id) parts.push(`fbtrace_id ${error.fbtrace_id}`);
  const text = error.error_user_msg || error.message || "Unknown platform error";
  return `${text} (${parts.join(", ")})`;
}

/**
 * How long the platform asks us to wait, from `Retry-After` (seconds) or the Business-Use-Case header's
 * `estimated_time_to_regain_access` (minutes). Undefined when neither is present.
 */
export function retryHintMs(headers: Headers): number | undefined {
  const retryAfter = headers.get("retry-after");
  if (retryAfter && /^\d+$/.test(retryAfter.trim())) return Number(retryAfter.trim()) * 1000;
  const buc = headers.get("x-business-use-case-usage");
  if (!buc) return undefined;
  try {
    const usage = JSON.parse(buc) as Record<string, Array<{ estimated_time_to_regain_access?: number }>>;
    const minutes = Math.max(
      0,
      ...Object.values(usage)
        .flat()
        .map((u) => Number(u.estimated_time_to_regain_access ?? 0)),
    );
    return minutes > 0 ? minutes * 60_000 : undefined;
  } catch {
    return undefined;
  }
}
