import type { SecureHeadersVariables } from "hono/secure-headers";
import type { AppEnv } from "../http/env";

/** The signed-in user of a hub request, from the session cookie. */
export interface HubSession {
  idHash: string;
  userId: string;
  email: string;
  csrfToken: string;
  /** The sealed message waiting for the next page (src/hub/flash.ts), or null. */
  flash: string | null;
}

/** Hono environment of the hub router: the app's variables plus the session (null when signed out). */
export interface HubEnv {
  Bindings: AppEnv["Bindings"];
  Variables: AppEnv["Variables"] & SecureHeadersVariables & { session: HubSession | null };
}
