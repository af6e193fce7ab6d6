/**
 * Runs decodePngAtMost over the fuzz inputs of png-decode.test.ts in a worker thread, posting one message per
 * case, so the test can terminate the worker (and name the case) if a decode ever hangs.
 */
import { parentPort, workerData } from "node:worker_threads";
import { decodePngAtMost } from "../../src/images/png-decode";

export interface FuzzCase {
  bytes: Uint8Array;
  maxSide: number;
}

export interface FuzzOutcome {
  index: number;
  /** "image" (a well-formed RgbaImage), "null", "error" (an Error was thrown), or what went wrong otherwise. */
  outcome: string;
  ms: number;
}

const cases = (workerData as { cases: FuzzCase[] }).cases;
for (let index = 0; index < cases.length; index++) {
  const { bytes, maxSide } = cases[index]!;
  const t = performance.now();
  let outcome: string;
  try {
    const img = decodePngAtMost(bytes, maxSide);
    if (img === null) outcome = "null";
    else if (img.width >= 1 && img.height >= 1 && Math.max(img.width, img.height) <= maxSide && img.data.length === img.width * img.height * 4)
      outcome = "image";
    else outcome = `malformed image ${img.width}x${img.height} with ${img.data.length} bytes`;
  } catch (e) {
    outcome = e instanceof Error ? "error" : `threw a non-Error: ${String(e)}`;
  }
  parentPort!.postMessage({ index, outcome, ms: performance.now() - t } satisfies FuzzOutcome);
}
