// Piscina's entry for a heavy-work thread. First of all it lowers its own scheduling priority (on Linux a
// thread's nice value is its own), so even loading its code yields to the request thread. Then it loads the
// task runner: the plain-JavaScript bundle the pool made at start (no TypeScript loader in the thread, which
// makes a cold start several times cheaper), or, if bundling failed, the TypeScript source through tsx.
import { setPriority } from "node:os";
import { workerData } from "node:worker_threads";

try {
  setPriority(10); // pid 0: this thread only
} catch {
  // not permitted here: run at normal priority
}

let runner;
if (workerData?.bundle) {
  runner = await import(workerData.bundle);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  runner = await import("./heavy-thread.ts");
}
export default runner.runTask;
