/**
 * What a deployment is made of, read from the repository's own files: wrangler.toml's `[vars]` (set, and the
 * optional ones left commented out for a deployment to fill in), the secret names wrangler.toml's comments list,
 * the secret names of the README's `wrangler secret put` lines, and every variable the code reads. The deploy
 * check (scripts/deploy-check.ts) compares them; the workerd tests build the Worker's bindings from them.
 *
 * @example
 * const toml = readWranglerToml(await readFile("wrangler.toml", "utf8"));
 * toml.vars;            // { LOG_LEVEL: "info", ... }
 * toml.optionalVars;    // ["PUBLIC_BASE_URL", "AUTH_JWKS_URL", ...]
 * toml.secrets.required // ["DATABASE_URL", ...]
 */
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseToml } from "smol-toml";
import { CONFIG_VARIABLES } from "../src/config";

/** The repository's root directory. */
export const ROOT = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");

export interface SecretList {
  required: string[];
  optional: string[];
}

export interface WranglerInputs {
  /** [vars] as wrangler gives them to the Worker. */
  vars: Record<string, string>;
  /** `# NAME = "…"` lines between OPTIONAL_VARS_START and OPTIONAL_VARS_END: unset here, set per deployment. */
  optionalVars: string[];
  /** The secret names the comments list (between the "Required on Workers:", "Optional:" and "Local development only" lines). */
  secrets: SecretList;
  /** Every key of the parsed file, at any depth, with its dotted path (to find a secret given a value anywhere). */
  keys: Array<{ path: string; key: string }>;
}

export const OPTIONAL_VARS_START = "# Optional [vars], unset here:";
export const OPTIONAL_VARS_END = "# End of the optional [vars].";
const SECRETS_REQUIRED = "# Required on Workers:";
const SECRETS_OPTIONAL = "# Optional:";
const SECRETS_END = "# Local development only";

const NAME = /^[A-Z][A-Z0-9_]*$/;

/** Parses wrangler.toml's text; throws naming the marker or the TOML error when the file is not as expected. */
export function readWranglerToml(text: string): WranglerInputs {
  const parsed = parseToml(text) as Record<string, unknown>;
  const rawVars = (parsed.vars ?? {}) as Record<string, unknown>;
  const vars: Record<string, string> = {};
  for (const [name, value] of Object.entries(rawVars)) vars[name] = typeof value === "string" ? value : JSON.stringify(value);

  const optionalBlock = between(text, OPTIONAL_VARS_START, OPTIONAL_VARS_END, "wrangler.toml");
  const optionalVars = [...optionalBlock.matchAll(/^#\s*([A-Z][A-Z0-9_]*)\s*=/gm)].map((m) => m[1]!);

  const secretNames = (from: string, to: string) => {
    const names = [...between(text, from, to, "wrangler.toml").matchAll(/^#\s+([A-Z][A-Z0-9_]+(?:,\s*[A-Z][A-Z0-9_]+)*)(?:\s{2,}|\s*$)/gm)].flatMap((m) =>
      m[1]!.split(/,\s*/),
    );
    if (!names.length) throw new Error(`wrangler.toml lists no secret names between "${from}" and "${to}"`);
    return names;
  };
  return {
    vars,
    optionalVars,
    secrets: { required: secretNames(SECRETS_REQUIRED, SECRETS_OPTIONAL), optional: secretNames(SECRETS_OPTIONAL, SECRETS_END) },
    keys: keysOf(parsed, ""),
  };
}

function keysOf(value: unknown, path: string): Array<{ path: string; key: string }> {
  if (value === null || typeof value !== "object") return [];
  const out: Array<{ path: string; key: string }> = [];
  for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
    const here = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    if (!Array.isArray(value)) out.push({ path: here, key });
    out.push(...keysOf(inner, here));
  }
  return out;
}

function between(text: string, from: string, to: string, file: string): string {
  const start = text.indexOf(from);
  if (start < 0) throw new Error(`${file} has no line "${from}"`);
  const end = text.indexOf(to, start + from.length);
  if (end < 0) throw new Error(`${file} has no line "${to}" after "${from}"`);
  return text.slice(start + from.length, end);
}

export const DEPLOY_HEADING = "## Edge deployment (Cloudflare Workers)";

/** The README's deploy section: from its heading to the next `## ` heading. */
export function deploySection(readme: string): string {
  const start = readme.indexOf(`\n${DEPLOY_HEADING}\n`);
  if (start < 0) throw new Error(`README.md has no "${DEPLOY_HEADING}" section`);
  const next = readme.indexOf("\n## ", start + DEPLOY_HEADING.length + 1);
  return readme.slice(start + 1, next < 0 ? undefined : next + 1);
}

/** The lines of the section's fenced code blocks. */
export function codeLines(section: string): string[] {
  const lines: string[] = [];
  let inside = false;
  for (const line of section.split("\n")) {
    if (/^\s*```/.test(line)) inside = !inside;
    else if (inside) lines.push(line);
  }
  return lines;
}

/**
 * The secret names of the deploy section's `wrangler secret put` lines: `npx wrangler secret put NAME`, or a loop
 * `for v in A B C; do npx wrangler secret put "$v"; done`. A `# Required…` or `# Optional…` comment line sets
 * which list the lines after it belong to.
 */
export function readmeSecrets(readme: string): SecretList {
  const out: SecretList = { required: [], optional: [] };
  let kind: keyof SecretList | undefined;
  for (const line of codeLines(deploySection(readme))) {
    const heading = /^\s*#\s*(Required|Optional)\b/.exec(line);
    if (heading) kind = heading[1] === "Required" ? "required" : "optional";
    if (!/wrangler secret put\b/.test(line)) continue;
    if (!kind) throw new Error(`README.md: "${line.trim()}" comes before any "# Required" or "# Optional" comment line`);
    const loop = /\bfor\s+(\w+)\s+in\s+([^;]+);\s*do\b.*wrangler secret put\s+"?\$\{?(\w+)\}?"?/.exec(line);
    if (loop && loop[1] === loop[3]) {
      out[kind].push(...loop[2]!.trim().split(/\s+/));
      continue;
    }
    const single = /wrangler secret put\s+([A-Z][A-Z0-9_]*)\b/.exec(line);
    if (!single) throw new Error(`README.md: cannot read a secret name from "${line.trim()}"`);
    out[kind].push(single[1]!);
  }
  for (const name of [...out.required, ...out.optional])
    if (!NAME.test(name)) throw new Error(`README.md: "${name}" in a wrangler secret put line is not a variable name`);
  return out;
}

export interface CodeVariable {
  name: string;
  /** Where it is read: src/config.ts's schema, or the file a direct read was found in. */
  readBy: string[];
}

/**
 * Every environment variable the code reads: the names of src/config.ts's schema, plus direct reads anywhere in
 * src/ and functions/ (`env.NAME`, `process.env.NAME`, `env["NAME"]`, `env[CONST]` with `const CONST = "NAME"`).
 */
export async function codeVariables(root: string): Promise<CodeVariable[]> {
  const found = new Map<string, Set<string>>();
  const add = (name: string, where: string) => (found.get(name) ?? found.set(name, new Set()).get(name)!).add(where);
  for (const name of CONFIG_VARIABLES) add(name, "src/config.ts");

  const files = (await Promise.all(["src", "functions"].map((dir) => listFiles(join(root, dir))))).flat().filter((f) => /\.(ts|tsx|mts|mjs|js)$/.test(f));
  const sources = await Promise.all(files.map(async (file) => ({ file: relative(root, file), text: await readFile(file, "utf8") })));
  const constants = new Map<string, string>();
  for (const { text } of sources) for (const m of text.matchAll(/\bconst\s+([A-Z][A-Z0-9_]*)\s*=\s*["']([A-Z][A-Z0-9_]*)["']/g)) constants.set(m[1]!, m[2]!);
  for (const { file, text } of sources) {
    for (const m of text.matchAll(/\b(?:process\.)?env(?:\?\.|\.)([A-Z][A-Z0-9_]*)\b/g)) add(m[1]!, file);
    for (const m of text.matchAll(/\benv\[\s*(?:"([A-Z][A-Z0-9_]*)"|'([A-Z][A-Z0-9_]*)'|([A-Z][A-Z0-9_]*))\s*\]/g)) {
      const name = m[1] ?? m[2] ?? constants.get(m[3]!);
      if (name) add(name, file);
    }
  }
  return [...found].map(([name, where]) => ({ name, readBy: [...where].sort() })).sort((a, b) => a.name.localeCompare(b.name));
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(entries.map((e) => (e.isDirectory() ? listFiles(join(dir, e.name)) : Promise.resolve([join(dir, e.name)]))));
  return nested.flat();
}
