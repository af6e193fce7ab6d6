/**
 * The delivery thread's entry (started by ./delivery-thread.ts): its own services on the server's
 * configuration (its own node-postgres pool, the same DATA_DIR secrets and files), an app of only the
 * platform sandbox's routes, reached in process, and a scheduler that only claims and publishes; the
 * server's own scheduler keeps the sweep; its webhook kicks go to the server (`{ webhooks }`), whose sender
 * sends the messages. Messages from the server: `{ due }` (a delivery due at that
 * epoch ms was created or re-queued there) and `{ stop: true }` (stop claiming, finish what is in flight,
 * close, answer `{ stopped: true }`).
 */
import { parentPort } from "node:worker_threads";
import { parseConfig } from "../../src/config";
import { createSandboxApp } from "../../src/sandbox-app";
import type { PollerQueue } from "../../src/adapters/queue/poller";
import { buildNodeServices } from "./services";
import { answerSandboxInProcess } from "./sandbox-fetch";
import { embeddedDefaults } from "./embedded";
import { startScheduler } from "./scheduler";

const port = parentPort!;
const config = parseConfig(embeddedDefaults(process.env));
const node = await buildNodeServices(config, { migrate: false });
const { services } = node;
answerSandboxInProcess(services, () => createSandboxApp(services));
const scheduler = startScheduler(services, { publish: true, housekeeping: false });
const queue = services.queue as PollerQueue;
// Webhook messages are sent by the server's thread (functions/node/webhook-sender.ts): tell it when they may be
// due, once per turn of the event loop with the earliest time (0: now), as every publish of a burst kicks.
let kick: number | null = null;
queue.watchWebhooks((due) => {
  const at = due?.getTime() ?? 0;
  if (kick !== null) {
    kick = Math.min(kick, at);
    return;
  }
  kick = at;
  setImmediate(() => {
    port.postMessage({ webhooks: kick });
    kick = null;
  });
});

port.on("message", (message: { due?: number; stop?: boolean }) => {
  if (typeof message.due === "number") void queue.enqueue("", new Date(message.due));
  if (message.stop) {
    void (async () => {
      await scheduler.stop();
      await node.close();
      port.postMessage({ stopped: true });
      port.close();
    })();
  }
});
port.postMessage({ ready: true });
