/**
 * One error class and one handler for every area.
 *
 * Handlers throw `ApiError` (src/lib/errors.ts, re-exported here); `onError` renders `{error:{code,message,details?}}` with the status from
 * `codeToStatus`. Anything that is not an ApiError becomes a 500 INTERNAL with the request id only.
 *
 * @example
 * throw new ApiError("POST_NOT_FOUND", "No post with this id.");
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ApiError, type ErrorDetail } from "../lib/errors";
import { detailsFromIssues, type IssueContext, type IssueLike } from "./issues";

export { ApiError, atField, codeToStatus, forField, invalidField, type ApiErrorOptions, type ErrorCode, type ErrorDetail } from "../lib/errors";

/** At most this many details are listed; the message still counts them all. */
const MAX_DETAILS = 50;

/**
 * The 422 for failed schema validation: one detail per field (issues.ts words them), and a message naming
 * the first, e.g. "colour: is not a known field (did you mean 'color'?) (and 1 more)".
 */
export function validationError(issues: ReadonlyArray<IssueLike>, context: IssueContext = {}): ApiError {
  const details = detailsFromIssues(issues, context);
  const first = details[0];
  const message = first ? `${first.path}: ${first.message}` : "The request is not valid.";
  return new ApiError("VALIDATION_FAILED", details.length > 1 ? `${message} (and ${details.length - 1} more)` : message, {
    details: details.slice(0, MAX_DETAILS),
  });
}

interface ErrorLogger {
  error(message: string, fields: Record<string, unknown>): void;
}

/** Renders any thrown value as the error envelope. */
export function renderError(err: unknown, c: Context, log?: ErrorLogger): Response {
  const requestId = c.get("requestId") ?? "unknown";
  let apiError: ApiError;
  if (err instanceof ApiError) {
    apiError = err;
  } else if (isZodError(err)) {
    apiError = validationError(err.issues);
  } else if (err instanceof HTTPException) {
    apiError = fromHttpException(err);
  } else if (clientHungUp(c.env, err)) {
    // Reading the body failed because the client hung up: nobody reads this answer, and it is not an error
    // of ours, so it is only the request's log line.
    apiError = new ApiError("BAD_REQUEST", "The request body did not arrive whole: the connection closed part way through it.");
  } else {
    log?.error("unhandled error", { requestId, error: describe(err) });
    apiError = new ApiError("INTERNAL", `Something went wrong on our side. Retry the same request; quote request id ${requestId} if it persists.`);
  }
  const body: { error: { code: string; message: string; details?: ErrorDetail[]; requestId?: string } } = {
    error: { code: apiError.code, message: apiError.message },
  };
  if (apiError.details?.length) body.error.details = apiError.details;
  if (apiError.code === "INTERNAL") body.error.requestId = requestId;
  for (const [name, value] of Object.entries(apiError.headers)) c.header(name, value);
  return c.json(body, apiError.status as ContentfulStatusCode);
}

let clientHungUp: (env: unknown, err: unknown) => boolean = () => false;

/**
 * How `renderError` tells that `err` is this request's own connection closing while its body was read,
 * where the platform can say (Node: the error its `IncomingMessage` was destroyed with; functions/node/
 * drain-body.ts). Matched by identity, not by its words: Node gives an outbound response cut short (an S3
 * read) the same "aborted" error, and that one is ours to report.
 *
 * @example
 * configureClientHungUp(hungUp);
 */
export function configureClientHungUp(test: (env: unknown, err: unknown) => boolean): void {
  clientHungUp = test;
}

function fromHttpException(err: HTTPException): ApiError {
  switch (err.status) {
    case 400:
      return /json/i.test(err.message)
        ? new ApiError("INVALID_JSON", "The request body is not valid JSON.")
        : new ApiError("BAD_REQUEST", err.message || "Bad request.");
    case 401:
      return new ApiError("UNAUTHORIZED", "Missing or invalid credentials.");
    case 404:
      return new ApiError("NOT_FOUND", "Not found.");
    case 413:
      return new ApiError("PAYLOAD_TOO_LARGE", "The request body is larger than 20 MB.");
    case 415:
      return new ApiError("UNSUPPORTED_MEDIA_TYPE", "Send the body as JSON with Content-Type: application/json.");
    default:
      return err.status >= 500 ? new ApiError("INTERNAL", "Something went wrong on our side.") : new ApiError("BAD_REQUEST", err.message || "Bad request.");
  }
}

function isZodError(err: unknown): err is { issues: Array<{ path: PropertyKey[]; message: string }> } {
  return typeof err === "object" && err !== null && (err as { name?: string }).name === "ZodError" && Array.isArray((err as { issues?: unknown }).issues);
}

function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}\n${err.stack ?? ""}`;
  return String(err);
}
