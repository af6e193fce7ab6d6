/**
 * `npm run deploy:check [-- options]`: checks the README's deploy section and wrangler.toml against the code,
 * offline, and prints each check with ok or FAIL (and what to fix); exits 1 when one fails.
 *
 *   --readme PATH        the README to read (default README.md)
 *   --wrangler PATH      the wrangler.toml to read (default wrangler.toml)
 *   --database-url URL   apply the repository's migrations to this database and check each one is recorded
 *   --scratch-db         the same on a fresh scratch database on the local PostgreSQL (dropped afterwards)
 *   --skip-build         leave out `wrangler deploy --dry-run` and the bundle size
 *   --for-deploy         also require what only a deployment has: PUBLIC_BASE_URL set in [vars]
 *
 * What it cannot check offline: that the secrets were put, that the services answer, that the Meta app is
 * registered so; `npm run smoke` checks the deployed Worker for those.
 *
 * @example
 * npm run deploy:check -- --scratch-db
 */
import { readFile } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { checkBundle, checkCommands, checkConfigurationTable, checkMigrations, checkVariables, type CheckResult } from "./deploy-checks";
import { readWranglerToml, readmeSecrets, ROOT } from "./deploy-inputs";

interface Check {
  name: string;
  run: () => Promise<CheckResult>;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      readme: { type: "string" },
      wrangler: { type: "string" },
      "database-url": { type: "string" },
      "scratch-db": { type: "boolean" },
      "skip-build": { type: "boolean" },
      "for-deploy": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const path = (p: string | undefined, fallback: string) => (p === undefined ? join(ROOT, fallback) : isAbsolute(p) ? p : resolve(p));
  const readmePath = path(values.readme, "README.md");
  const wranglerPath = path(values.wrangler, "wrangler.toml");
  const [readme, toml] = await Promise.all([readFile(readmePath, "utf8"), readFile(wranglerPath, "utf8")]);
  console.log(`deploy:check: ${readmePath} and ${wranglerPath} against the code in ${ROOT}`);

  const checks: Check[] = [];
  let inputs: { wrangler: ReturnType<typeof readWranglerToml>; secrets: ReturnType<typeof readmeSecrets> } | undefined;
  checks.push({
    name: "the README's secret list and wrangler.toml can be read",
    run: async () => {
      inputs = { wrangler: readWranglerToml(toml), secrets: readmeSecrets(readme) };
      const s = inputs.secrets;
      return {
        ok: true,
        detail: `${Object.keys(inputs.wrangler.vars).length} [vars], ${inputs.wrangler.optionalVars.length} optional [vars], ${s.required.length} required and ${s.optional.length} optional secrets`,
      };
    },
  });
  for (const variableCheck of await checkVariables(ROOT, () => inputs, { readme, forDeploy: !!values["for-deploy"] })) checks.push(variableCheck);
  checks.push({ name: "the README's Configuration table names every variable the code reads", run: () => checkConfigurationTable(ROOT, readme) });
  checks.push({ name: "every command the deploy section runs exists, with its flags", run: () => checkCommands(ROOT, readme) });
  const databaseUrl = values["database-url"];
  if (databaseUrl || values["scratch-db"]) {
    checks.push({
      name: `the migrations apply cleanly to ${databaseUrl ? "the given DATABASE_URL" : "a scratch database on the local PostgreSQL"}`,
      run: () => checkMigrations(databaseUrl),
    });
  }
  if (!values["skip-build"])
    checks.push({ name: "`wrangler deploy --dry-run` builds, and the bundle is under 3 MiB gzipped", run: () => checkBundle(ROOT, wranglerPath) });

  let failed = 0;
  for (const check of checks) {
    const started = Date.now();
    let result: CheckResult;
    try {
      result = await check.run();
    } catch (err) {
      result = { ok: false, problems: [err instanceof Error ? err.message : String(err)] };
    }
    const ms = `${Date.now() - started} ms`.padStart(8);
    console.log(`${result.ok ? "ok  " : "FAIL"} ${ms}  ${check.name}${result.ok && result.detail ? `: ${result.detail}` : ""}`);
    if (!result.ok) {
      failed++;
      for (const problem of result.problems) console.log(`                - ${problem}`);
    }
  }
  if (!databaseUrl && !values["scratch-db"]) console.log("skipped         the migrations (give --database-url URL, or --scratch-db for the local PostgreSQL)");
  console.log(failed ? `deploy:check: ${failed} of ${checks.length} checks failed` : `deploy:check: all ${checks.length} checks passed`);
  return failed ? 1 : 0;
}

const USAGE = `usage: npm run deploy:check -- [--readme PATH] [--wrangler PATH] [--database-url URL | --scratch-db] [--skip-build] [--for-deploy]`;

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`deploy:check failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
