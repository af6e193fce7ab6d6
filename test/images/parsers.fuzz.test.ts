/**
 * The fixed-seed slice of the fuzz properties (test/fuzz/properties.ts: every parser of untrusted bytes, from
 * the header reader and the two decoders to the QR and photo entry points): FUZZ_RUNS (default 60) x each
 * property's weight cases, in a worker thread that fails the case (and names its input) when it hangs or
 * grows too large. `npm run fuzz -- --seconds N` runs the same properties for a given time with new seeds.
 */
import { afterAll, describe, expect, it } from "vitest";
import { inputToJson, PROPERTIES } from "../fuzz/properties";
import { FuzzRunner } from "../fuzz/runner";

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const runner = new FuzzRunner();

afterAll(() => runner.close());

describe("untrusted bytes under the fuzzer", () => {
  for (const property of PROPERTIES) {
    it(`${property.name}: ${property.covers}`, async () => {
      const report = await runner.run({ property: property.name, seed: SEED, runs: RUNS * property.weight });
      const f = report.failure;
      expect(
        f,
        f &&
          `${f.kind}: ${f.message}\nreplay: npm run fuzz -- --property ${property.name} --seed ${SEED} --path ${f.path}\ninput: ${inputToJson(f.input).slice(0, 2000)}`,
      ).toBeUndefined();
      expect(report.cases).toBe(RUNS * property.weight);
    }, 180_000);
  }
});
