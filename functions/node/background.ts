/**
 * Background work of the Node process (the embedded twin of the Worker's cron and of QStash callbacks):
 * the delivery scheduler. With QStash configured, QStash calls the publish route and the scheduler only
 * sweeps; otherwise it polls due deliveries itself.
 */
import type { Hono } from "hono";
import type { Services } from "../../src/services";
import type { AppEnv } from "../../src/http/env";
import { startScheduler } from "./scheduler";

export interface Background {
  stop(): Promise<void>;
}

export async function startBackground(services: Services, _app: Hono<AppEnv>): Promise<Background> {
  const scheduler = startScheduler(services, {
    publish: services.queue.kind === "poller",
    // PGlite is opened by one process only, so at start-up every `publishing` claim belongs to a dead process.
    exclusiveDb: !services.config.databaseUrl,
  });
  return { stop: () => scheduler.stop() };
}
