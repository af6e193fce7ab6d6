/**
 * On PostgreSQL the Node server publishes in a thread of its own: the delivery scheduler (claims, the
 * platform calls, their records, and the sandbox's side of each call when the sandbox is on) runs in a worker
 * thread (./delivery-worker.ts) with its own database pool, so the request thread only answers requests.
 * Under post creation the publishing was two thirds of the server's CPU, all on the one thread that also
 * parsed and answered every request (docs/performance.md).
 *
 * Nothing of the delivery guarantees moves: claims, fences and the write-ahead marks are in the database,
 * whichever thread or process holds them. What crosses the thread boundary is the wake-up: the server's
 * poller queue tells the thread when a delivery it created is due. PGlite stays on one thread (the database
 * is in the request thread's memory). A thread that dies unexpectedly is started again after a second; its
 * claims expire and the sweep releases them, as after a crash.
 *
 * @example
 * const thread = startDeliveryThread(services.queue as PollerQueue, services.log);
 * await thread.stop();
 */
import { Worker } from "node:worker_threads";
import type { PollerQueue } from "../../src/adapters/queue/poller";
import type { Logger } from "../../src/services";
import { threadEntry } from "./thread-entry";

const RESTART_MS = 1000;
const STOP_TIMEOUT_MS = 35_000;

export interface DeliveryThread {
  stop(): Promise<void>;
}

export function startDeliveryThread(queue: PollerQueue, log: Pick<Logger, "error" | "warn">): DeliveryThread {
  let stopping = false;
  let worker: Worker | null = null;
  /** Whether `worker` is running (false before the first start and between an unexpected exit and its restart). */
  let alive = false;
  let restart: ReturnType<typeof setTimeout> | null = null;

  const launch = (entry: URL) =>
    new Promise<void>((resolve, reject) => {
      // Not the server's node flags: from the sources they load tsx, which the built thread does not need. A
      // CPU profile (`--cpu-prof`, a benchmark's BENCH_NODE_ARGS) is taken of this thread too, in a file of its own.
      const thread = new Worker(entry, { execArgv: process.execArgv.filter((flag) => flag.startsWith("--cpu-prof")) });
      worker = thread;
      alive = true;
      thread.once("message", () => resolve());
      // The thread's state changes wrote webhook messages: this thread's sender sends them.
      thread.on("message", (m: { webhooks?: number }) => {
        if (typeof m?.webhooks === "number") queue.kickWebhooks(m.webhooks ? new Date(m.webhooks) : undefined);
      });
      thread.once("error", (err) => {
        log.error("delivery thread failed", { error: String(err) });
        reject(err);
      });
      thread.once("exit", (code) => {
        alive = false;
        reject(new Error(`the delivery thread exited (code ${code})`)); // nothing if it had started
        if (stopping) return;
        log.error("delivery thread exited; starting it again", { code });
        restart = setTimeout(() => void launch(entry).catch(() => {}), RESTART_MS);
      });
    });

  // Started, not waited for: the server answers requests meanwhile, and the thread's first look at the
  // database claims whatever fell due before it was up.
  const started = threadEntry("delivery-worker")
    .then((entry) => (stopping ? undefined : launch(entry)))
    .catch(() => {});
  const unwatch = queue.watch((due) => worker?.postMessage({ due: due.getTime() }));
  return {
    async stop() {
      stopping = true;
      unwatch();
      if (restart) clearTimeout(restart);
      await started;
      if (!alive || !worker) return;
      const thread = worker;
      const stopped = new Promise<void>((resolve) => {
        thread.on("message", (m: { stopped?: boolean }) => m.stopped && resolve());
        thread.once("exit", () => resolve());
      });
      thread.postMessage({ stop: true });
      const deadline = new Promise<void>((r) => setTimeout(r, STOP_TIMEOUT_MS).unref());
      await Promise.race([stopped, deadline]);
      await thread.terminate();
    },
  };
}
