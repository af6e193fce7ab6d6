/**
 * Background work of the Node process (the embedded twin of the Worker's cron and queue callbacks).
 * Area C's delivery engine registers its scheduler loop here.
 */
import type { Hono } from "hono";
import type { Services } from "../../src/services";
import type { AppEnv } from "../../src/http/env";

export interface Background {
  stop(): Promise<void>;
}

export async function startBackground(_services: Services, _app: Hono<AppEnv>): Promise<Background> {
  return { async stop() {} };
}
