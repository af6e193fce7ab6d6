/**
 * Background work of the Node process (the embedded twin of the Worker's cron and of QStash callbacks):
 * the delivery scheduler (on PostgreSQL its publishing in a thread of its own, delivery-thread.ts), the
 * webhook sender (webhook-sender.ts), and the tables' statistics where no autovacuum keeps them
 * (table-statistics.ts).
 * With QStash configured, QStash calls the publish route and the scheduler only sweeps; otherwise it polls
 * due deliveries itself.
 */
import type { DbHandle } from "../../db/client";
import type { Services } from "../../src/services";
import { startScheduler } from "./scheduler";
import { keepTableStatistics } from "./table-statistics";
import { startDeliveryThread } from "./delivery-thread";
import { startWebhookSender } from "./webhook-sender";
import type { PollerQueue } from "../../src/adapters/queue/poller";

export interface Background {
  stop(): Promise<void>;
}

export async function startBackground(services: Services, driver: DbHandle["driver"]): Promise<Background> {
  const statistics = await keepTableStatistics(services.db, driver, services.log);
  const poller = services.queue.kind === "poller";
  // On PostgreSQL the publishing runs in a thread of its own (delivery-thread.ts); this scheduler then sweeps.
  const thread = poller && driver === "node-postgres" ? startDeliveryThread(services.queue as PollerQueue, services.log) : null;
  const scheduler = startScheduler(services, {
    publish: poller && !thread,
    // PGlite is opened by one process only, so at start-up every `publishing` claim belongs to a dead process.
    exclusiveDb: !services.config.databaseUrl,
  });
  // Webhook messages go out from this thread, through the poller; with QStash, QStash brings each one back.
  const webhooks = poller ? startWebhookSender(services, { exclusiveDb: !services.config.databaseUrl }) : null;
  return {
    async stop() {
      await scheduler.stop();
      await webhooks?.stop();
      await thread?.stop();
      await statistics.stop();
    },
  };
}
