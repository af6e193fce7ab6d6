/**
 * Zod issues -> the `details` of a 422, worded the same way in every area:
 * - an unknown body field: `{path: "colour", message: "is not a known field (did you mean 'color'?)"}`;
 * - an unknown query parameter: `"is not a known query parameter; this operation takes limit, offset"`;
 * - a repeated query parameter: `"was given 2 times; give it once"` (never zod's "expected string, received array");
 * - a union ("one of these shapes"): the shape the input evidently meant when exactly one fits best, else the
 *   union's own message listing the accepted forms.
 * Pure functions of the issues, the input and the schema; the ApiError is built in errors.ts.
 *
 * @example
 * detailsFromIssues(result.error.issues, { source: "body", input: body, schema: PostCreateSchema });
 */
import type { ErrorDetail } from "../lib/errors";

/** The zod 3 and 4 issue fields this module reads. */
export interface IssueLike {
  path: ReadonlyArray<PropertyKey>;
  message: string;
  code?: string;
  keys?: ReadonlyArray<PropertyKey>;
  errors?: ReadonlyArray<ReadonlyArray<IssueLike>>;
  /** An invalid_value issue's accepted values. */
  values?: ReadonlyArray<unknown>;
}

export interface IssueContext {
  /** Where the input came from; "query" words unknown names as query parameters and reads arrays as repeats. */
  source?: "body" | "query" | "path" | "header";
  /** The raw input that was validated. */
  input?: unknown;
  /** The schema it was validated with: lets an unknown name be matched with the known one it resembles. */
  schema?: unknown;
  /** Appended to the message of an unknown name, e.g. what the caller probably meant to do instead. */
  unknownHint?: string;
}

/** Names longer than this are cut in messages and never matched (a hostile key can be megabytes long). */
const MAX_NAME = 64;

export function detailsFromIssues(issues: ReadonlyArray<IssueLike>, context: IssueContext = {}): ErrorDetail[] {
  // A parameter both unknown and repeated is named once, as unknown: that is what the caller must fix.
  const unknown = new Set(issues.flatMap((i) => (i.code === "unrecognized_keys" && i.path.length === 0 ? (i.keys ?? []).map(String) : [])));
  const repeated = context.source === "query" ? repeatedParameters(context.input).filter(([name]) => !unknown.has(name)) : [];
  const details: ErrorDetail[] = repeated.map(([name, times]) => ({ path: shown(name), message: `was given ${times} times; give it once` }));
  const skip = new Set(repeated.map(([name]) => name));
  // A value of the wrong type is said once: zod still runs the field's checks on it (a string has a length
  // for an array's `max`), and what those say is beside the point.
  const wrongType = new Set(issues.filter((i) => i.code === "invalid_type").map((i) => i.path.join("\u0000")));
  const rest: ErrorDetail[] = [];
  for (const issue of issues) {
    if (context.source === "query" && skip.has(String(issue.path[0] ?? ""))) continue;
    if (issue.code !== "invalid_type" && wrongType.has(issue.path.join("\u0000"))) continue;
    // Unknown names first: a misspelt field also makes the real one "required", and the typo is the cause.
    (issue.code === "unrecognized_keys" ? details : rest).push(...detailsOf(issue, [], context));
  }
  return [...details, ...rest];
}

function detailsOf(issue: IssueLike, prefix: PropertyKey[], context: IssueContext): ErrorDetail[] {
  const path = [...prefix, ...issue.path];
  if (issue.code === "unrecognized_keys" && issue.keys?.length) {
    const known = knownKeysAt(context.schema, context.input, path);
    const hint = context.unknownHint ? ` (${context.unknownHint})` : "";
    return issue.keys.map((key) => ({
      path: join([...path, shown(String(key))], context.source),
      message: unknownMessage(String(key), known, context.source) + hint,
    }));
  }
  if (issue.code === "invalid_union" && issue.errors) {
    const branch = bestBranch(issue.errors);
    if (branch) return branch.flatMap((inner) => detailsOf(inner, path, context));
  }
  return [{ path: join(path, context.source), message: missing(issue, path, context) ? "is required" : worded(issue, valueAt(context.input, path)) }];
}

/**
 * zod's default words for a wrong type or a value outside a list ("Invalid input: expected array, received
 * string", "Invalid option: expected one of \"1K\"|\"2K\"") in the house style of the other messages ("must
 * be an array, not a string", "must be one of 1K, 2K, 4K"); a schema's own message is kept as written.
 * A number too large for a double (JSON's `1e999` parses to Infinity) is a number that is not finite, never
 * "a Infinity": a number field says "must be a finite number", any other field "must be a string, not a
 * number". A schema's own bare "must be a number" would contradict such a value, so it says "finite" too.
 */
function worded(issue: IssueLike, value: unknown): string {
  if (issue.code === "invalid_value" && /^Invalid (option|input)/.test(issue.message) && issue.values?.length) {
    const values = issue.values.map(listed);
    return values.length === 1 ? `must be ${values[0]}` : `must be one of ${values.join(", ")}`;
  }
  const nonFinite = typeof value === "number" && !Number.isFinite(value);
  if (issue.code === "invalid_type" && nonFinite && issue.message === "must be a number") return "must be a finite number";
  const type = issue.code === "invalid_type" ? /^Invalid input: expected (\w+), received (-?\w+)$/.exec(issue.message) : null;
  if (!type) return issue.message;
  const expected = type[1]!;
  const received = type[2]!;
  const notFinite = nonFinite || NON_FINITE.has(received);
  if (expected === "int") return "must be a whole number";
  if (!TYPE_NAMES.has(expected)) return issue.message;
  if (expected === "number" && notFinite) return "must be a finite number";
  return `must be ${withArticle(expected)}, not ${notFinite ? "a number" : withArticle(received)}`;
}

/** The types of a JSON value: what is expected is said in these words; any other expectation keeps zod's. */
const TYPE_NAMES = new Set(["string", "number", "boolean", "array", "object"]);

/** What zod says it received for a number that is not finite. */
const NON_FINITE = new Set(["Infinity", "-Infinity", "NaN"]);

/** The value at `path` of `input`, or undefined. */
function valueAt(input: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let value = input;
  for (const key of path) value = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[String(key)] : undefined;
  return value;
}

/** A listed value as a word when it reads as one, else as JSON (an empty string, a comma, a space). */
function listed(value: unknown): string {
  return typeof value === "string" && /^[\w./:+-]+$/.test(value) ? value : JSON.stringify(value);
}

/** A type's name with its article: "an array", "a string"; null and undefined stand alone. */
function withArticle(type: string): string {
  if (type === "null" || type === "undefined") return type;
  return `${/^[aeiou]/i.test(type) ? "an" : "a"} ${type}`;
}

/** zod's own words for an absent field ("Invalid input: expected string, received undefined"), not a schema's. */
function missing(issue: IssueLike, path: ReadonlyArray<PropertyKey>, context: IssueContext): boolean {
  if (issue.code !== "invalid_type" || path.length === 0 || !issue.message.startsWith("Invalid input")) return false;
  let value: unknown = context.input;
  for (const key of path.slice(0, -1)) value = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[String(key)] : undefined;
  return isRecord(value) && !Object.hasOwn(value, String(path[path.length - 1]));
}

function unknownMessage(name: string, known: string[] | null, source: IssueContext["source"]): string {
  const guess = known ? closestName(name, known) : undefined;
  if (source !== "query") return guess ? `is not a known field (did you mean '${guess}'?)` : "is not a known field";
  if (guess) return `is not a known query parameter (did you mean '${guess}'?)`;
  if (known === null) return "is not a known query parameter";
  return known.length
    ? `is not a known query parameter; this operation takes ${known.join(", ")}`
    : "is not a known query parameter; this operation takes none";
}

/** Query parameters given more than once, as the validators hand them over (an array of the values). */
function repeatedParameters(input: unknown): Array<[string, number]> {
  if (!isRecord(input)) return [];
  return Object.entries(input).flatMap(([name, value]) => (Array.isArray(value) && value.length > 1 ? [[name, value.length] as [string, number]] : []));
}

/**
 * The branch the input was aimed at: not refused at its root for being the wrong type, with the fewest unknown
 * fields and then the fewest issues. Null when no branch qualifies or two tie.
 */
function bestBranch(branches: ReadonlyArray<ReadonlyArray<IssueLike>>): ReadonlyArray<IssueLike> | null {
  const scored = branches
    .filter((b) => !b.some((i) => i.path.length === 0 && i.code === "invalid_type"))
    .map((b) => ({ b, unknown: b.filter((i) => i.code === "unrecognized_keys").length, count: b.length }))
    .sort((x, y) => x.unknown - y.unknown || x.count - y.count);
  if (scored.length === 0) return null;
  const [best, next] = scored;
  if (next && next.unknown === best!.unknown && next.count === best!.count) return null;
  return best!.b;
}

/**
 * The known name an unknown one most resembles: equal but for case, `_`, `-` and spaces, or within a small
 * edit distance (none for names of 1 or 2 characters, 1 up to 6, 2 above). Undefined when nothing is close or two tie.
 *
 * @example
 * closestName("colour", ["color", "size"]); // "color"
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  if (name.length > MAX_NAME) return undefined;
  const wanted = normalise(name);
  const limit = wanted.length <= 2 ? 0 : wanted.length <= 6 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  let tie = false;
  for (const candidate of known) {
    if (candidate === name) continue;
    const d = editDistance(wanted, normalise(candidate));
    if (d < bestDistance) [best, bestDistance, tie] = [candidate, d, false];
    else if (d === bestDistance) tie = true;
  }
  return best !== undefined && bestDistance <= limit && !tie ? best : undefined;
}

function normalise(name: string): string {
  return name.toLowerCase().replace(/[-_\s]/g, "");
}

/** Optimal string alignment distance (insert, delete, substitute, swap two neighbours). */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return Math.abs(a.length - b.length);
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}

// ---------------------------------------------------------------- the schema at a path

interface Def {
  type: string;
  // biome-ignore lint/suspicious/noExplicitAny: the other fields of an issue differ by its type
  [key: string]: any;
}

function defOf(schema: unknown): Def | undefined {
  return (schema as { _zod?: { def?: Def } } | undefined)?._zod?.def;
}

/**
 * The field names the schema accepts for the object at `path` of `input`: every object shape reachable
 * there, through optional/default/pipe wrappers, arrays and unions (a discriminated union only through the
 * option the input's discriminator picks). Null without a (zod 4) schema.
 */
export function knownKeysAt(schema: unknown, input: unknown, path: ReadonlyArray<PropertyKey>): string[] | null {
  if (!defOf(schema)) return null;
  const keys = new Set<string>();
  for (const shape of shapesAt(schema, input, path, 0)) for (const key of Object.keys(shape)) keys.add(key);
  return [...keys];
}

function shapesAt(schema: unknown, input: unknown, path: ReadonlyArray<PropertyKey>, depth: number): Array<Record<string, unknown>> {
  const def = defOf(schema);
  if (!def || depth > 32) return [];
  const next = (inner: unknown, value = input, rest = path) => shapesAt(inner, value, rest, depth + 1);
  switch (def.type) {
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "nonoptional":
    case "readonly":
    case "catch":
      return next(def.innerType);
    case "pipe":
      // z.preprocess is a pipe out of a transform: the shape is the pipe's output.
      return next(defOf(def.in)?.type === "transform" ? def.out : def.in);
    case "lazy":
      return next(def.getter());
    case "intersection":
      return [...next(def.left), ...next(def.right)];
    case "union": {
      let options: unknown[] = def.options;
      const key = def.discriminator as string | undefined;
      if (key && isRecord(input)) {
        const picked = options.filter((o) => (o as { _zod?: { propValues?: Record<string, Set<unknown>> } })._zod?.propValues?.[key]?.has(input[key]));
        if (picked.length) options = picked;
      }
      return options.flatMap((o) => next(o));
    }
    case "object": {
      if (path.length === 0) return [def.shape as Record<string, unknown>];
      const [head, ...rest] = path;
      const child = (def.shape as Record<string, unknown>)[String(head)];
      return child ? next(child, isRecord(input) ? input[String(head)] : undefined, rest) : [];
    }
    case "array":
    case "record": {
      if (path.length === 0) return [];
      const [head, ...rest] = path;
      const value = Array.isArray(input) || isRecord(input) ? (input as Record<string, unknown>)[String(head)] : undefined;
      return next(def.type === "array" ? def.element : def.valueType, value, rest);
    }
    default:
      return [];
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function shown(name: string): string {
  return name.length > MAX_NAME ? `${name.slice(0, MAX_NAME)}…` : name;
}

function join(path: ReadonlyArray<PropertyKey>, source: IssueContext["source"]): string {
  return path.map(String).join(".") || (source === "query" ? "(query)" : "(body)");
}
