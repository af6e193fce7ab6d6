/**
 * The secret names wrangler.toml's comments list for a deployment: `required` on Workers and `optional`.
 * The production-configured workerd tests build the Worker's bindings from exactly these and the [vars];
 * `npm run deploy:check` keeps the README's `wrangler secret put` lines equal to them.
 *
 * @example
 * const { required, optional } = await listedSecrets(); // ["DATABASE_URL", ...], ["QSTASH_URL", ...]
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ROOT } from "../../dev/edge-worker";
import { readWranglerToml, type SecretList } from "../../scripts/deploy-inputs";

export async function listedSecrets(): Promise<SecretList> {
  return readWranglerToml(await readFile(join(ROOT, "wrangler.toml"), "utf8")).secrets;
}
