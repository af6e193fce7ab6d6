/**
 * The task runner of a heavy-work thread of the Node pool (heavy-pool.ts loads its build, dist/heavy-thread.js,
 * as Piscina's task file): lowers the thread's priority before anything else is evaluated (./low-priority.ts),
 * configures the engines once, then runs the tasks it is sent and
 * answers each with its value or its error as data (src/heavy/wire.ts). The large byte arrays a task makes
 * (a normalised JPEG, a scene PNG) move back to the request thread instead of being copied.
 *
 * @example
 * // not called directly: Piscina calls the default export of dist/heavy-thread.js
 * await runTask({ name: "qrDecode", input: { bytes } }); // { ok: true, value: "https://example.com" }
 */
import "./low-priority";
import { Piscina } from "piscina";
import type { HeavyOutput, HeavyTaskName } from "../../src/heavy";
import { HEAVY_TASKS } from "../../src/heavy/tasks";
import { movable, settle, type Reply } from "../../src/heavy/wire";
import { configureNodeEngines } from "./engines";

configureNodeEngines();

/** The fresh arrays (made by the task, kept by nothing in the thread) in each task's value. */
const RESULT_BYTES: { [N in HeavyTaskName]?: (value: HeavyOutput<N>) => Uint8Array[] } = {
  normaliseMedia: (value) => [value.bytes],
  normaliseMediaHead: (value) => (value ? [value.bytes] : []),
  normaliseMediaTail: (value) => (value ? [value.bytes] : []),
  photoFinish: (value) => [value.bytes, value.thumbnail],
};

export async function runTask(message: { name: HeavyTaskName; input: unknown }): Promise<Reply<unknown> | object> {
  const task = HEAVY_TASKS[message.name] as (input: unknown) => Promise<unknown>;
  const reply = await settle(() => task(message.input));
  const bytes = reply.ok ? (RESULT_BYTES[message.name] as ((value: unknown) => Uint8Array[]) | undefined)?.(reply.value) : undefined;
  const transfer = movable(bytes);
  if (!transfer) return reply;
  // Piscina's Transferable: its symbols are typed as plain `symbol`, hence the cast.
  return Piscina.move({ [Piscina.transferableSymbol]: transfer, [Piscina.valueSymbol]: reply } as never);
}

export default runTask;
