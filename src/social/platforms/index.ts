/**
 * The platform adapters by platform name, and where their Graph API lives: `GRAPH_API_BASE` when set; the
 * built-in sandbox of this very service (`${PUBLIC_BASE_URL}/sandbox/graph`, reached over real HTTP exactly
 * like the platform) when PLATFORM_SANDBOX=on; otherwise the real Graph API.
 *
 * @example
 * const adapter = adapterFor("photoplatform");
 */
import type { Config } from "../../config";
import type { Platform } from "../accounts";
import { pagePlatform } from "./pageplatform";
import { photoPlatform } from "./photoplatform";
import type { PlatformAdapter } from "./types";

const ADAPTERS: Record<Platform, PlatformAdapter> = { pageplatform: pagePlatform, photoplatform: photoPlatform };

export function adapterFor(platform: string): PlatformAdapter | null {
  return (ADAPTERS as Record<string, PlatformAdapter | undefined>)[platform] ?? null;
}

/** The real platforms' Graph API root, used when neither GRAPH_API_BASE nor the sandbox says otherwise. */
export const REAL_GRAPH_API_BASE = "https://graph.facebook.com";

export function graphBaseUrl(config: Config): string {
  return config.graph.baseUrl ?? (config.graph.sandbox ? `${config.publicBaseUrl}/sandbox/graph` : REAL_GRAPH_API_BASE);
}

export type { PlatformAdapter, PublishContext, PublishResult } from "./types";
export { PlatformError, type ErrorKind } from "./errors";
