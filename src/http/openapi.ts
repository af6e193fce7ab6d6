/**
 * What the `createRoute` definitions of every area share: the one error envelope (component `Error`), error
 * responses with an example body, and the `application/json` content helper. Each error example is built
 * from the code's own status in `codeToStatus`, so an example cannot name a code the API does not send.
 *
 * @example
 * responses: {
 *   200: { description: "The code.", content: json(QrCodeResponseSchema, { text: { value: ... } }) },
 *   401: errorResponse("Missing or invalid credentials.", ["UNAUTHORIZED", "The API key is not valid or has been revoked."]),
 * }
 */
import { z } from "@hono/zod-openapi";
import { codeToStatus, type ErrorCode } from "./errors";
import { insufficientScopeMessage, originNotAllowedMessage, type ApiKeyScope } from "../lib/scopes";

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: "VALIDATION_FAILED", description: "Stable UPPER_SNAKE code." }),
      message: z.string().openapi({ description: "A sentence for a human; may change between versions." }),
      details: z
        .array(z.object({ path: z.string(), message: z.string() }))
        .optional()
        .openapi({ description: "One entry per invalid field (422)." }),
      requestId: z.string().optional().openapi({ description: "Present on 500: quote it when reporting the failure." }),
    }),
  })
  .openapi("Error");

/** An OpenAPI Example Object: a named, summarised value. */
export interface Example {
  summary?: string;
  value: unknown;
}

/** `application/json` content of a route, with its examples when given. */
export function json<T extends z.ZodType>(schema: T, examples?: Record<string, Example>) {
  return { "application/json": examples ? { schema, examples } : { schema } };
}

/** One error example: `[code, message]`, or `[code, message, details]` for a 422 naming fields. */
export type ErrorExample = [ErrorCode, string] | [ErrorCode, string, Array<{ path: string; message: string }>];

/**
 * The body of an error answer, as `renderError` writes it.
 *
 * @example
 * errorBody("POST_NOT_FOUND", "No post with this id."); // { error: { code, message } }
 */
export function errorBody(code: ErrorCode, message: string, details?: Array<{ path: string; message: string }>) {
  return { error: { code, message, ...(details ? { details } : {}), ...(code === "INTERNAL" ? { requestId: "5f0c2d9e-7b1a-4c3e-9a56-0d4b8e2f1c77" } : {}) } };
}

/**
 * An error response of one status: the Error schema and one example per given code (all of that status).
 *
 * @example
 * 404: errorResponse("No such job for this key's owner.", ["JOB_NOT_FOUND", "No job with this id."]),
 */
export function errorResponse(description: string, ...examples: ErrorExample[]) {
  const statuses = new Set(examples.map(([code]) => codeToStatus[code]));
  if (statuses.size > 1) throw new Error(`errorResponse: examples of different statuses (${[...statuses].join(", ")})`);
  return {
    description,
    content: json(
      ErrorSchema,
      Object.fromEntries(examples.map(([code, message, details], i) => [examples.findIndex(([c]) => c === code) === i ? code : `${code}_${i + 1}`, { summary: code, value: errorBody(code, message, details) }])),
    ),
  };
}

/** The 500 every operation may answer. */
export const internalError = errorResponse("An internal failure; retry the same request.", [
  "INTERNAL",
  "Something went wrong on our side. Retry the same request; quote request id 5f0c2d9e-7b1a-4c3e-9a56-0d4b8e2f1c77 if it persists.",
]);

/**
 * Marks an authenticated operation as one of area `scope`: adds the `x-required-scope` extension (shown by the
 * reference page, and read by the test that calls every operation with a key of another scope) and the 403
 * that a key limited to other areas gets. The route keeps its type: the 403 is thrown, never returned.
 *
 * @example
 * decode: withScope("qr", createRoute({ method: "post", path: "/decode", ... })),
 */
export function withScope<R extends { responses: object }>(scope: ApiKeyScope, route: R): R {
  const other: ApiKeyScope[] = [scope === "qr" ? "photo" : "qr"];
  return {
    ...route,
    "x-required-scope": scope,
    responses: {
      ...route.responses,
      403:
        scope === "qr"
          ? errorResponse(
              "The API key is limited to other areas (this operation needs the `qr` scope), or to pages other than the one the request came from (its Origin or Referer).",
              ["INSUFFICIENT_SCOPE", insufficientScopeMessage(scope, other)],
              ["ORIGIN_NOT_ALLOWED", originNotAllowedMessage(["https://shop.example"], "https://elsewhere.example")],
            )
          : errorResponse(`The API key is limited to other areas; this operation needs the \`${scope}\` scope.`, ["INSUFFICIENT_SCOPE", insufficientScopeMessage(scope, other)]),
    },
  };
}
