/**
 * One heavy-work thread of the Node pool (heavy-pool.ts): lowers its own scheduling priority (on Linux a
 * thread's nice value is its own, so the request thread keeps answering cheap requests first while images
 * are crunched), configures the engines once, then runs the tasks it is sent and answers each with its
 * value or its error as data (src/heavy/wire.ts).
 *
 * @example
 * // not called directly: Piscina loads heavy-thread.mjs, which loads this module
 * await runTask({ name: "qrDecode", input: { bytes } }); // { ok: true, value: "https://example.com" }
 */
import { HEAVY_TASKS, type HeavyTaskName } from "../../src/heavy";
import { settle, type Reply } from "../../src/heavy/wire";
import { setPriority } from "node:os";
import { configureNodeEngines } from "./engines";

try {
  setPriority(10); // this thread only (pid 0 = the calling thread on Linux)
} catch {
  // not permitted here: run at normal priority
}
configureNodeEngines();

export function runTask(message: { name: HeavyTaskName; input: unknown }): Promise<Reply<unknown>> {
  const task = HEAVY_TASKS[message.name] as (input: unknown) => Promise<unknown>;
  return settle(() => task(message.input));
}
