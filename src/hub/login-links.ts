/**
 * One-time sign-in links: `${PUBLIC_BASE_URL}/hub/login?token=...`, valid 15 minutes, usable once. Only the
 * token's SHA-256 is stored; using the link is one conditional UPDATE, so two clicks never both sign in.
 *
 * @example
 * const url = await createLoginLink(services, userId);
 */
import { and, eq, gt, isNull, lt } from "drizzle-orm";
import { loginLinks, users } from "../../db/schema";
import { randomBase62, sha256Hex } from "../lib/encoding";
import type { Services } from "../services";

export const LOGIN_LINK_TTL_MS = 15 * 60_000;

export async function createLoginLink(services: Pick<Services, "db" | "config" | "clock">, userId: string): Promise<string> {
  const token = randomBase62(43);
  const now = services.clock.now();
  await services.db.delete(loginLinks).where(lt(loginLinks.expiresAt, new Date(now.getTime() - 24 * 3600_000)));
  await services.db.insert(loginLinks).values({ tokenHash: await sha256Hex(token), userId, expiresAt: new Date(now.getTime() + LOGIN_LINK_TTL_MS) });
  return `${services.config.publicBaseUrl}/hub/login?token=${token}`;
}

const TOKEN = /^[0-9A-Za-z]{20,100}$/;

/** The e-mail of the user a link would sign in, without using it; null for an unknown, used or expired token. */
export async function peekLoginLink(services: Services, token: string): Promise<string | null> {
  if (!TOKEN.test(token)) return null;
  const now = services.clock.now();
  const [row] = await services.db
    .select({ email: users.email })
    .from(loginLinks)
    .innerJoin(users, eq(users.id, loginLinks.userId))
    .where(and(eq(loginLinks.tokenHash, await sha256Hex(token)), isNull(loginLinks.usedAt), gt(loginLinks.expiresAt, now)))
    .limit(1);
  return row?.email ?? null;
}

/** The link's user, once; null for an unknown, used or expired token. */
export async function useLoginLink(services: Services, token: string): Promise<string | null> {
  if (!TOKEN.test(token)) return null;
  const now = services.clock.now();
  const [row] = await services.db
    .update(loginLinks)
    .set({ usedAt: now })
    .where(and(eq(loginLinks.tokenHash, await sha256Hex(token)), isNull(loginLinks.usedAt), gt(loginLinks.expiresAt, now)))
    .returning({ userId: loginLinks.userId });
  return row?.userId ?? null;
}
