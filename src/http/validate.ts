/**
 * The house rule for request input, shared by every area: bodies and query strings are closed. A field or
 * query parameter the operation does not declare is 422 VALIDATION_FAILED naming it, a query parameter
 * given twice is 422 naming it, and a number parameter that is not a whole number in range says so. Text
 * is Unicode: a string anywhere in a request's body, query or path that holds a lone UTF-16 surrogate is 422
 * naming its field, whatever its schema says (`illFormedIssues`).
 * Operations without query parameters declare `NoQuerySchema`, so the rule has no silent exceptions.
 *
 * @example
 * const { size } = parseQuery(c, GenerateQuerySchema);   // plain Hono routes
 * router.openapi(route, handler, validationHook(route)); // @hono/zod-openapi routes
 */
import type { Context } from "hono";
import type { Hook, RouteConfig } from "@hono/zod-openapi";
import { z, type ZodType } from "zod";
import type { AppEnv } from "./env";
import { validationError } from "./errors";
import type { IssueContext, IssueLike } from "./issues";

/** The rule in one paragraph, for the API descriptions of the OpenAPI documents. */
export const CLOSED_INPUT_RULE =
  "Unknown input is refused, never ignored: a request body field or a query parameter that the operation does not declare is answered with 422 `VALIDATION_FAILED` whose `details` name it (with the known name it most resembles, e.g. `colour: is not a known field (did you mean 'color'?)`); request bodies are closed (`additionalProperties: false`). Each query parameter may be given once: `?limit=1&limit=2` is 422 `limit: was given 2 times; give it once`. A number parameter that is not a whole number in its range is 422 naming the range.";

/**
 * Text without a lone UTF-16 surrogate (JSON's "\ud800" parses to one): it is no character, PostgreSQL's JSON
 * refuses it (a field stored in a jsonb column would be a 500), and node-postgres would store it as U+FFFD.
 * A refinement, not a pattern: `isWellFormed` is linear in the length (a `^\P{Cs}*$` pattern backtracks per
 * character and overflows the stack on a few million, and zod runs it even past a failed `max`), and the
 * OpenAPI document gets no pattern that other validators would read differently. The validators also refuse
 * a lone surrogate in any field a schema accepted without this check (`illFormedIssues`).
 *
 * @example
 * z.string().refine(WELL_FORMED.check, WELL_FORMED.message);
 */
export const WELL_FORMED = {
  check: (value: string) => value.isWellFormed(),
  message: "must be valid Unicode text (a lone surrogate such as \\ud800 is not)",
};

/** At most this many ill-formed strings are named in one answer (the answer lists at most 50 details). */
const MAX_ILL_FORMED = 50;

/**
 * Every string of `value` (and every object key) that holds a lone UTF-16 surrogate, as issues naming its
 * path with WELL_FORMED's message, in document order (at most 50). The validators run it over each request
 * part they accept, so a text field refuses a lone surrogate without its schema having to remember to.
 *
 * @example
 * illFormedIssues({ caption: "ok", images: [{ url: "a\ud800" }] }); // [{ path: ["images", 0, "url"], ... }]
 */
export function illFormedIssues(value: unknown): IssueLike[] {
  const issues: IssueLike[] = [];
  const pending: Array<[unknown, PropertyKey[]]> = [[value, []]];
  while (pending.length > 0 && issues.length < MAX_ILL_FORMED) {
    const [item, path] = pending.pop()!;
    if (typeof item === "string") {
      if (!item.isWellFormed()) issues.push({ path, message: WELL_FORMED.message, code: "custom" });
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) pending.push([item[i], [...path, i]]);
    } else if (item !== null && typeof item === "object") {
      const entries = Object.entries(item);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        if (!key.isWellFormed()) issues.push({ path: [...path, key], message: WELL_FORMED.message, code: "custom" });
        else pending.push([child, [...path, key]]);
      }
    }
  }
  return issues.slice(0, MAX_ILL_FORMED);
}

/** The query of an operation that takes no query parameters: any parameter is refused. */
export const NoQuerySchema = z.strictObject({});

/**
 * A whole number given as a query parameter, from `min` to `max`; anything else (`abc`, `1.5`, `-1`, empty)
 * is refused with one sentence naming the range.
 *
 * @example
 * z.strictObject({ limit: wholeNumberParam(1, 100).optional() });
 */
export function wholeNumberParam(min: number, max: number) {
  const message = `must be a whole number from ${min} to ${max}`;
  return z
    .string({ error: message })
    .regex(/^\d{1,9}$/, { error: message })
    .transform(Number)
    .pipe(z.number().int().min(min, { error: message }).max(max, { error: message }));
}

/** The query string as the validators see it: one string per parameter, an array for a repeated one. */
export function queryInput(c: Context): Record<string, string | string[]> {
  return Object.fromEntries(Object.entries(c.req.queries()).map(([name, values]) => [name, values.length === 1 ? values[0]! : values]));
}

/**
 * Validates the query string of a plain Hono route with a strict schema; 422 naming each bad parameter.
 * `unknownHint` is added to the message of an unknown parameter.
 */
export function parseQuery<T>(c: Context, schema: ZodType<T>, options: { unknownHint?: string } = {}): T {
  const input = queryInput(c);
  const result = schema.safeParse(input);
  if (!result.success) throw validationError(result.error.issues, { source: "query", input, schema, unknownHint: options.unknownHint });
  const illFormed = illFormedIssues(result.data);
  if (illFormed.length) throw validationError(illFormed, { source: "query", input });
  return result.data;
}

// Generic in the input, so the handler's `c.req.valid(...)` keeps its type; it only ever throws.
// biome-ignore lint/suspicious/noExplicitAny: Hono types the hook for any path
type ThrowingHook = <T>(...args: Parameters<Hook<T, AppEnv, any, undefined>>) => undefined;
// biome-ignore lint/suspicious/noExplicitAny: as above
type HookResult = Parameters<Hook<unknown, AppEnv, any, undefined>>[0];

/**
 * The validation hook of a `@hono/zod-openapi` route: a failure is thrown (the app's onError renders it),
 * worded with the route's own schemas so an unknown name can be matched with the one it resembles.
 * `before` runs first on every result, valid or not (area C checks the raw body for unsupported kinds);
 * `unknownHint` is added to the message of an unknown query parameter. A result that is valid by its schema
 * is still refused where any of its strings holds a lone surrogate (`illFormedIssues`), naming each such
 * field. A valid JSON body's text is released.
 *
 * @example
 * router.openapi(routes.listPosts, handler, validationHook(routes.listPosts));
 */
export function validationHook(
  route?: RouteConfig,
  before?: (result: HookResult, c: Context<AppEnv>) => void,
  options: Pick<IssueContext, "unknownHint"> = {},
): ThrowingHook {
  return (result, c) => {
    before?.(result as HookResult, c);
    if (result.success) {
      const illFormed = illFormedIssues((result as { data?: unknown }).data);
      if (illFormed.length) throw validationError(illFormed, contextOf(route, result as HookResult, options.unknownHint));
      // The body's text, which Hono keeps after parsing it, is not read again: a 13 MB Base64 image would
      // otherwise be held twice (text and parsed string) while it is decoded.
      if (result.target === "json") c.req.bodyCache = {};
      return undefined;
    }
    throw validationError(result.error.issues, contextOf(route, result as HookResult, options.unknownHint));
  };
}

function contextOf(route: RouteConfig | undefined, result: HookResult, unknownHint?: string): IssueContext {
  const input = (result as { data?: unknown }).data;
  switch (result.target) {
    case "query":
      return { source: "query", input, schema: route?.request?.query, unknownHint };
    case "json":
      return { source: "body", input, schema: (route?.request?.body?.content?.["application/json"] as { schema?: unknown } | undefined)?.schema };
    case "param":
      return { source: "path", input };
    case "header":
      return { source: "header", input };
    default:
      return { input };
  }
}
