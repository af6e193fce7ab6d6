/**
 * The methods the API document gives a path, for a request whose path is an operation's but whose method is
 * not: 405 METHOD_NOT_ALLOWED naming them in `Allow`, and OPTIONS answered 204 with `Allow` (RFC 9110 §15.5.6,
 * §9.3.7). Read from the app's registry of operations once, the first time it is asked, so it always agrees with
 * the document (HEAD goes with GET, as Hono answers it).
 *
 * @example
 * const allowed = allowedMethods(app);
 * allowed("/api/v1/social/posts/9b1d…"); // ["GET", "HEAD", "DELETE"]
 * allowed("/nowhere");                  // null
 */
import type { OpenAPIHono } from "@hono/zod-openapi";

export function allowedMethods(app: Pick<OpenAPIHono, "openAPIRegistry">): (path: string) => string[] | null {
  let paths: Array<{ pattern: RegExp; methods: Set<string> }> | undefined;
  const build = () => {
    const byPath = new Map<string, Set<string>>();
    for (const def of app.openAPIRegistry.definitions) {
      if (def.type !== "route") continue;
      const methods = byPath.get(def.route.path) ?? byPath.set(def.route.path, new Set()).get(def.route.path)!;
      methods.add(def.route.method.toUpperCase());
      if (def.route.method === "get") methods.add("HEAD");
    }
    return [...byPath].map(([path, methods]) => ({ pattern: patternOf(path), methods }));
  };
  return (path) => {
    paths ??= build();
    const methods = new Set<string>();
    for (const p of paths) if (p.pattern.test(path)) for (const m of p.methods) methods.add(m);
    return methods.size ? ORDER.filter((m) => methods.has(m)) : null;
  };
}

const ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

/**
 * `/api/v1/social/posts/{id}` -> a pattern where each `{param}` is one non-empty path segment, and a
 * parameter with a pattern of its own (Hono's `{text{[\s\S]+}}`) is that pattern.
 */
function patternOf(template: string): RegExp {
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  let source = "";
  let last = 0;
  for (const param of template.matchAll(/\{\w+(?:\{(.+?)\})?\}(?=\/|$)/g)) {
    source += `${literal(template.slice(last, param.index))}${param[1] ? `(?:${param[1]})` : "[^/]+"}`;
    last = param.index + param[0].length;
  }
  return new RegExp(`^${source}${literal(template.slice(last))}$`);
}
