/**
 * The README's deploy section, checked the way a deployer runs it: `npm run deploy:check` (scripts/deploy-check.ts)
 * on the repository passes, and on a copy of README.md and wrangler.toml with mistakes it fails naming each; the
 * first user comes from `npm run admin -- user:create` against the deployed database; `npm run smoke`
 * (scripts/smoke.ts) passes against the Worker in workerd started with the production configuration
 * (wrangler.toml's [vars] and the secret names it lists, pointing at the local stand-ins, no PLATFORM_SANDBOX),
 * and fails, naming the check, against the same Worker misconfigured.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalEdge, ROOT, type LocalEdge } from "../../dev/edge-worker";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { freePort } from "../helpers/server-process";
import { listedSecrets } from "../helpers/wrangler-secrets";

interface Run {
  code: number;
  output: string;
}

/** A script of the repository run as `npm run` runs it (tsx), with a plain environment plus `env`. */
function runScript(script: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      join(ROOT, "node_modules/.bin/tsx"),
      [script, ...args],
      { cwd: ROOT, timeout: 240_000, maxBuffer: 8 * 1024 * 1024, env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/tmp", ...env } },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

/**
 * `wrangler dev` on a free port of loopback, its bindings from an env file (wrangler.toml's [vars] come from
 * the file itself, as on a deployment). Stopped by its process group: wrangler runs workerd as a child.
 */
async function startWranglerDev(bindings: (url: string) => Record<string, string>): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const dir = await mkdtemp(join(tmpdir(), "wrangler-dev-"));
  const envFile = join(dir, "smoke.env");
  await writeFile(
    envFile,
    Object.entries(bindings(url))
      .map(([k, v]) => `${k}=${JSON.stringify(v)}\n`)
      .join(""),
    { mode: 0o600 },
  );
  const child = spawn(
    join(ROOT, "node_modules/.bin/wrangler"),
    ["dev", "--ip", "127.0.0.1", "--port", String(port), "--env-file", envFile, "--show-interactive-dev-session=false"],
    {
      cwd: ROOT,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
    },
  );
  let log = "";
  child.stdout!.on("data", (d) => (log += d));
  child.stderr!.on("data", (d) => (log += d));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid!, "SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGKILL");
    }
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (
      await fetch(`${url}/`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { url, stop };
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`wrangler dev did not answer on ${url}:\n${log.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The output line of one check: `ok …` or `FAIL …` followed by its name. */
const lineOf = (output: string, name: string) => output.split("\n").find((l) => /^(ok|FAIL)\b/.test(l) && l.includes(name));

describe("npm run deploy:check", () => {
  it("passes on the repository: variables, secrets, commands, migrations on a scratch database, the build", async () => {
    const { code, output } = await runScript("scripts/deploy-check.ts", ["--scratch-db"]);
    expect(output).not.toMatch(/^FAIL/m);
    expect(code, output).toBe(0);
    for (const name of [
      "every variable the code reads",
      "README's secrets are the ones wrangler.toml lists",
      "local-only variables",
      "Meta app settings",
      "every command the deploy section runs",
      "the migrations apply cleanly",
      "under 3 MiB gzipped",
    ]) {
      expect(lineOf(output, name), `${name}\n${output}`).toMatch(/^ok/);
    }
  }, 300_000);

  it("fails on a copy with mistakes, naming each variable and command", async () => {
    const dir = await mkdtemp(join(tmpdir(), "deploy-check-"));
    try {
      let readme = await readFile(join(ROOT, "README.md"), "utf8");
      let toml = await readFile(join(ROOT, "wrangler.toml"), "utf8");
      // Read by the code, but gone from both lists.
      readme = readme.replace(/^npx wrangler secret put REPLICATE_API_TOKEN.*\n/m, "");
      toml = toml.replace(/^#\s+REPLICATE_API_TOKEN .*\n/m, "");
      // A secret the README no longer puts, while wrangler.toml still lists it.
      readme = readme.replace("OIDC_ISSUER OIDC_CLIENT_ID OIDC_CLIENT_SECRET;", "OIDC_ISSUER OIDC_CLIENT_ID;");
      // A local-only variable and a secret's value in [vars]; a flag wrangler does not have.
      toml = toml.replace('LOG_LEVEL = "info"\n', 'LOG_LEVEL = "info"\nPLATFORM_SANDBOX = "on"\nMETA_APP_SECRET = "s3cr3t"\n');
      readme = readme.replace("npx wrangler tail ", "npx wrangler tail --follow ");
      // A variable the Configuration table no longer explains.
      readme = readme.replace(/^\| `META_DIALOG_BASE` \|.*\n/m, "");
      expect(readme).not.toContain("secret put REPLICATE_API_TOKEN");
      await writeFile(join(dir, "README.md"), readme);
      await writeFile(join(dir, "wrangler.toml"), toml);

      const { code, output } = await runScript("scripts/deploy-check.ts", [
        "--readme",
        join(dir, "README.md"),
        "--wrangler",
        join(dir, "wrangler.toml"),
        "--skip-build",
      ]);
      expect(code, output).toBe(1);
      expect(lineOf(output, "every variable the code reads")).toMatch(/^FAIL/);
      expect(output).toContain("REPLICATE_API_TOKEN (read by src/config.ts) is in neither wrangler.toml [vars] nor the README's `wrangler secret put` lines");
      expect(lineOf(output, "README's secrets are the ones wrangler.toml lists")).toMatch(/^FAIL/);
      expect(output).toContain("OIDC_CLIENT_SECRET is a optional secret in wrangler.toml but has no `wrangler secret put` line");
      expect(lineOf(output, "no secret has a value in wrangler.toml")).toMatch(/^FAIL/);
      expect(output).toContain("META_APP_SECRET is a secret but wrangler.toml gives it a value at vars.META_APP_SECRET");
      expect(lineOf(output, "local-only variables")).toMatch(/^FAIL/);
      expect(output).toContain("PLATFORM_SANDBOX is set in wrangler.toml at vars.PLATFORM_SANDBOX, but it is local-only");
      expect(lineOf(output, "every command the deploy section runs")).toMatch(/^FAIL/);
      expect(output).toContain("wrangler tail has no flag --follow");
      expect(lineOf(output, "Configuration table names every variable"), output).toMatch(/^FAIL/);
      expect(output).toContain("META_DIALOG_BASE (read by");
      // What was not broken still passes.
      expect(lineOf(output, "Meta app settings")).toMatch(/^ok/);
      expect(lineOf(output, "nothing is listed that the code does not read")).toMatch(/^ok/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
});

describe("npm run smoke against the Worker in workerd with the production configuration", () => {
  let edge: LocalEdge;
  let scratch: ScratchDatabase;
  let base: string;
  let key: string;
  let production: Record<string, string>;
  let wranglerVars: Record<string, string>;
  let smokeArgs: string[];

  beforeAll(async () => {
    const secrets = await listedSecrets();
    scratch = await createScratchDatabase();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    edge = await startLocalEdge({
      databaseUrl: scratch.url,
      qstash: true,
      port,
      bindings: (standard, vars) => {
        wranglerVars = vars;
        // The listed secrets that have a stand-in here (the required ones, Upstash, QStash); the rest stay unset.
        const named = [...secrets.required, ...secrets.optional].filter((n) => standard[n] !== undefined);
        return { ...vars, ...Object.fromEntries(named.map((n) => [n, standard[n]!])), PUBLIC_BASE_URL: base, NEON_WS_PROXY: standard.NEON_WS_PROXY! };
      },
    });
    production = edge.bindings;
    smokeArgs = [base, "--media-base", production.S3_PUBLIC_BASE_URL!];
    // The README's step 7: the first user of the deployed database, through the admin CLI.
    const created = await runScript("functions/node/admin.ts", ["user:create", "--email", "deployer@example.test"], { DATABASE_URL: scratch.url });
    expect(created.code, created.output).toBe(0);
    key = created.output.trim().split("\n").at(-1)!;
    expect(key).toMatch(/^sk_/);
  }, 180_000);

  afterAll(async () => {
    const steps: Array<() => unknown> = [() => edge?.dispose(), () => scratch?.drop()];
    for (const step of steps)
      await Promise.resolve()
        .then(() => step())
        .catch(() => {});
  });

  it("runs with production's bindings only: [vars], listed secrets, no PLATFORM_SANDBOX", async () => {
    const secrets = await listedSecrets();
    const allowed = new Set([...Object.keys(production).filter((n) => !secrets.required.includes(n) && !secrets.optional.includes(n))]);
    expect([...allowed].sort()).toEqual([
      "GRAPH_API_VERSION",
      "LOG_LEVEL",
      "NEON_WS_PROXY",
      "PUBLIC_BASE_URL",
      "RATE_LIMIT_PHOTO",
      "RATE_LIMIT_PHOTO_READ",
      "RATE_LIMIT_QR",
      "RATE_LIMIT_SOCIAL_READ",
      "RATE_LIMIT_SOCIAL_WRITE",
      "RETENTION_DAYS",
    ]);
    expect(production).not.toHaveProperty("PLATFORM_SANDBOX");
    expect(production).toHaveProperty("QSTASH_URL");
    expect(production).toHaveProperty("UPSTASH_REDIS_REST_URL");
  });

  it("passes every check, with the key from the admin CLI (argument or SMOKE_API_KEY)", async () => {
    const { code, output } = await runScript("scripts/smoke.ts", [...smokeArgs, "--key", key]);
    expect(output).not.toMatch(/^FAIL/m);
    expect(code, output).toBe(0);
    expect(output).toMatch(/^ok .*GET \/health: ok, every dependency up: database postgres ok.*kv upstash ok.*queue qstash.*storage s3 ok/m);
    expect(output).toMatch(new RegExp(`^ok .*its stored URL publicly fetchable: ${production.S3_PUBLIC_BASE_URL}/`, "m"));
    expect(output).toMatch(/^ok .*unsigned is refused: 401 \(queue: qstash\)/m);
    expect(output).toMatch(/^ok .*\/sandbox\/… answers 404/m);
    expect(output).toMatch(/smoke: all 9 checks passed/);
    expect(output).not.toContain(key);

    const byEnv = await runScript("scripts/smoke.ts", smokeArgs, { SMOKE_API_KEY: key });
    expect(byEnv.code, byEnv.output).toBe(0);
  }, 120_000);

  it("passes every check against `wrangler dev` given the same bindings", async () => {
    // The secrets (and NEON_WS_PROXY) only: wrangler dev takes the [vars] from wrangler.toml itself.
    const secrets = Object.fromEntries(Object.entries(production).filter(([name]) => !(name in wranglerVars)));
    const dev = await startWranglerDev((url) => ({ ...secrets, PUBLIC_BASE_URL: url }));
    try {
      const { code, output } = await runScript("scripts/smoke.ts", [dev.url, "--key", key, "--media-base", production.S3_PUBLIC_BASE_URL!]);
      expect(output).not.toMatch(/^FAIL/m);
      expect(code, output).toBe(0);
      expect(output).toMatch(/smoke: all 9 checks passed/);
    } finally {
      await dev.stop();
    }
  }, 180_000);

  it("fails naming the check when storage is unreachable (S3 at a closed port)", async () => {
    const closed = await freePort();
    await edge.setBindings({ ...production, S3_ENDPOINT: `http://127.0.0.1:${closed}` });
    const { code, output } = await runScript("scripts/smoke.ts", [...smokeArgs, "--key", key]);
    expect(code, output).toBe(1);
    expect(lineOf(output, "GET /health")).toMatch(/^FAIL .*answered 503: .*storage s3 error/);
    expect(lineOf(output, "POST /api/v1/social/media")).toMatch(/^FAIL/);
    expect(lineOf(output, "POST /api/qr-code/generate")).toMatch(/^ok/);
    expect(output).toMatch(/smoke: 2 of 9 checks failed/);
  }, 120_000);

  it("fails naming the variable when a required secret was not put", async () => {
    const { TOKEN_ENCRYPTION_KEY: _, ...missing } = production;
    await edge.setBindings(missing);
    const { code, output } = await runScript("scripts/smoke.ts", [...smokeArgs, "--key", key]);
    expect(code, output).toBe(1);
    expect(lineOf(output, "GET /health")).toMatch(/^FAIL .*answered 500: .*TOKEN_ENCRYPTION_KEY/);
  }, 120_000);

  it("fails the closed-by-default check when the sandbox is turned on", async () => {
    await edge.setBindings({ ...production, PLATFORM_SANDBOX: "on" });
    const { code, output } = await runScript("scripts/smoke.ts", [...smokeArgs, "--key", key]);
    expect(code, output).toBe(1);
    expect(lineOf(output, "/sandbox/… answers 404")).toMatch(/^FAIL .*answered 404, expected the plain 404 of an unknown path: .*ACCOUNT_NOT_FOUND/);
    expect(output).toMatch(/smoke: 1 of 9 checks failed/);
  }, 120_000);
});
