/**
 * The secret names wrangler.toml's comments list for a deployment: `required` on Workers and `optional`.
 * The production-configured workerd tests build the Worker's bindings from exactly these and the [vars].
 *
 * @example
 * const { required, optional } = await listedSecrets(); // ["DATABASE_URL", ...], ["QSTASH_URL", ...]
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ROOT } from "../../dev/edge-worker";

export async function listedSecrets(): Promise<{ required: string[]; optional: string[] }> {
  const toml = await readFile(join(ROOT, "wrangler.toml"), "utf8");
  const block = (from: string, to: string) => {
    const text = toml.slice(toml.indexOf(from) + from.length, toml.indexOf(to));
    const names = [...text.matchAll(/^#\s+([A-Z][A-Z0-9_]+(?:,\s*[A-Z][A-Z0-9_]+)*)(?:\s{2,}|\s*$)/gm)].flatMap((m) => m[1]!.split(/,\s*/));
    if (!names.length) throw new Error(`no secret names between "${from}" and "${to}" in wrangler.toml`);
    return names;
  };
  return { required: block("# Required on Workers:", "# Optional:"), optional: block("# Optional:", "# Local development only") };
}
