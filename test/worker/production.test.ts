/**
 * Production is closed by default: the Worker built as deployed runs in workerd with exactly the [vars] of
 * wrangler.toml and the secrets wrangler.toml lists (values from the local stand-ins; NEON_WS_PROXY only
 * carries the Neon driver to the local Postgres), and no PLATFORM_SANDBOX. Every sandbox path and every
 * route that exists only for development answers the plain 404, while the API itself serves. Turning
 * PLATFORM_SANDBOX on is what opens the sandbox, and nothing else.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openNodeDb } from "../../db/node";
import type { DbHandle } from "../../db/client";
import { createApiKey, createUser } from "../../src/http/api-keys";
import { startLocalEdge, type LocalEdge } from "../../dev/edge-worker";
import { checkDispatchConformance } from "../helpers/conformance";
import { listedSecrets } from "../helpers/wrangler-secrets";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";

const ORIGIN = "https://api.example.test";

/** Values for the optional secrets: the stand-ins where there is one, otherwise addresses never called here. */
const OPTIONAL_VALUES: Record<string, string> = {
  QSTASH_URL: "http://127.0.0.1:9/qstash",
  QSTASH_TOKEN: "qstash-token",
  QSTASH_CURRENT_SIGNING_KEY: "sig-current",
  QSTASH_NEXT_SIGNING_KEY: "sig-next",
  REPLICATE_API_TOKEN: "r8_production_token",
  REPLICATE_WEBHOOK_SECRET: "whsec_cHJvZHVjdGlvbi13ZWJob29rLXNlY3JldA==",
  GRAPH_API_BASE: "https://graph.facebook.com",
  META_APP_ID: "1234567890",
  META_APP_SECRET: "meta-app-secret",
  META_DIALOG_BASE: "https://www.facebook.com",
  OIDC_ISSUER: "https://idp.example.test",
  OIDC_CLIENT_ID: "shopkit",
  OIDC_CLIENT_SECRET: "oidc-secret",
};

let edge: LocalEdge;
let scratch: ScratchDatabase;
let handle: DbHandle;
let apiKey: string;
let vars: Record<string, string>;
let secrets: { required: string[]; optional: string[] };
let minimal: Record<string, string>;
let complete: Record<string, string>;

beforeAll(async () => {
  secrets = await listedSecrets();
  scratch = await createScratchDatabase();
  handle = await openNodeDb({ url: scratch.url, poolSize: 2 });
  const { userId } = await createUser(handle.db, `prod-${crypto.randomUUID()}@example.test`);
  apiKey = (await createApiKey(handle.db, userId)).key;
  edge = await startLocalEdge({
    databaseUrl: scratch.url,
    bindings: (standard, wranglerVars) => {
      const pick = (names: string[], values: Record<string, string>) => Object.fromEntries(names.map((n) => [n, values[n] ?? standard[n]!]));
      const transport = { NEON_WS_PROXY: standard.NEON_WS_PROXY! };
      vars = wranglerVars;
      minimal = { ...vars, ...pick(secrets.required, {}), ...transport };
      complete = { ...minimal, ...pick(secrets.optional, OPTIONAL_VALUES) };
      return minimal;
    },
  });
  checkDispatchConformance(edge.mf); // answers of documented operations are checked against /openapi.json
}, 120_000);

afterAll(async () => {
  const steps: Array<() => unknown> = [() => edge?.dispose(), () => handle?.close(), () => scratch?.drop()];
  for (const step of steps)
    await Promise.resolve()
      .then(() => step())
      .catch(() => {});
});

const request = async (method: string, path: string, init: { auth?: boolean; body?: unknown; form?: Record<string, string> } = {}) => {
  const headers: Record<string, string> = {};
  if (init.auth) headers.authorization = `Bearer ${apiKey}`;
  let body: string | undefined;
  if (init.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(init.body);
  } else if (init.form) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(init.form).toString();
  }
  const res = await edge.mf.dispatchFetch(`${ORIGIN}${path}`, { method, headers, body, redirect: "manual" });
  return { status: res.status, text: await res.text() };
};

/** Every kind of sandbox route: control (API key), consent dialog, Graph stand-in (token in the query). */
const SANDBOX_ROUTES: Array<[string, string, Parameters<typeof request>[2]]> = [
  ["POST", "/sandbox/accounts", { auth: true, body: { platform: "pageplatform", name: "Corner Shop", platformAccountId: "1001" } }],
  ["GET", "/sandbox/posts?accountId=pageplatform:1001", { auth: true }],
  ["POST", "/sandbox/faults", { auth: true, body: { accountId: "pageplatform:1001", kind: "transient", times: 1 } }],
  ["GET", `/sandbox/v23.0/dialog/oauth?client_id=sandbox-app&redirect_uri=${encodeURIComponent(`${ORIGIN}/hub/accounts/callback`)}&state=s`, {}],
  [
    "POST",
    "/sandbox/v23.0/dialog/oauth",
    { form: { client_id: "sandbox-app", redirect_uri: `${ORIGIN}/hub/accounts/callback`, state: "s", page: "1010000000000001", decision: "allow" } },
  ],
  ["GET", "/sandbox/graph/v23.0/oauth/access_token?client_id=sandbox-app&client_secret=sandbox-app-secret&code=c", {}],
  ["GET", "/sandbox/graph/v23.0/me/accounts?access_token=t", {}],
  ["POST", "/sandbox/graph/v23.0/1001/feed?access_token=t&message=hi", {}],
];

async function expectClosed(label: string) {
  const unknown = await request("GET", `/no-such-route-${crypto.randomUUID()}`);
  expect(unknown.status).toBe(404);
  const notFound = JSON.parse(unknown.text).error;
  for (const [method, path, init] of SANDBOX_ROUTES) {
    const res = await request(method, path, init);
    expect(res.status, `${label}: ${method} ${path} answered ${res.text}`).toBe(404);
    // The plain 404 of an unknown path: nothing says a sandbox exists.
    expect(JSON.parse(res.text).error).toEqual(notFound);
    expect(res.text.toLowerCase()).not.toContain("sandbox");
  }
  // The admin route is the Node process's alone.
  expect((await request("POST", "/_admin/command", { body: { command: "user:list" } })).status).toBe(404);
}

describe("the Worker with the production configuration", () => {
  it("is given wrangler.toml's [vars] and listed secrets only, without PLATFORM_SANDBOX", () => {
    expect(secrets.required).toEqual(expect.arrayContaining(["DATABASE_URL", "TOKEN_ENCRYPTION_KEY", "S3_BUCKET"]));
    expect(secrets.optional).toEqual(expect.arrayContaining(["GRAPH_API_BASE", "QSTASH_URL"]));
    expect(Object.keys(vars)).toEqual(expect.arrayContaining(["LOG_LEVEL", "RATE_LIMIT_QR", "GRAPH_API_VERSION"]));
    expect(Object.keys(edge.bindings).sort()).toEqual([...new Set([...Object.keys(vars), ...secrets.required, "NEON_WS_PROXY"])].sort());
    expect(edge.bindings).not.toHaveProperty("PLATFORM_SANDBOX");
  });

  it("with the required secrets only: serves the API, and the sandbox and dev-only routes answer 404", async () => {
    expect((await request("GET", "/health")).status).toBe(200);
    const accounts = await request("GET", "/api/v1/social/accounts", { auth: true });
    expect(accounts.status, accounts.text).toBe(200);
    await expectClosed("required secrets");
    // Without QStash configured, its callback route does not exist either.
    expect((await request("POST", "/api/internal/deliveries/publish", { body: { deliveryId: "x" } })).status).toBe(404);
  });

  it("with every listed secret set: still closed (the QStash and Replicate callbacks exist and want a signature)", async () => {
    await edge.setBindings(complete);
    expect((await request("GET", "/api/v1/social/accounts", { auth: true })).status).toBe(200);
    await expectClosed("every secret");
    expect((await request("POST", "/api/internal/deliveries/publish", { body: { deliveryId: "x" } })).status).toBe(401);
    expect((await request("POST", "/api/internal/webhooks/send", { body: { webhookDeliveryId: "x" } })).status).toBe(401);
    expect((await request("POST", "/api/internal/photo/predictions", { body: { id: "x", status: "succeeded" } })).status).toBe(401);
  });

  it("opens the sandbox only when PLATFORM_SANDBOX=on is added (local development)", async () => {
    await edge.setBindings({ ...minimal, PLATFORM_SANDBOX: "on" });
    const connected = await request("POST", "/sandbox/accounts", SANDBOX_ROUTES[0]![2]);
    expect(connected.status, connected.text).toBe(201);
    expect((await request("GET", "/sandbox/posts?accountId=pageplatform:1001", { auth: true })).status).toBe(200);
  });
});
