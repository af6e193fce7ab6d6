/**
 * Turns zod issues into the 422 VALIDATION_FAILED error with one detail per field, in words a caller can act
 * on: an unknown field is named as such, and a union ("one of these shapes") reports the shape the input
 * evidently meant when exactly one fits best, else the union's own message listing the accepted forms.
 *
 * @example
 * const result = PostCreateSchema.safeParse(body);
 * if (!result.success) throw validationFailed(result.error.issues);
 */
import type { z } from "@hono/zod-openapi";
import { ApiError, type ErrorDetail } from "../http/errors";

type Issue = z.core.$ZodIssue;

export function validationFailed(issues: readonly Issue[]): ApiError {
  const details = issues.flatMap((issue) => detailsOf(issue, []));
  const first = details[0] ?? { path: "(body)", message: "is not valid" };
  const more = details.length > 1 ? ` (and ${details.length - 1} more)` : "";
  return new ApiError("VALIDATION_FAILED", `${first.path}: ${first.message}${more}`, { details });
}

function detailsOf(issue: Issue, prefix: PropertyKey[]): ErrorDetail[] {
  const path = [...prefix, ...issue.path];
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((key) => ({ path: join([...path, key]), message: "is not a known field" }));
  }
  if (issue.code === "invalid_union") {
    const branch = bestBranch(issue.errors);
    if (branch) return branch.flatMap((inner) => detailsOf(inner, path));
  }
  return [{ path: join(path), message: issue.message }];
}

/**
 * The branch the input was aimed at: not refused at its root for being the wrong type, with the fewest unknown
 * fields and then the fewest issues. Null when no branch qualifies or two tie.
 */
function bestBranch(branches: Issue[][]): Issue[] | null {
  const scored = branches
    .filter((b) => !b.some((i) => i.path.length === 0 && i.code === "invalid_type"))
    .map((b) => ({ b, unknown: b.filter((i) => i.code === "unrecognized_keys").length, count: b.length }))
    .sort((x, y) => x.unknown - y.unknown || x.count - y.count);
  if (scored.length === 0) return null;
  const [best, next] = scored;
  if (next && next.unknown === best!.unknown && next.count === best!.count) return null;
  return best!.b;
}

function join(path: PropertyKey[]): string {
  return path.map(String).join(".") || "(body)";
}
