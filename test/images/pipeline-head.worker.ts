/**
 * The head of normalisation's two-thread pipeline in a worker thread, for pipeline.test.ts (whose own thread
 * runs the tail): one message `{ bytes, pipe }` in, `{ value }` (null when the tail has the JPEG) or
 * `{ error }` out.
 */
import { parentPort } from "node:worker_threads";
import { DEFAULT_DECODE_LIMITS } from "../../src/images/limits";
import { normaliseHead } from "../../src/images/normalise";
import type { PlanePipe } from "../../src/images/plane-pipe";

parentPort!.once("message", async ({ bytes, pipe }: { bytes: Uint8Array; pipe: PlanePipe }) => {
  try {
    parentPort!.postMessage({ value: await normaliseHead(bytes, DEFAULT_DECODE_LIMITS, pipe) });
  } catch (err) {
    parentPort!.postMessage({ error: { name: (err as Error).name, message: (err as Error).message, code: (err as { code?: string }).code } });
  }
});
