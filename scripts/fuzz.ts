/**
 * `npm run fuzz`: runs every fuzz property (test/fuzz/properties.ts) for a given time, in rounds, each
 * property in turn for an equal share of the round with a new random seed, each case under a time and memory
 * bound (test/fuzz/runner.ts). Prints per property the cases tried and the failures found, writes each
 * failing input to .data/fuzz-failures/ (with the command that replays it), and exits 1 if anything failed.
 *
 *   npm run fuzz -- --seconds 300                 # or FUZZ_SECONDS=300; default 60
 *   npm run fuzz -- --property qr-decode,png-decoder --seconds 60
 *   npm run fuzz -- --property jpeg-decoder --seed 123 --path 41:2:0   # replay one case from its seed and path
 *   npm run fuzz -- --replay .data/fuzz-failures/jpeg-decoder-123.json  # replay a saved input
 * FUZZ_CASE_MS (default 10000) and FUZZ_CASE_MB (default 1024) bound each case.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { inputFromJson, inputToJson, PROPERTIES, propertyNamed, type FuzzProperty } from "../test/fuzz/properties";
import { DEFAULT_BOUNDS, FuzzRunner, type JobReport } from "../test/fuzz/runner";

const OUT_DIR = ".data/fuzz-failures";
/** No property runs longer than this at a time: the time comes in rounds, each with new seeds. */
const MAX_SLICE_MS = 30_000;

const { values } = parseArgs({
  options: {
    seconds: { type: "string" },
    property: { type: "string" },
    seed: { type: "string" },
    path: { type: "string" },
    replay: { type: "string" },
  },
});

async function main(): Promise<number> {
  if (values.replay) return replay(values.replay);
  const properties = values.property ? values.property.split(",").map((n) => propertyNamed(n.trim())) : PROPERTIES;
  const runner = new FuzzRunner();
  try {
    if (values.path) return await replayPath(runner, properties[0]!, Number(values.seed), values.path);
    const seconds = Number(values.seconds ?? process.env.FUZZ_SECONDS ?? 60);
    if (!(seconds > 0)) throw new Error(`--seconds must be a positive number, got ${values.seconds ?? process.env.FUZZ_SECONDS}`);
    return await timed(runner, properties, seconds);
  } finally {
    await runner.close();
  }
}

interface Tally {
  cases: number;
  rounds: number;
  failures: string[];
}

/** Every property gets an equal share of the time, in rounds of at most MAX_SLICE_MS each with a new seed. */
async function timed(runner: FuzzRunner, properties: FuzzProperty[], seconds: number): Promise<number> {
  const rounds = Math.max(1, Math.ceil((seconds * 1000) / properties.length / MAX_SLICE_MS));
  const tally = new Map(properties.map((p) => [p, { cases: 0, rounds: 0, failures: [] } as Tally]));
  console.log(
    `fuzzing ${properties.length} properties for ${seconds} s in ${rounds} round(s); a case may take ${DEFAULT_BOUNDS.caseMs} ms and ${DEFAULT_BOUNDS.caseMb} MB`,
  );
  const started = Date.now();
  const deadline = started + seconds * 1000;
  let slicesLeft = rounds * properties.length;
  for (let round = 1; round <= rounds; round++) {
    for (const p of properties) {
      const seed = Math.floor(Math.random() * 2 ** 31);
      // What is left, shared by the slices left (a new worker's start-up or a hang comes out of the rest).
      const ms = Math.max(200, Math.round((deadline - Date.now()) / slicesLeft--));
      const report = await runner.run({ property: p.name, seed, ms });
      const t = tally.get(p)!;
      t.cases += report.cases;
      t.rounds++;
      if (report.failure) t.failures.push(await saveFailure(p, report));
      console.log(
        `  round ${round} ${p.name.padEnd(14)} seed ${String(seed).padEnd(10)} ${String(report.cases).padStart(7)} cases${report.failure ? `  FAILED (${report.failure.kind})` : ""}`,
      );
    }
  }
  printSummary(tally, (Date.now() - started) / 1000);
  return [...tally.values()].some((t) => t.failures.length) ? 1 : 0;
}

function printSummary(tally: Map<FuzzProperty, Tally>, seconds: number): void {
  console.log(`\nsummary after ${seconds.toFixed(0)} s`);
  console.log(`  ${"property".padEnd(14)} ${"cases".padStart(8)}  failures`);
  let cases = 0;
  let failures = 0;
  for (const [p, t] of tally) {
    cases += t.cases;
    failures += t.failures.length;
    console.log(`  ${p.name.padEnd(14)} ${String(t.cases).padStart(8)}  ${t.failures.length}`);
    for (const f of t.failures) console.log(`      ${f}`);
  }
  console.log(`  ${"all".padEnd(14)} ${String(cases).padStart(8)}  ${failures}`);
}

/** Writes the failing input and how to replay it; returns the line the summary prints. */
async function saveFailure(p: FuzzProperty, report: JobReport): Promise<string> {
  const f = report.failure!;
  await mkdir(OUT_DIR, { recursive: true });
  const file = `${OUT_DIR}/${p.name}-${report.job.seed}-${f.kind}.json`;
  const replayCmd = f.path ? `npm run fuzz -- --property ${p.name} --seed ${report.job.seed} --path ${f.path}` : undefined;
  await writeFile(
    file,
    `{"property": ${JSON.stringify(p.name)}, "seed": ${report.job.seed}, "path": ${JSON.stringify(f.path ?? null)}, "kind": ${JSON.stringify(f.kind)},\n"message": ${JSON.stringify(f.message)},\n"input": ${f.input === undefined ? "null" : inputToJson(f.input)}}\n`,
  );
  console.log(
    `\n  ${p.name} FAILED (${f.kind}): ${f.message.split("\n").slice(0, 6).join("\n    ")}\n    input: ${file}${replayCmd ? `\n    replay: ${replayCmd}` : ""}\n    replay the input: npm run fuzz -- --replay ${file}\n`,
  );
  return `${f.kind}: ${f.message.split("\n")[0]!.slice(0, 160)} -> ${file}`;
}

/** Runs the one case a seed and path name (fast-check's replay), in the worker under the same bounds. */
async function replayPath(runner: FuzzRunner, p: FuzzProperty, seed: number, path: string): Promise<number> {
  const report = await runner.run({ property: p.name, seed, path });
  if (!report.failure) {
    console.log(`${p.name} seed ${seed} path ${path}: passes`);
    return 0;
  }
  await saveFailure(p, report);
  return 1;
}

/** Runs a saved input once, on this thread, and prints what happened. */
async function replay(file: string): Promise<number> {
  const saved = inputFromJson(await readFile(file, "utf8")) as { property: string; input: unknown };
  const p = propertyNamed(saved.property);
  const { configureNodeEngines } = await import("../functions/node/engines");
  configureNodeEngines();
  const started = performance.now();
  try {
    await p.check(saved.input);
    console.log(`${p.name}: the saved input passes now (${(performance.now() - started).toFixed(0)} ms)`);
    return 0;
  } catch (err) {
    console.log(`${p.name}: still fails after ${(performance.now() - started).toFixed(0)} ms:\n${err instanceof Error ? err.stack : String(err)}`);
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  },
);
