/**
 * What the `createRoute` definitions of every area share: who may call an operation (`authenticated`), the
 * one error envelope (component `Error`), error responses with an example body, and the `application/json`
 * content helper. Each error example is built from the code's own status in `codeToStatus`, so an example
 * cannot name a code the API does not send.
 *
 * @example
 * createPost: authenticated({ scope: "social", rateLimit: "social-write" }, createRoute({ method: "post", path: "/posts", ... })),
 *
 * responses: {
 *   200: { description: "The code.", content: json(QrCodeResponseSchema, { text: { value: ... } }) },
 *   401: errorResponse("Missing or invalid credentials.", ["UNAUTHORIZED", "The API key is not valid or has been revoked."]),
 * }
 */
import { z, type RouteConfig } from "@hono/zod-openapi";
import type { Handler, MiddlewareHandler, TypedResponse } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { JSONParsed } from "hono/utils/types";
import { requireAuth, requirePathKey } from "./auth";
import type { AppEnv } from "./env";
import { ApiError, codeToStatus, type ErrorCode } from "./errors";
import { isJsonContentType } from "./json";
import { rateLimit, type RateLimitBucket } from "./rate-limit";
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
      Object.fromEntries(
        examples.map(([code, message, details], i) => [
          examples.findIndex(([c]) => c === code) === i ? code : `${code}_${i + 1}`,
          { summary: code, value: errorBody(code, message, details) },
        ]),
      ),
    ),
  };
}

/** The 500 every operation may answer. */
export const internalError = errorResponse("An internal failure; retry the same request.", [
  "INTERNAL",
  "Something went wrong on our side. Retry the same request; quote request id 5f0c2d9e-7b1a-4c3e-9a56-0d4b8e2f1c77 if it persists.",
]);

/**
 * Who may call an operation: a key of area `scope` (API key scope), read from the Bearer header (the
 * default), the `{apiKey}` path segment, or the header when there is one and else the path; and the per-user
 * rate-limit bucket the call counts against (for handlers of several methods, one bucket for reads, GET,
 * HEAD and OPTIONS, and one for the other methods).
 */
export interface Access {
  scope: ApiKeyScope;
  rateLimit: RateLimitBucket | { read: RateLimitBucket; write: RateLimitBucket };
  key?: "bearer" | "path" | "bearer-or-path";
}

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The middleware of an access, in the order every operation checks: the key (401, then 403 for another
 * scope or page), then the rate limit (429): a request counts once its key is accepted, before its body is
 * read.
 *
 * @example
 * router.post("/faults", ...accessMiddleware({ scope: "social", rateLimit: "social-write" }), handler);
 */
export function accessMiddleware({ scope, rateLimit: bucket, key = "bearer" }: Access): [MiddlewareHandler<AppEnv>, MiddlewareHandler<AppEnv>] {
  const auth = key === "bearer" ? requireAuth(scope) : requirePathKey(scope, key === "bearer-or-path");
  if (typeof bucket === "string") return [auth, rateLimit(bucket)];
  const read = rateLimit(bucket.read);
  const write = rateLimit(bucket.write);
  return [auth, (c, next) => (READS.has(c.req.method) ? read(c, next) : write(c, next))];
}

/**
 * An authenticated operation, declared once: from the one `access`, the route gets its `x-required-scope` and
 * 403 (`withScope`) and its middleware, the access's key check and rate limit first, then the route's own
 * (a body reader, `etag()`), so the document and the checks cannot disagree and no body is read before the
 * key is accepted. The route keeps its type.
 *
 * @example
 * getJob: authenticated({ scope: "photo", rateLimit: "photo-read" }, createRoute({ method: "get", path: "/jobs/{id}", ... })),
 */
export function authenticated<R extends RouteConfig>(access: Access, route: R): Omit<R, "middleware"> & { middleware: MiddlewareHandler<AppEnv>[] } {
  const own = route.middleware === undefined ? [] : Array.isArray(route.middleware) ? route.middleware : [route.middleware];
  const takesNoBody = route.method !== "get" && route.method !== "head" && !route.request?.body;
  const scoped = withScope(access.scope, route);
  return {
    ...(takesNoBody ? { ...scoped, responses: { ...BODY_REFUSALS, ...scoped.responses } } : scoped),
    middleware: [...accessMiddleware(access), ...(takesNoBody ? [refuseBody] : []), ...own],
  };
}

const NO_BODY = "this operation takes no body; send none";
/** What `refuseBody` answers, documented on each operation that takes no body (its own 422 wins where it has one). */
const BODY_REFUSALS = {
  415: errorResponse("A body that is not JSON: this operation takes none.", ["UNSUPPORTED_MEDIA_TYPE", "This operation takes no body; send none."]),
  422: errorResponse("A body: this operation takes none.", ["VALIDATION_FAILED", `(body): ${NO_BODY}`, [{ path: "(body)", message: NO_BODY }]]),
};

/**
 * For an operation that takes no body (a DELETE, a rotation): a body with anything in it is refused rather
 * than ignored, as unknown input is everywhere; nothing, or an empty JSON object, is no input.
 */
const refuseBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  const length = c.req.header("content-length");
  if (length === "0" || !c.req.raw.body) return next();
  const text = length !== undefined && Number(length) > 64 ? "…" : (await c.req.text()).trim();
  if (text === "" || /^\{\s*\}$/.test(text)) return next();
  // A body that is not even JSON is the contract's 415, as on every operation.
  if (!isJsonContentType(c.req.header("content-type"))) throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "This operation takes no body; send none.");
  throw new ApiError("VALIDATION_FAILED", `(body): ${NO_BODY}`, { details: [{ path: "(body)", message: NO_BODY }] });
};

/**
 * The handlers of paths and methods under authenticated operations that match none of them: the access's
 * checks first, as for the operations themselves (401, 403, 429 and the rate-limit headers), then the app's
 * 404. Credentials are so asked for before anything about the area's routes is told.
 *
 * @example
 * router.all("/product-photography/jobs/*", ...authenticatedNotFound({ scope: "photo", rateLimit: "photo-read" }));
 */
export function authenticatedNotFound(access: Access): [MiddlewareHandler<AppEnv>, MiddlewareHandler<AppEnv>, Handler<AppEnv>] {
  return [...accessMiddleware(access), (c) => c.notFound()];
}

/**
 * Marks an authenticated operation as one of area `scope`: adds the `x-required-scope` extension (shown by the
 * reference page, and read by the test that calls every operation with a key of another scope) and the 403
 * that a key limited to other areas gets. The route keeps its type: the 403 is thrown, never returned.
 * Operations use it through `authenticated`, which attaches the matching checks.
 */
function withScope<R extends { responses: object }>(scope: ApiKeyScope, route: R): R {
  const examples: ErrorExample[] = [["INSUFFICIENT_SCOPE", insufficientScopeMessage(scope, [scope === "qr" ? "photo" : "qr"])]];
  let description = `The API key is limited to other areas; this operation needs the \`${scope}\` scope.`;
  // Only a qr key can be limited to pages (mayHavePages), so only area A's operations answer this one.
  if (scope === "qr") {
    examples.push(["ORIGIN_NOT_ALLOWED", originNotAllowedMessage(["https://shop.example"], "https://elsewhere.example")]);
    description =
      "The API key is limited to other areas (this operation needs the `qr` scope), or to pages other than the one the request came from (its Origin or Referer).";
  }
  return { ...route, "x-required-scope": scope, responses: { ...route.responses, 403: errorResponse(description, ...examples) } };
}

/** The statuses route `R` declares a JSON body for. */
export type JsonStatus<R extends RouteConfig> = {
  [K in keyof R["responses"]]: R["responses"][K] extends { content: { "application/json": unknown } } ? K : never;
}[keyof R["responses"]] &
  ContentfulStatusCode;

/** The answer of route `R` with status `S` when it is JSON: the type of `c.json` of the body the route declares. */
export type DeclaredJson<R extends RouteConfig, S extends ContentfulStatusCode> = S extends unknown
  ? R["responses"][S] extends { content: { "application/json": { schema: infer Z extends z.ZodType } } }
    ? Response & TypedResponse<JSONParsed<z.infer<Z>>, S, "json">
    : never
  : never;

/**
 * A JSON answer of `route` whose text is not made by `c.json` (Base64 values written from their bytes as the
 * answer streams out, rows that are JSON text already), typed as the body the route declares for its status.
 * Such a text is built from values its type cannot describe, so this is the one place a handler's answer is
 * taken as declared (the API conformance tests check the bytes against the document); a status the route does
 * not declare as JSON does not compile.
 *
 * @example
 * return declaredJson(photoRoutes.getJob, streamedJson(c, { data }, 200), 200);
 */
export function declaredJson<R extends RouteConfig, S extends JsonStatus<R>>(_route: R, response: Response, status: S): DeclaredJson<R, S> {
  if (response.status !== status) throw new Error(`declaredJson: the answer is ${response.status}, declared ${status}`);
  return response as DeclaredJson<R, S>;
}
