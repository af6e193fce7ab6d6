/**
 * Post/redirect/get for every hub form: a POST does its work, stores what the next page must say in the
 * session (`hub_sessions.flash`) and answers 303 to a page; that page's GET takes the message and shows it
 * once. A reload of the page shows it no more, and repeats no POST.
 *
 * The message may hold a secret shown once (a new API key, a webhook signing secret), so it is stored encrypted with the token key
 * (`services.tokens`), never put in a URL, and taken by a conditional UPDATE: of two loads at once only one
 * shows it. An untaken message is dropped after FLASH_TTL_MS (and with its session at sign-out).
 *
 * @example
 * return redirectWithFlash(c, "/hub/keys", { kind: "ok", text: "Key revoked." });
 * const flash = await takeFlash(c); // in the GET handler, passed to <Layout flash={flash}>
 */
import { and, eq } from "drizzle-orm";
import type { Context } from "hono";
import { hubSessions } from "../../db/schema";
import type { ApiKeyScope } from "../lib/scopes";
import type { HubEnv } from "./env";

/** How long a message waits for its page. */
export const FLASH_TTL_MS = 5 * 60_000;

/** A key just made, shown once on the keys page. */
export interface NewKey {
  key: string;
  name: string;
  scopes: ApiKeyScope[] | null;
  allowedOrigins: string[] | null;
}

export interface Flash {
  kind: "ok" | "error";
  text: string;
  newKey?: NewKey;
  /** A webhook endpoint's signing secret, just made or rotated, shown once on its page. */
  webhookSecret?: string;
}

/** Stores `flash` in the signed-in session, for the next page that takes it. */
export async function setFlash(c: Context<HubEnv>, flash: Flash): Promise<void> {
  const services = c.get("services");
  const session = c.get("session");
  if (!session) return;
  const sealed = await services.tokens.encrypt(JSON.stringify({ at: services.clock.now().getTime(), flash }));
  await services.db.update(hubSessions).set({ flash: sealed }).where(eq(hubSessions.idHash, session.idHash));
  session.flash = sealed;
}

/** A 303 to `path` (a hub page), with `flash` waiting for it. */
export async function redirectWithFlash(c: Context<HubEnv>, path: string, flash: Flash): Promise<Response> {
  await setFlash(c, flash);
  return c.redirect(path, 303);
}

/** The session's waiting message, removed as it is read; null when none, already taken, or expired. */
export async function takeFlash(c: Context<HubEnv>): Promise<Flash | null> {
  const services = c.get("services");
  const session = c.get("session");
  const sealed = session?.flash;
  if (!session || !sealed) return null;
  session.flash = null;
  const [taken] = await services.db
    .update(hubSessions)
    .set({ flash: null })
    .where(and(eq(hubSessions.idHash, session.idHash), eq(hubSessions.flash, sealed)))
    .returning({ idHash: hubSessions.idHash });
  if (!taken) return null;
  try {
    const { at, flash } = JSON.parse(await services.tokens.decrypt(sealed)) as { at: number; flash: Flash };
    return services.clock.now().getTime() - at <= FLASH_TTL_MS ? flash : null;
  } catch {
    // Sealed under a token key since replaced: nothing to show.
    return null;
  }
}
