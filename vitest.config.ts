import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: configDefaults.exclude,
    // Every suite's fetch checks answers of documented operations against the server's /openapi.json.
    setupFiles: ["test/helpers/conformance-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
    // CI also writes a JSON report, from which .ci/run prints the plain "N passed, N failed" closing line.
    reporters: process.env.CI ? ["default", "json"] : ["default"],
    outputFile: process.env.CI ? { json: ".ci/test-report.json" } : undefined,
  },
});
