/**
 * The fuzz worker thread: builds the corpus once, then runs the jobs runner.ts sends (one property, one seed,
 * a number of cases or a time), telling the parent when each case starts (with its input) and ends, so the
 * parent can end this thread when a case hangs or grows too large and still name the input.
 */
import { parentPort } from "node:worker_threads";
import fc from "fast-check";
import { configureNodeEngines } from "../../functions/node/engines";
import { buildCorpus, propertyNamed } from "./properties";
import type { FromWorker, Job } from "./runner";

const port = parentPort!;
const post = (message: FromWorker) => port.postMessage(message);
// ZXing's reader, the PNG deflaters and the text engine, as each of the server's heavy-work threads has them.
configureNodeEngines();

// Loaded through tsx's CommonJS loader (no top-level await): jobs come only after "ready".
const ready = buildCorpus().then((corpus) => {
  post({ type: "ready" });
  return corpus;
});

port.on("message", async (job: Job) => {
  const corpus = await ready;
  const property = propertyNamed(job.property);
  let index = 0;
  const prop = fc.asyncProperty(property.arbitrary(corpus), async (input) => {
    post({ type: "case", index: index++, input });
    try {
      await property.check(input);
    } finally {
      post({ type: "case-end" });
    }
  });
  const result = await fc.check(prop, {
    seed: job.seed,
    numRuns: job.path ? 1 : (job.runs ?? Number.MAX_SAFE_INTEGER),
    ...(job.ms ? { interruptAfterTimeLimit: job.ms, markInterruptAsFailure: false } : {}),
    ...(job.path ? { path: job.path, endOnFailure: true } : {}),
  });
  const error = result.errorInstance;
  post({
    type: "done",
    cases: result.numRuns,
    failure: result.failed
      ? {
          kind: "outcome",
          message: error instanceof Error ? `${error.name}: ${error.message}` : String(error ?? "failed"),
          input: result.counterexample?.[0],
          path: result.counterexamplePath ?? undefined,
          shrinks: result.numShrinks,
        }
      : undefined,
  });
});
