/**
 * The platform adapters by platform name, and where their Graph API lives: `GRAPH_API_BASE` when set,
 * otherwise the built-in sandbox of this very service (`${PUBLIC_BASE_URL}/sandbox/graph`), reached over
 * real HTTP exactly like the platform.
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

export function graphBaseUrl(config: Config): string {
  return config.graph.baseUrl ?? `${config.publicBaseUrl}/sandbox/graph`;
}

export type { PlatformAdapter, PublishContext, PublishResult } from "./types";
export { PlatformError, type ErrorKind } from "./errors";
