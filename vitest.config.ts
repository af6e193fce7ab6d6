import { configDefaults, defineConfig } from "vitest/config";

const MEMORY_SUITE = "test/worker/edge-memory.test.ts";
const FAIRNESS_SUITE = "test/abuse/heavy-fairness.test.ts";

export default defineConfig({
  test: {
    // Every suite's fetch checks answers of documented operations against the server's /openapi.json.
    setupFiles: ["test/helpers/conformance-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
    // CI also writes a JSON report, from which .ci/run prints the plain "N passed, N failed" closing line.
    reporters: process.env.CI ? ["default", "json"] : ["default"],
    outputFile: process.env.CI ? { json: ".ci/test-report.json" } : undefined,
    projects: [
      { extends: true, test: { name: "suites", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, MEMORY_SUITE, FAIRNESS_SUITE] } },
      // The fairness suite times another user's requests during a burst of heavy work on the server it starts:
      // it runs after the other suites, alone, so that what it times is that server and not a neighbouring
      // suite's (on two cores one slow request of a neighbour's making is its p99).
      { extends: true, test: { name: "fairness", include: [FAIRNESS_SUITE], maxWorkers: 1, sequence: { groupOrder: 1 } } },
      // The workerd memory suite measures workerd's resident memory, which depends on when V8 collects
      // garbage: it runs after every other suite, alone on the machine (`npm run test:edge-memory` runs only it).
      { extends: true, test: { name: "workerd-memory", include: [MEMORY_SUITE], maxWorkers: 1, sequence: { groupOrder: 2 } } },
    ],
  },
});
