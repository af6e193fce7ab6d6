/**
 * API key scopes: the areas of the API a key may call. A key made for every area has scopes null (the
 * default, and every key made before scopes existed); a key limited to some names them. Each authenticated
 * operation belongs to exactly one scope, declared in the OpenAPI document as `x-required-scope`.
 *
 * @example
 * parseScopes("qr");          // ["qr"]
 * parseScopes("all");         // null
 * describeScopes(["qr"]);     // "qr"
 */

/** The areas a key may be limited to; each names the routes of one area. */
export const API_KEY_SCOPES = ["qr", "photo", "social"] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

export function isApiKeyScope(value: string): value is ApiKeyScope {
  return (API_KEY_SCOPES as readonly string[]).includes(value);
}

/**
 * Reads a comma-separated scope list (`"qr"`, `"qr,photo"`, `"all"`); null means every area. Throws an Error
 * naming the scopes it knows for anything else, or for an empty list.
 */
export function parseScopes(text: string): ApiKeyScope[] | null {
  const names = text
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== "");
  if (names.length === 0) throw new Error(`no scope given; choose from ${API_KEY_SCOPES.join(", ")} or all`);
  if (names.includes("all")) return null;
  const unknown = names.filter((n) => !isApiKeyScope(n));
  if (unknown.length) throw new Error(`unknown scope ${unknown.map((n) => JSON.stringify(n)).join(", ")}; choose from ${API_KEY_SCOPES.join(", ")} or all`);
  return normaliseScopes(names as ApiKeyScope[]);
}

/** Sorted, without repeats; every scope at once is the same as all (null). */
export function normaliseScopes(scopes: readonly ApiKeyScope[] | null | undefined): ApiKeyScope[] | null {
  if (!scopes) return null;
  const set = API_KEY_SCOPES.filter((s) => scopes.includes(s));
  return set.length === API_KEY_SCOPES.length ? null : set;
}

/** How a key's scopes read to a person: "all" or "qr, photo". */
export function describeScopes(scopes: readonly ApiKeyScope[] | null): string {
  return scopes ? scopes.join(", ") : "all";
}

/** The sentence of the 403 a key limited to other areas gets. */
export function insufficientScopeMessage(needed: ApiKeyScope, has: readonly ApiKeyScope[] | null): string {
  return (
    `This API key may call only ${describeScopes(has)} routes; this route needs the ${needed} scope. ` +
    `Use a key with the ${needed} scope (create one in the hub under API keys, or with npm run admin -- key:create --scopes ${needed}).`
  );
}

/** Whether a key with these scopes may be limited to pages: only a key for QR codes alone (the one meant for public pages). */
export function mayHavePages(scopes: readonly ApiKeyScope[] | null): boolean {
  return scopes?.length === 1 && scopes[0] === "qr";
}

/** At most this many pages per key. */
export const MAX_ALLOWED_ORIGINS = 10;

/**
 * Reads a comma-separated list of page origins a `qr` key may be used from (`https://shop.example,
 * https://www.shop.example`), each normalised to its origin. Throws an Error naming the entry that is not an
 * http(s) origin (a path, query, user name or other scheme is refused, not dropped, so a typo is noticed).
 */
export function parseOrigins(text: string): string[] {
  const entries = text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (entries.length === 0) throw new Error("no origin given; write them as https://shop.example, comma-separated");
  if (entries.length > MAX_ALLOWED_ORIGINS) throw new Error(`at most ${MAX_ALLOWED_ORIGINS} origins`);
  const origins = entries.map((entry) => {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw new Error(`${JSON.stringify(entry)} is not an origin; write it as https://shop.example`);
    }
    if ((url.protocol !== "https:" && url.protocol !== "http:") || url.username || url.password || url.search || url.hash || url.pathname !== "/") {
      throw new Error(
        `${JSON.stringify(entry)} is not an origin; write it as https://shop.example (scheme and host, with a port if not the default, and nothing after)`,
      );
    }
    return url.origin;
  });
  return [...new Set(origins)];
}

/**
 * The origin of the page a request came from: its Origin header, else its Referer's origin; null when it
 * names none (a request from a server, or a page whose referrer policy sends nothing).
 */
export function pageOrigin(origin: string | undefined, referer: string | undefined): string | null {
  if (origin && origin !== "null") return origin;
  if (!referer) return null;
  try {
    const url = new URL(referer);
    return url.protocol === "https:" || url.protocol === "http:" ? url.origin : null;
  } catch {
    return null;
  }
}

/** The sentence of the 403 for a key used from a page it is not allowed on. */
export function originNotAllowedMessage(allowed: readonly string[], from: string | null): string {
  return (
    `This API key may be used only from pages on ${allowed.join(", ")}; ` +
    (from ? `this request came from ${from}.` : "this request named no page (no Origin or Referer header).")
  );
}
