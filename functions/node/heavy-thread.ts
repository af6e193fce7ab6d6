/**
 * The task runner of a heavy-work thread of the Node pool (heavy-pool.ts; heavy-thread.mjs is the thread's
 * entry and lowers its priority first): configures the engines once, then runs the tasks it is sent and
 * answers each with its value or its error as data (src/heavy/wire.ts).
 *
 * @example
 * // not called directly: Piscina loads heavy-thread.mjs, which loads this module
 * await runTask({ name: "qrDecode", input: { bytes } }); // { ok: true, value: "https://example.com" }
 */
import { HEAVY_TASKS, type HeavyTaskName } from "../../src/heavy";
import { settle, type Reply } from "../../src/heavy/wire";
import { configureNodeEngines } from "./engines";

configureNodeEngines();

export function runTask(message: { name: HeavyTaskName; input: unknown }): Promise<Reply<unknown>> {
  const task = HEAVY_TASKS[message.name] as (input: unknown) => Promise<unknown>;
  return settle(() => task(message.input));
}
