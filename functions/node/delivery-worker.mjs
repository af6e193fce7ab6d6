// The delivery thread's entry (./delivery-thread.ts starts it): the bundle the server made of
// ./delivery-worker.ts (./thread-bundle.ts; no TypeScript loader in the thread), or, if bundling failed, the
// source through tsx (a worker thread does not take the server's loader).
import { workerData } from "node:worker_threads";

if (workerData?.bundle) {
  await import(workerData.bundle);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("./delivery-worker.ts");
}
