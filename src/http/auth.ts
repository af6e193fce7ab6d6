/**
 * Authentication: `Authorization: Bearer <API key>` or `Bearer <identity-provider ID token>`.
 * API keys are checked for shape and checksum before the database is asked; ID tokens are verified against
 * AUTH_JWKS_URL with issuer, audience, expiry and an asymmetric algorithm allowlist, and their subject is
 * mapped to a user (created on first sight). Every authenticated route names the one scope (area) it
 * belongs to; a key limited to other areas is refused with 403 INSUFFICIENT_SCOPE. ID tokens carry every scope.
 *
 * Operations attach it through their access (`authenticated` in src/http/openapi.ts), never router-wide.
 *
 * @example
 * router.get("/x", requireAuth("social"), (c) => c.text(c.get("userId")));
 */
import { and, eq, isNull } from "drizzle-orm";
import type { Context, MiddlewareHandler } from "hono";
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from "jose";
import { users } from "../../db/schema";
import type { Services } from "../services";
import type { AppEnv } from "./env";
import { ApiError } from "./errors";
import { looksLikeApiKey, touchApiKey, verifyApiKey } from "./api-keys";
import { insufficientScopeMessage, originNotAllowedMessage, pageOrigin, type ApiKeyScope } from "../lib/scopes";

const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

export function unauthorized(message = "Missing or invalid credentials: send Authorization: Bearer <API key>."): ApiError {
  return new ApiError("UNAUTHORIZED", message, { headers: { "WWW-Authenticate": 'Bearer realm="api"' } });
}

/** The 403 for a key whose scopes leave out the route's area. */
export function insufficientScope(needed: ApiKeyScope, has: readonly ApiKeyScope[] | null): ApiError {
  return new ApiError("INSUFFICIENT_SCOPE", insufficientScopeMessage(needed, has));
}

/** The page a request came from, as a key's allowed origins are checked against: Origin, else Referer. */
export function requestPage(c: Context<AppEnv>): string | null {
  return pageOrigin(c.req.header("origin"), c.req.header("referer"));
}

/**
 * Authenticates an API key for a route of the area `scope`; `page` gives the page the request came from
 * (`requestPage`), asked only of a key limited to pages. Throws 401 when the key is malformed, unknown or
 * revoked, and 403 when the key is limited to other areas or to other pages.
 */
export async function authenticateApiKey(services: Services, key: string, scope: ApiKeyScope, page: () => string | null): Promise<string> {
  const found = await verifyApiKey(services.db, key, services.apiKeyCache);
  if (!found) throw unauthorized("The API key is not valid or has been revoked.");
  // Last use is recorded when the database was asked anyway (at most once per cache lifetime of the key).
  if (found.fresh) services.defer(touchApiKey(services.db, found.keyId).catch((err) => services.log.warn("touch api key failed", { err: String(err) })));
  if (found.scopes && !found.scopes.includes(scope)) throw insufficientScope(scope, found.scopes);
  if (found.allowedOrigins) {
    const from = page();
    if (!(from && found.allowedOrigins.includes(from))) throw new ApiError("ORIGIN_NOT_ALLOWED", originNotAllowedMessage(found.allowedOrigins, from));
  }
  return found.userId;
}

export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/**
 * Requires a Bearer API key with the route's scope, or an ID token (which has every scope); sets `userId`
 * and `authKind`.
 */
export function requireAuth(scope: ApiKeyScope): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const token = bearerToken(c.req.header("authorization"));
    if (!token) throw unauthorized();
    const services = c.get("services");
    if (looksLikeApiKey(token)) {
      c.set("userId", await authenticateApiKey(services, token, scope, () => requestPage(c)));
      c.set("authKind", "api_key");
    } else if (token.split(".").length === 3) {
      c.set("userId", await authenticateIdToken(services, token));
      c.set("authKind", "id_token");
    } else {
      throw unauthorized("The bearer credential is neither an API key nor an ID token.");
    }
    await next();
  };
}

/**
 * Requires the API key in the route's `{apiKey}` path segment, with the route's scope; sets `userId` and
 * `authKind`. A segment that is no key at all (a placeholder such as `-` with the header forgotten) is told
 * where the key goes, rather than that the key is not valid. With `orBearer`, a Bearer header is used when
 * there is one (then the path segment is not), and the 401 names both ways.
 */
export function requirePathKey(scope: ApiKeyScope, orBearer: boolean): MiddlewareHandler<AppEnv> {
  const bearer = requireAuth(scope);
  const pathKey: MiddlewareHandler<AppEnv> = async (c, next) => {
    const segment = c.req.param("apiKey") ?? "";
    if (!looksLikeApiKey(segment)) {
      throw unauthorized(`No API key in the path: put your API key in place of {apiKey}${orBearer ? ", or send Authorization: Bearer <API key>" : ""}.`);
    }
    c.set("userId", await authenticateApiKey(c.get("services"), segment, scope, () => requestPage(c)));
    c.set("authKind", "api_key");
    await next();
  };
  if (!orBearer) return pathKey;
  return (c, next) => (bearerToken(c.req.header("authorization")) !== null ? bearer(c, next) : pathKey(c, next));
}

const jwksCache = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

function jwksFor(url: string) {
  let jwks = jwksCache.get(url);
  if (!jwks) {
    jwks = createRemoteJWKSet(new URL(url), { cooldownDuration: 30_000, cacheMaxAge: 10 * 60_000, timeoutDuration: 5_000 });
    jwksCache.set(url, jwks);
  }
  return jwks;
}

export async function authenticateIdToken(services: Services, token: string): Promise<string> {
  const auth = services.config.auth;
  if (!auth) throw unauthorized("ID tokens are not accepted by this deployment; use an API key.");
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, jwksFor(auth.jwksUrl), {
      issuer: auth.issuer,
      audience: auth.audience,
      algorithms: ALGORITHMS,
      clockTolerance: 30,
      requiredClaims: ["sub", "exp"],
    }));
  } catch (err) {
    services.log.info("id token rejected", { reason: (err as { code?: string }).code ?? "invalid" });
    throw unauthorized("The ID token is not valid (signature, issuer, audience or expiry).");
  }
  return userForSubject(services, payload);
}

/** The user an identity-provider subject maps to, created on first sight (shared with the hub's OIDC sign-in). */
export async function userForSubject(services: Services, payload: JWTPayload): Promise<string> {
  const db = services.db;
  const subject = `${payload.iss}|${payload.sub}`;
  const [existing] = await db.select({ id: users.id }).from(users).where(eq(users.externalSubject, subject)).limit(1);
  if (existing) return existing.id;

  const email = typeof payload.email === "string" ? payload.email.trim().toLowerCase() : null;
  // Only a verified e-mail may link the token to a user made by the admin CLI; anything else gets its own user.
  if (email && payload.email_verified === true) {
    const [linked] = await db
      .update(users)
      .set({ externalSubject: subject })
      .where(and(eq(users.email, email), isNull(users.externalSubject)))
      .returning({ id: users.id });
    if (linked) return linked.id;
  }
  // A new user keeps a verified e-mail when no user holds it yet; otherwise an address made from the subject.
  const syntheticEmail = `${encodeURIComponent(String(payload.sub))}@${hostOf(String(payload.iss))}.idp`;
  const candidates = email && payload.email_verified === true ? [email, syntheticEmail] : [syntheticEmail];
  for (const candidate of candidates) {
    const [created] = await db.insert(users).values({ email: candidate, externalSubject: subject }).onConflictDoNothing().returning({ id: users.id });
    if (created) return created.id;
    const [raced] = await db.select({ id: users.id }).from(users).where(eq(users.externalSubject, subject)).limit(1);
    if (raced) return raced.id;
  }
  throw new ApiError("INTERNAL", "Could not map the ID token to a user.");
}

function hostOf(issuer: string): string {
  try {
    return new URL(issuer).host;
  } catch {
    return "issuer";
  }
}
