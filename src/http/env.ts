import type { Services } from "../services";

/** The one Hono environment type shared by every router. */
export interface AppEnv {
  Bindings: Record<string, unknown>;
  Variables: {
    services: Services;
    requestId: string;
    /** Set by `requireAuth`: the authenticated user. */
    userId: string;
    authKind: "api_key" | "id_token";
  };
}
