/**
 * The checks of `npm run deploy:check` (scripts/deploy-check.ts), each answering ok with a detail or the
 * problems to fix: the variables (code, [vars], secrets, local-only), the Meta app settings, the commands the
 * README runs, the migrations, the wrangler build and its size.
 *
 * @example
 * const result = await checkCommands(ROOT, readme); // { ok: true, detail: "7 commands" }
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { sql } from "drizzle-orm";
import { ConfigError, parseConfig } from "../src/config";
import { META_REDIRECT_PATH, PUBLISH_SCOPES } from "../src/hub/connect";
import { OIDC_REDIRECT_PATH } from "../src/hub/oidc";
import { codeLines, codeVariables, deploySection, type SecretList, type WranglerInputs } from "./deploy-inputs";

const run = promisify(execFile);

export type CheckResult = { ok: true; detail?: string } | { ok: false; problems: string[] };

const result = (problems: string[], detail?: string): CheckResult => (problems.length ? { ok: false, problems } : { ok: true, detail });

/**
 * Read by the code, never set on the Worker: each with the reason. They must not be in [vars] or among the
 * secrets; a deployment that sets one is not production's configuration.
 */
export const LOCAL_ONLY: Record<string, string> = {
  PORT: "the Node server's port; a Worker listens on none",
  HOST: "the Node server's address",
  DATA_DIR: "the Node server's files (embedded database, media, generated key); a Worker has no disk",
  NEON_WS_PROXY: "sends the Neon driver through an unencrypted local WebSocket proxy to a local Postgres",
  PLATFORM_SANDBOX: "serves the built-in platform sandbox; production answers 404 under /sandbox",
  REPLICATE_API_BASE: "points the Replicate client at another API root (the tests' fake)",
  HEAVY_THREADS: "Node's image worker threads",
  HEAVY_JOBS_PER_USER: "one user's image jobs at once on Node (a Worker isolate runs one at a time)",
  HEAVY_QUEUE_PER_USER: "sized for Node's thread pool; a Worker isolate keeps the default",
  HEAVY_QUEUE: "sized for Node's thread pool; a Worker isolate keeps the default",
  HEAVY_IDLE_SECONDS: "how long an idle Node image thread lives",
  WEBHOOK_ALLOW_LOOPBACK: "accepts webhook endpoints on this machine's loopback addresses; local development only",
  WEBHOOK_RETRY_SCHEDULE: "shortens the webhook retry schedule for tests",
  WEBHOOK_ROTATION_OVERLAP_SECONDS: "shortens a rotated webhook secret's overlap for tests",
};

type Inputs = { wrangler: WranglerInputs; secrets: SecretList } | undefined;

/** The variable checks; they need the parsed inputs, so each fails at once when those could not be read. */
export async function checkVariables(root: string, inputs: () => Inputs, options: { readme: string; forDeploy: boolean }) {
  const code = await codeVariables(root);
  const readBy = new Map(code.map((v) => [v.name, v.readBy.join(", ")]));
  const need = (check: (i: NonNullable<Inputs>) => CheckResult) => async (): Promise<CheckResult> => {
    const i = inputs();
    return i ? check(i) : { ok: false, problems: ["the README's secret list or wrangler.toml could not be read (see above)"] };
  };
  const secretsOf = (s: SecretList) => [...s.required, ...s.optional];
  const configured = (i: NonNullable<Inputs>) => ({
    vars: Object.keys(i.wrangler.vars),
    optional: i.wrangler.optionalVars,
    secrets: secretsOf(i.secrets),
  });

  return [
    {
      name: "every variable the code reads is in wrangler.toml [vars], in the README's secrets, or local-only",
      run: need((i) => {
        const c = configured(i);
        const known = new Set([...c.vars, ...c.optional, ...c.secrets, ...Object.keys(LOCAL_ONLY)]);
        const problems = code
          .filter((v) => !known.has(v.name))
          .map(
            (v) =>
              `${v.name} (read by ${v.readBy.join(", ")}) is in neither wrangler.toml [vars] nor the README's \`wrangler secret put\` lines: add it to [vars] (or its optional block), to the secrets (README and wrangler.toml), or to LOCAL_ONLY in scripts/deploy-checks.ts if production never sets it`,
          );
        return result(
          problems,
          `${code.length} variables: ${c.vars.length} [vars], ${c.optional.length} optional [vars], ${c.secrets.length} secrets, ${Object.keys(LOCAL_ONLY).length} local-only`,
        );
      }),
    },
    {
      name: "nothing is listed that the code does not read",
      run: need((i) => {
        const c = configured(i);
        const listed: Array<[string, string]> = [
          ...c.vars.map((n): [string, string] => [n, "wrangler.toml [vars]"]),
          ...c.optional.map((n): [string, string] => [n, "wrangler.toml's optional [vars]"]),
          ...c.secrets.map((n): [string, string] => [n, "the README's secrets"]),
          ...secretsOf(i.wrangler.secrets).map((n): [string, string] => [n, "wrangler.toml's secret list"]),
          ...Object.keys(LOCAL_ONLY).map((n): [string, string] => [n, "LOCAL_ONLY in scripts/deploy-checks.ts"]),
        ];
        return result(
          listed.filter(([n]) => !readBy.has(n)).map(([n, where]) => `${n} is in ${where}, but no code reads it: remove it there (or fix its spelling)`),
        );
      }),
    },
    {
      name: "the README's secrets are the ones wrangler.toml lists",
      run: need((i) => {
        const problems: string[] = [];
        for (const kind of ["required", "optional"] as const) {
          const readme = new Set(i.secrets[kind]);
          const toml = new Set(i.wrangler.secrets[kind]);
          for (const n of readme)
            if (!toml.has(n))
              problems.push(
                `${n} is a ${kind} secret in the README but not in wrangler.toml's "${kind === "required" ? "Required on Workers" : "Optional"}" list: add it there`,
              );
          for (const n of toml)
            if (!readme.has(n))
              problems.push(
                `${n} is a ${kind} secret in wrangler.toml but has no \`wrangler secret put\` line under the README's "# ${kind === "required" ? "Required" : "Optional"}" comment: add it`,
              );
        }
        return result(problems, `${i.secrets.required.length} required, ${i.secrets.optional.length} optional`);
      }),
    },
    {
      name: "no secret has a value in wrangler.toml, and none is also a [var]",
      run: need((i) => {
        const secrets = new Set([...secretsOf(i.secrets), ...secretsOf(i.wrangler.secrets)]);
        const problems = i.wrangler.keys
          .filter((k) => secrets.has(k.key))
          .map((k) => `${k.key} is a secret but wrangler.toml gives it a value at ${k.path}: remove it and \`npx wrangler secret put ${k.key}\` instead`);
        for (const n of i.wrangler.optionalVars) if (secrets.has(n)) problems.push(`${n} is both an optional [var] and a secret: keep one`);
        return result(problems);
      }),
    },
    {
      name: "local-only variables are not configured for production",
      run: need((i) => {
        const problems = i.wrangler.keys
          .filter((k) => k.key in LOCAL_ONLY)
          .map((k) => `${k.key} is set in wrangler.toml at ${k.path}, but it is local-only (${LOCAL_ONLY[k.key]}): remove it`);
        const c = configured(i);
        for (const n of [...c.optional, ...c.secrets, ...secretsOf(i.wrangler.secrets)])
          if (n in LOCAL_ONLY) problems.push(`${n} is listed for production, but it is local-only (${LOCAL_ONLY[n]}): remove it`);
        return result(problems, Object.keys(LOCAL_ONLY).join(", "));
      }),
    },
    {
      name: "wrangler.toml's [vars] values are valid configuration",
      run: need((i) => {
        try {
          parseConfig(i.wrangler.vars);
          return { ok: true };
        } catch (err) {
          if (err instanceof ConfigError) return { ok: false, problems: err.problems.map((p) => `wrangler.toml [vars]: ${p}`) };
          throw err;
        }
      }),
    },
    ...(options.forDeploy
      ? [
          {
            name: "PUBLIC_BASE_URL is set in [vars] (--for-deploy)",
            run: need((i) => {
              const value = i.wrangler.vars.PUBLIC_BASE_URL;
              if (!value)
                return {
                  ok: false,
                  problems: ["PUBLIC_BASE_URL is not set in wrangler.toml [vars]: uncomment it and set the Worker's https URL (the cron sweep needs it)"],
                };
              return result(
                /^https:\/\/[^<>\s]+$/.test(value) && !/example\.com|<|>/.test(value) ? [] : [`PUBLIC_BASE_URL = "${value}" is not the Worker's own https URL`],
                value,
              );
            }),
          },
        ]
      : []),
    {
      name: "the deploy section's Meta app settings are the code's",
      run: async () => {
        const section = deploySection(options.readme);
        const wanted = [META_REDIRECT_PATH, OIDC_REDIRECT_PATH, ...PUBLISH_SCOPES];
        const problems = wanted.filter((w) => !section.includes(w)).map((w) => `the deploy section does not name ${w}, which the hub uses (src/hub): add it`);
        return result(problems, `redirect ${META_REDIRECT_PATH}, ${PUBLISH_SCOPES.length} permissions`);
      },
    },
  ];
}

/** `npm run X` names a package.json script; `npx wrangler …` names a wrangler command (its --help), with flags it has. */
export async function checkCommands(root: string, readme: string): Promise<CheckResult> {
  const scripts = Object.keys((JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts);
  const lines = codeLines(deploySection(readme));
  const problems: string[] = [];
  const npmRuns = new Set(lines.flatMap((l) => [...l.matchAll(/\bnpm run ([\w:.-]+)/g)].map((m) => m[1]!)));
  for (const name of npmRuns) if (!scripts.includes(name)) problems.push(`\`npm run ${name}\`: package.json has no script "${name}"`);

  // One --help per distinct command: a secret's name or a bucket's in the positional place does not make another.
  const invocations = new Map<string, { text: string; words: string[]; flags: string[] }>();
  for (const line of lines) {
    for (const m of line.matchAll(/\bnpx wrangler\s+([^;|&#\n]*)/g)) {
      const tokens = m[1]!.trim().split(/\s+/).filter(Boolean);
      const firstFlag = tokens.findIndex((t) => t.startsWith("-"));
      const words = firstFlag < 0 ? tokens : tokens.slice(0, firstFlag);
      const flags = tokens.filter((t) => t.startsWith("-")).map((t) => t.split("=")[0]!);
      const shape = words.map((w) => (/^[a-z][a-z0-9-]*$/.test(w) ? w : "<value>"));
      invocations.set(`${shape.join(" ")} ${[...flags].sort().join(" ")}`, { text: m[1]!.trim(), words, flags });
    }
  }
  const wrangler = join(root, "node_modules/.bin/wrangler");
  const checkOne = async ({ text, words, flags }: { text: string; words: string[]; flags: string[] }) => {
    const { stdout } = await run(wrangler, [...words, "--help"], { cwd: root, env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" } });
    const usage =
      stdout
        .split("\n")
        .find((l) => l.startsWith("wrangler "))
        ?.trim()
        .split(/\s+/)
        .slice(1) ?? [];
    const literal = usage.filter((u) => !/^[<[]/.test(u));
    const positionals = usage.length - literal.length;
    if (literal.some((w, k) => words[k] !== w) || words.length - literal.length > positionals) {
      return [
        `\`npx wrangler ${text}\`: wrangler ${(await wranglerVersion(wrangler, root)) ?? ""} has no such command (its help answers "wrangler ${usage.join(" ")}")`,
      ];
    }
    return flags
      .filter((flag) => !new RegExp(`(^|[\\s,])${flag}([\\s,=]|$)`, "m").test(stdout))
      .map((flag) => `\`npx wrangler ${text}\`: wrangler ${literal.join(" ")} has no flag ${flag}`);
  };
  const queue = [...invocations.values()];
  const workers = Array.from({ length: 3 }, async () => {
    for (let next = queue.shift(); next; next = queue.shift()) problems.push(...(await checkOne(next)));
  });
  await Promise.all(workers);
  return result(problems, `${npmRuns.size} npm scripts, ${invocations.size} wrangler commands`);
}

async function wranglerVersion(wrangler: string, cwd: string): Promise<string | undefined> {
  return (await run(wrangler, ["--version"], { cwd }).catch(() => undefined))?.stdout.trim();
}

/** db/migrations applied to the URL (or a scratch database), twice: each is recorded once, and the second run is a no-op. */
export async function checkMigrations(databaseUrl: string | undefined): Promise<CheckResult> {
  const { openNodeDb, MIGRATIONS_DIR } = await import("../db/node");
  const { executeRows } = await import("../db/client");
  const { createScratchDatabase } = await import("../dev/postgres");
  const scratch = databaseUrl ? undefined : await createScratchDatabase();
  try {
    const url = databaseUrl ?? scratch!.url;
    const journal = JSON.parse(await readFile(join(MIGRATIONS_DIR, "meta/_journal.json"), "utf8")) as { entries: Array<{ tag: string }> };
    for (let pass = 0; pass < 2; pass++) {
      const handle = await openNodeDb({ url, poolSize: 1, migrate: true });
      try {
        const [row] = await executeRows<{ n: number }>(handle.db, sql`select count(*)::int as n from drizzle.__drizzle_migrations`);
        const recorded = Number(row?.n ?? 0);
        if (recorded !== journal.entries.length) {
          return {
            ok: false,
            problems: [
              `after applying, the database records ${recorded} migrations, the repository has ${journal.entries.length} (db/migrations/meta/_journal.json)`,
            ],
          };
        }
      } finally {
        await handle.close();
      }
    }
    return { ok: true, detail: `${journal.entries.length} migrations (${journal.entries.map((e) => e.tag).join(", ")}), the second run a no-op` };
  } finally {
    await scratch?.drop();
  }
}

const GZIP_LIMIT_KIB = 3 * 1024;

/** `wrangler deploy --dry-run` into a temporary directory; the bundle's gzipped size, as wrangler reports it and file by file. */
export async function checkBundle(root: string, wranglerToml: string): Promise<CheckResult> {
  const outDir = await mkdtemp(join(tmpdir(), "deploy-check-"));
  try {
    let stdout: string;
    try {
      ({ stdout } = await run(join(root, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", outDir, "--config", wranglerToml], {
        cwd: root,
        env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
        maxBuffer: 16 * 1024 * 1024,
      }));
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string; message: string };
      return { ok: false, problems: [`wrangler deploy --dry-run failed: ${(e.stderr || e.stdout || e.message).trim().split("\n").slice(-8).join(" | ")}`] };
    }
    const reported = /gzip:\s*([\d.]+)\s*KiB/.exec(stdout);
    const files = (await readdir(outDir)).filter((f) => /\.(js|wasm|ttf|bin)$/.test(f));
    let perFile = 0;
    for (const f of files) perFile += gzipSync(await readFile(join(outDir, f)), { level: 9 }).length;
    const perFileKiB = perFile / 1024;
    const wranglerKiB = reported ? Number(reported[1]) : undefined;
    const size = Math.max(perFileKiB, wranglerKiB ?? 0);
    const detail = `${wranglerKiB !== undefined ? `${wranglerKiB.toFixed(0)} KiB gzipped as wrangler reports it, ` : ""}${perFileKiB.toFixed(0)} KiB file by file (${files.length} files); limit ${GZIP_LIMIT_KIB} KiB`;
    return size < GZIP_LIMIT_KIB
      ? { ok: true, detail }
      : { ok: false, problems: [`the bundle is ${size.toFixed(0)} KiB gzipped, over the Workers Free limit of ${GZIP_LIMIT_KIB} KiB: ${detail}`] };
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
}

/**
 * The README's Configuration table names every variable the code reads (a name may stand in a group such
 * as `HEAVY_THREADS`, `HEAVY_QUEUE`), so a reader never meets a variable that only the code knows.
 */
export async function checkConfigurationTable(root: string, readme: string): Promise<CheckResult> {
  const start = readme.indexOf("\n## Configuration");
  if (start < 0) return { ok: false, problems: ['the README has no "## Configuration" section'] };
  const end = readme.indexOf("\n## ", start + 1);
  const table = readme.slice(start, end < 0 ? undefined : end);
  const named = new Set([...table.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
  const code = await codeVariables(root);
  const missing = code.filter((v) => !named.has(v.name));
  if (missing.length)
    return {
      ok: false,
      problems: missing.map((v) => `${v.name} (read by ${v.readBy.join(", ")}) is not in the README's Configuration table: add a row that says what it does`),
    };
  return { ok: true, detail: `${code.length} variables` };
}
