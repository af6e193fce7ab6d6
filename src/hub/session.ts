/**
 * Hub sessions: a random id in an HttpOnly, SameSite=Lax cookie (Secure and `__Host-` prefixed when the
 * service is served over HTTPS); only the id's SHA-256 is stored, with the user, a CSRF synchronizer token
 * and an expiry. Signing out deletes the row, so a copied cookie stops working at once.
 *
 * @example
 * const { cookie } = await createSession(services, userId); setSessionCookie(c, cookie);
 */
import { and, eq, gt, lt } from "drizzle-orm";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { hubSessions, users } from "../../db/schema";
import { randomBase62, sha256Hex } from "../lib/encoding";
import type { Services } from "../services";
import type { HubEnv, HubSession } from "./env";

export const SESSION_TTL_MS = 7 * 24 * 3600_000;

export function isHttps(services: Services): boolean {
  return services.config.publicBaseUrl.startsWith("https:");
}

/** The cookie's base name; over HTTPS Hono's `host` prefix makes it `__Host-hub_session`. */
export const SESSION_COOKIE = "hub_session";

const prefixFor = (services: Services) => (isHttps(services) ? ("host" as const) : undefined);

export async function createSession(services: Services, userId: string): Promise<{ cookie: string }> {
  const cookie = randomBase62(43);
  const now = services.clock.now();
  // Expired rows of anyone are cleared here, so the table never grows without bound.
  await services.db.delete(hubSessions).where(lt(hubSessions.expiresAt, now));
  await services.db.insert(hubSessions).values({
    idHash: await sha256Hex(cookie),
    userId,
    csrfToken: randomBase62(32),
    expiresAt: new Date(now.getTime() + SESSION_TTL_MS),
  });
  return { cookie };
}

export async function loadSession(services: Services, cookie: string | undefined): Promise<HubSession | null> {
  if (!cookie || !/^[0-9A-Za-z]{20,100}$/.test(cookie)) return null;
  const idHash = await sha256Hex(cookie);
  const [row] = await services.db
    .select({ idHash: hubSessions.idHash, userId: hubSessions.userId, csrfToken: hubSessions.csrfToken, flash: hubSessions.flash, email: users.email })
    .from(hubSessions)
    .innerJoin(users, eq(users.id, hubSessions.userId))
    .where(and(eq(hubSessions.idHash, idHash), gt(hubSessions.expiresAt, services.clock.now())))
    .limit(1);
  return row ?? null;
}

export async function endSession(services: Services, idHash: string): Promise<void> {
  await services.db.delete(hubSessions).where(eq(hubSessions.idHash, idHash));
}

export function readSessionCookie(c: Context<HubEnv>): string | undefined {
  return getCookie(c, SESSION_COOKIE, prefixFor(c.get("services")));
}

export function setSessionCookie(c: Context<HubEnv>, value: string): void {
  const secure = isHttps(c.get("services"));
  setCookie(c, SESSION_COOKIE, value, {
    path: "/",
    httpOnly: true,
    sameSite: "Lax",
    secure,
    maxAge: SESSION_TTL_MS / 1000,
    prefix: prefixFor(c.get("services")),
  });
}

export function clearSessionCookie(c: Context<HubEnv>): void {
  const secure = isHttps(c.get("services"));
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure, prefix: prefixFor(c.get("services")) });
}
