/**
 * Pending OAuth redirects (OIDC sign-in, platform connection): the `state` sent to the provider is random and
 * only its hash is stored, with the PKCE verifier and nonce the callback needs, and its owner: the hub
 * session that started a platform connection (none for a sign-in, which its browser's cookie binds). Taking
 * a state deletes it, and only its owner can take it, so a callback is answered once and someone else
 * opening the callback URL leaves it to its owner. States live 10 minutes; the periodic sweep deletes
 * expired ones (`purgeExpiredStates`: the Node scheduler, the Worker's cron).
 */
import { and, eq, isNull, lt } from "drizzle-orm";
import { oauthStates } from "../../db/schema";
import { randomBase62, sha256Hex } from "../lib/encoding";
import type { Services } from "../services";

export const STATE_TTL_MS = 10 * 60_000;
export type StateKind = "oidc" | "meta";

export interface PendingState {
  kind: StateKind;
  sessionHash: string | null;
  nonce: string | null;
  codeVerifier: string | null;
}

export async function saveState(services: Services, pending: PendingState, state = randomBase62(32)): Promise<string> {
  const now = services.clock.now();
  await services.db.insert(oauthStates).values({ stateHash: await sha256Hex(state), ...pending, expiresAt: new Date(now.getTime() + STATE_TTL_MS) });
  return state;
}

/**
 * The pending state of this kind owned by `sessionHash` (null: a sign-in's, which no session owns), removed
 * as it is read; null when unknown, expired, of another kind or another session's. Another session's state
 * is left as it was.
 */
export async function takeState(services: Services, state: string | undefined, kind: StateKind, sessionHash: string | null): Promise<PendingState | null> {
  if (!state || state.length > 200) return null;
  const owner = sessionHash === null ? isNull(oauthStates.sessionHash) : eq(oauthStates.sessionHash, sessionHash);
  const [row] = await services.db
    .delete(oauthStates)
    .where(and(eq(oauthStates.stateHash, await sha256Hex(state)), eq(oauthStates.kind, kind), owner))
    .returning();
  if (!row || row.expiresAt <= services.clock.now()) return null;
  return { kind, sessionHash: row.sessionHash, nonce: row.nonce, codeVerifier: row.codeVerifier };
}

/** Deletes the states that expired unused (a sign-in started and never finished); answers how many. */
export async function purgeExpiredStates(services: Pick<Services, "db" | "clock">): Promise<number> {
  const rows = await services.db.delete(oauthStates).where(lt(oauthStates.expiresAt, services.clock.now())).returning({ stateHash: oauthStates.stateHash });
  return rows.length;
}
