/**
 * The sandbox app's secret, one per deployment: an HMAC-SHA-256 of a fixed label under the deployment's token
 * encryption key (TOKEN_ENCRYPTION_KEY, or on Node the generated DATA_DIR/token-key). Every process that
 * shares that key (the Node server, its delivery thread, each Worker request) derives the same secret without
 * storing anything new, and the key itself never leaves the process: the secret travels in token-exchange
 * URLs, the key does not.
 *
 * @example
 * const config = await withSandboxApp(parseConfig(env), tokenKey); // config.graph.appSecret is the sandbox app's
 */
import type { Config } from "../../config";
import { base64FromBytes } from "../../lib/encoding";
import { SANDBOX_APP } from "./pages";

const LABEL = "shopkit platform sandbox app secret v1";
/** Derivations kept per process (a Worker request derives again otherwise); tests build apps with many keys. */
const derived = new Map<string, Promise<string>>();
const KEPT = 16;

/** The sandbox app's secret under `deploymentKey`: 43 base64url characters. */
export function sandboxAppSecret(deploymentKey: string): Promise<string> {
  let secret = derived.get(deploymentKey);
  if (!secret) {
    if (derived.size >= KEPT) derived.clear();
    secret = derive(deploymentKey);
    derived.set(deploymentKey, secret);
    secret.catch(() => derived.delete(deploymentKey));
  }
  return secret;
}

async function derive(deploymentKey: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(deploymentKey), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(LABEL)));
  return base64FromBytes(mac).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * `config` with the sandbox app as its platform app (`graph.appId`, `graph.appSecret`) when the sandbox is on,
 * so the hub's connect flow and the sandbox's token exchange use the same credentials; unchanged otherwise.
 * (The sandbox and META_APP_ID/META_APP_SECRET never go together: the latter come with GRAPH_API_BASE, which
 * parseConfig refuses beside PLATFORM_SANDBOX=on.)
 */
export async function withSandboxApp(config: Config, deploymentKey: string | undefined): Promise<Config> {
  if (!config.graph.sandbox || config.graph.appSecret || !deploymentKey) return config;
  return { ...config, graph: { ...config.graph, appId: config.graph.appId ?? SANDBOX_APP.id, appSecret: await sandboxAppSecret(deploymentKey) } };
}
