/**
 * Pending OAuth redirects (OIDC sign-in, platform connection): the `state` sent to the provider is random and
 * only its hash is stored, with the PKCE verifier and nonce the callback needs. Taking a state deletes it, so
 * a callback can be answered once; states live 10 minutes.
 */
import { and, eq, lt } from "drizzle-orm";
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
  await services.db.delete(oauthStates).where(lt(oauthStates.expiresAt, now));
  await services.db.insert(oauthStates).values({ stateHash: await sha256Hex(state), ...pending, expiresAt: new Date(now.getTime() + STATE_TTL_MS) });
  return state;
}

/** The pending state of this kind, removed as it is read; null when unknown, expired or of another kind. */
export async function takeState(services: Services, state: string | undefined, kind: StateKind): Promise<PendingState | null> {
  if (!state || state.length > 200) return null;
  const [row] = await services.db
    .delete(oauthStates)
    .where(and(eq(oauthStates.stateHash, await sha256Hex(state)), eq(oauthStates.kind, kind)))
    .returning();
  if (!row || row.expiresAt <= services.clock.now()) return null;
  return { kind, sessionHash: row.sessionHash, nonce: row.nonce, codeVerifier: row.codeVerifier };
}
