/**
 * The one error type every layer throws, and the table of its codes and their HTTP statuses.
 *
 * It sits in the lowest layer so that image decoding, adapters and the areas throw the same error the HTTP
 * layer renders; src/http/errors.ts turns it into the `{error:{code,message,details?}}` envelope.
 *
 * @example
 * throw new ApiError("POST_NOT_FOUND", "No post with this id.");
 */
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";

export const codeToStatus = {
  INVALID_JSON: 400,
  IDEMPOTENCY_KEY_REQUIRED: 400,
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  INSUFFICIENT_CREDITS: 402,
  FORBIDDEN: 403,
  INSUFFICIENT_SCOPE: 403,
  ORIGIN_NOT_ALLOWED: 403,
  NOT_FOUND: 404,
  ACCOUNT_NOT_FOUND: 404,
  MEDIA_NOT_FOUND: 404,
  POST_NOT_FOUND: 404,
  JOB_NOT_FOUND: 404,
  TEMPLATE_NOT_FOUND: 404,
  WEBHOOK_NOT_FOUND: 404,
  WEBHOOK_DELIVERY_NOT_FOUND: 404,
  GALLERY_ITEM_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  ACCOUNT_NEEDS_RECONNECT: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  REQUEST_IN_PROGRESS: 409,
  POST_NOT_CANCELLABLE: 409,
  WEBHOOK_LIMIT_REACHED: 409,
  WEBHOOK_DISABLED: 409,
  CONFLICT: 409,
  ORIGINAL_REMOVED: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  VALIDATION_FAILED: 422,
  INVALID_IMAGE: 422,
  INVALID_IMAGE_URL: 422,
  QR_NOT_FOUND: 422,
  QR_NOT_SCANNABLE: 422,
  GENERATION_REFUSED: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UPSTREAM_UNAVAILABLE: 502,
  GENERATION_FAILED: 502,
  SERVICE_UNAVAILABLE: 503,
  UPSTREAM_RATE_LIMITED: 503,
  GENERATION_TIMEOUT: 504,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof codeToStatus;

export interface ErrorDetail {
  path: string;
  message: string;
}

export interface ApiErrorOptions {
  details?: ErrorDetail[];
  headers?: Record<string, string>;
  cause?: unknown;
}

export class ApiError extends HTTPException {
  readonly code: ErrorCode;
  readonly details?: ErrorDetail[];
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(codeToStatus[code], { message, cause: options.cause });
    this.code = code;
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

/** The same error about the input field `path`: its message prefixed with it, and named in `details`. */
export function atField(err: ApiError, path: string): ApiError {
  return new ApiError(err.code, `${path}: ${err.message}`, { details: [{ path, message: err.message }], headers: err.headers, cause: err });
}

/** Runs `load`; an ApiError it throws (an image that cannot be fetched or read) names the field `path`. */
export async function forField<T>(path: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    throw err instanceof ApiError ? atField(err, path) : err;
  }
}

/** A 422 naming the field that is wrong. */
export function invalidField(path: string, message: string): ApiError {
  return new ApiError("VALIDATION_FAILED", `${path}: ${message}`, { details: [{ path, message }] });
}
