/**
 * Runs fuzz jobs (one property of properties.ts, one seed, a number of cases or a time) in a worker thread,
 * case by case under a time and memory bound: a case that runs longer than `caseMs`, or grows the process by
 * more than `caseMb` (resident memory, sampled while it runs; the worker's V8 heap is capped the same), ends
 * the worker and fails the job with that case's input; the next job gets a fresh worker. Used by the vitest
 * slice (test/images/parsers.fuzz.test.ts) and the timed runner (scripts/fuzz.ts).
 *
 * @example
 * const runner = new FuzzRunner();
 * const report = await runner.run({ property: "jpeg-decoder", seed: 42, runs: 200 });
 * report.cases; // 200
 * report.failure; // undefined, or { kind, message, input, path }
 * await runner.close();
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

export interface Job {
  property: string;
  seed: number;
  /** Cases to run (the slice), or */
  runs?: number;
  /** milliseconds to run for (the timed runner). */
  ms?: number;
  /** fast-check's replay path of one case (with `seed`). */
  path?: string;
}

export interface Failure {
  /** outcome: the property's check failed (shrunk); hang and memory: the bound was passed; crash: the worker died. */
  kind: "outcome" | "hang" | "memory" | "crash";
  message: string;
  /** The failing case's input (the property's input type). */
  input?: unknown;
  /** fast-check's path; with the seed it replays the case (`--seed S --path P`). */
  path?: string;
  shrinks?: number;
}

export interface JobReport {
  job: Job;
  cases: number;
  failure?: Failure;
}

export type FromWorker =
  | { type: "ready" }
  | { type: "case"; index: number; input: unknown }
  | { type: "case-end" }
  | { type: "done"; cases: number; failure?: Failure };

export interface Bounds {
  /** A case running longer than this is a hang (FUZZ_CASE_MS, default 10 s). */
  caseMs: number;
  /** A case growing the process by more than this many MB is a failure (FUZZ_CASE_MB, default 1024). */
  caseMb: number;
}

export const DEFAULT_BOUNDS: Bounds = {
  caseMs: Number(process.env.FUZZ_CASE_MS ?? 10_000),
  caseMb: Number(process.env.FUZZ_CASE_MB ?? 1024),
};

/** Loading the corpus and TypeScript in a new worker may take this long before the first job starts. */
const BOOT_MS = 60_000;
const SAMPLE_MS = 50;

export class FuzzRunner {
  private worker?: Worker;
  private booted?: Promise<void>;

  constructor(private readonly bounds: Bounds = DEFAULT_BOUNDS) {}

  /** Runs one job; never rejects (a dead or stuck worker is the job's failure). */
  async run(job: Job): Promise<JobReport> {
    try {
      await this.boot();
    } catch (err) {
      this.discard();
      return { job, cases: 0, failure: { kind: "crash", message: `the fuzz worker did not start: ${String(err)}` } };
    }
    return new Promise<JobReport>((resolve) => this.watch(this.worker!, job, resolve));
  }

  async close(): Promise<void> {
    await this.worker?.terminate();
    this.worker = undefined;
    this.booted = undefined;
  }

  private boot(): Promise<void> {
    if (this.booted) return this.booted;
    // Workers do not inherit vitest's (or tsx's) TypeScript transform: the worker loads its module through tsx.
    const tsx = createRequire(import.meta.url).resolve("tsx/cjs/api");
    const entry = fileURLToPath(new URL("./worker.ts", import.meta.url));
    const boot = `require(${JSON.stringify(tsx)}).require(${JSON.stringify(entry)}, ${JSON.stringify(entry)});`;
    const worker = new Worker(boot, { eval: true, resourceLimits: { maxOldGenerationSizeMb: this.bounds.caseMb } });
    this.worker = worker;
    this.booted = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer within ${BOOT_MS} ms`)), BOOT_MS);
      worker.once("message", (m: FromWorker) => (clearTimeout(timer), m.type === "ready" ? resolve() : reject(new Error(`said ${m.type} first`))));
      worker.once("error", (e) => (clearTimeout(timer), reject(e)));
    });
    return this.booted;
  }

  private discard(): void {
    void this.worker?.terminate();
    this.worker = undefined;
    this.booted = undefined;
  }

  /** Follows one job's messages, ending the worker when a case passes a bound. */
  private watch(worker: Worker, job: Job, resolve: (r: JobReport) => void): void {
    let current: { index: number; input: unknown; started: number; rss: number } | undefined;
    let cases = 0;
    const finish = (failure?: Failure, fromWorker?: number) => {
      clearInterval(sampler);
      worker.off("message", onMessage);
      worker.off("error", onError);
      worker.off("exit", onExit);
      if (failure && failure.kind !== "outcome") this.discard();
      resolve({ job, cases: fromWorker ?? cases, failure });
    };
    const caseFailure = (kind: "hang" | "memory" | "crash", message: string): Failure => ({
      kind,
      message,
      input: current?.input,
      path: job.path ?? (current ? String(current.index) : undefined),
    });
    const sampler = setInterval(() => {
      if (!current) return;
      const ms = performance.now() - current.started;
      const grown = (process.memoryUsage.rss() - current.rss) / 2 ** 20;
      if (ms > this.bounds.caseMs) finish(caseFailure("hang", `case ${current.index} ran over ${this.bounds.caseMs} ms`));
      else if (grown > this.bounds.caseMb)
        finish(caseFailure("memory", `case ${current.index} grew the process by ${Math.round(grown)} MB (bound ${this.bounds.caseMb} MB)`));
    }, SAMPLE_MS);
    const onMessage = (m: FromWorker) => {
      if (m.type === "case") {
        current = { index: m.index, input: m.input, started: performance.now(), rss: process.memoryUsage.rss() };
        cases++;
      } else if (m.type === "case-end") current = undefined;
      else if (m.type === "done") finish(m.failure, m.cases);
    };
    const onError = (e: Error) => finish(caseFailure("crash", `the worker died: ${e.name}: ${e.message}`));
    const onExit = (code: number) => finish(caseFailure("crash", `the worker exited with code ${code}`));
    worker.on("message", onMessage);
    worker.on("error", onError);
    worker.on("exit", onExit);
    worker.postMessage(job);
  }
}
