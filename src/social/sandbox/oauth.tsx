/**
 * The sandbox's side of the platform's OAuth flow: the login dialog (a consent page listing the sandbox
 * pages to grant), the code and long-lived token exchange at `/graph/{version}/oauth/access_token`,
 * `/graph/{version}/me/permissions`, and `/graph/{version}/me/accounts` with a page token per granted page. It only redirects back to this service
 * (like the platform's list of valid redirect URIs) and only accepts the sandbox app's credentials: its id and
 * this deployment's secret (app-secret.ts).
 *
 * The dialog is for people signed in to the hub, as the platform's is for its own signed-in users: without
 * the hub's session cookie the page sends them to sign in, and a consent posted without it is refused. The
 * consent form carries the session's CSRF token and must come from this service's own origin.
 */
import { Hono, type Context } from "hono";
import type { AppEnv } from "../../http/env";
import { constantTimeEqual, toHex } from "../../lib/encoding";
import type { HubEnv, HubSession } from "../../hub/env";
import { loadSession, readSessionCookie } from "../../hub/session";
import { graphError, type SandboxGraphError } from "./graph-errors";
import type { Params } from "./graph-common";
import { limitPerClient } from "./limits";
import { SANDBOX_APP, SANDBOX_PAGES, sandboxPage } from "./pages";
import * as store from "./store";

const CODE_TTL_MS = 10 * 60_000;
const SHORT_TOKEN_S = 3600;
const LONG_TOKEN_S = 5_183_944;

const oauthError = (code: number, message: string): SandboxGraphError => ({ status: 400, message, type: "OAuthException", code, is_transient: false });
const ERRORS = {
  app: oauthError(101, "Error validating application. Invalid application ID."),
  secret: oauthError(1, "Error validating client secret."),
  code: oauthError(100, "This authorization code has expired or has been used."),
  redirect: oauthError(100, "Can't load URL: The domain of this URL isn't included in the app's domains."),
  token: oauthError(190, "Invalid OAuth access token - Cannot parse access token"),
};

const random = (prefix: string) => `${prefix}-${toHex(crypto.getRandomValues(new Uint8Array(24)))}`;

function redirectAllowed(c: Context<AppEnv>, uri: string | undefined): uri is string {
  return typeof uri === "string" && uri.length <= 2000 && !/[\u0000-\u001f\u007f]/.test(uri) && uri.startsWith(`${c.get("services").config.publicBaseUrl}/`);
}

function consentHeaders(c: Context<AppEnv>) {
  c.header("X-Frame-Options", "DENY");
  c.header(
    "Content-Security-Policy",
    `default-src 'self'; frame-ancestors 'none'; form-action 'self' ${new URL(c.get("services").config.publicBaseUrl).origin}`,
  );
  c.header("Referrer-Policy", "same-origin");
}

/** The hub session of the request's cookie, or null. */
function hubSession(c: Context<AppEnv>): Promise<HubSession | null> {
  return loadSession(c.get("services"), readSessionCookie(c as unknown as Context<HubEnv>));
}

function ConsentPage(props: { clientId: string; redirectUri: string; state: string; scopes: string[]; csrf: string }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>pageplatform sandbox · Log in</title>
        <link rel="stylesheet" href="/hub/assets/hub.css" />
      </head>
      <body>
        <main class="consent">
          <h1>pageplatform sandbox</h1>
          <form method="post" class="card">
            <p>
              <strong>{props.clientId}</strong> asks to manage and publish to the pages you choose, and to their photoplatform accounts.
            </p>
            <p class="small muted">Permissions: {props.scopes.join(", ") || "none"}</p>
            <fieldset>
              <legend>Pages to grant</legend>
              {SANDBOX_PAGES.map((p) => (
                <p class="choice">
                  <input type="checkbox" id={`page-${p.id}`} name="page" value={p.id} checked />
                  <label for={`page-${p.id}`}>
                    {p.name}
                    {p.photo ? ` (with photoplatform @${p.photo.username})` : " (no photoplatform account)"}
                  </label>
                </p>
              ))}
            </fieldset>
            <input type="hidden" name="client_id" value={props.clientId} />
            <input type="hidden" name="redirect_uri" value={props.redirectUri} />
            <input type="hidden" name="state" value={props.state} />
            <input type="hidden" name="_csrf" value={props.csrf} />
            <p class="row">
              <button type="submit" name="decision" value="allow">
                Continue
              </button>
              <button type="submit" name="decision" value="deny" class="secondary">
                Cancel
              </button>
            </p>
          </form>
        </main>
      </body>
    </html>
  );
}

export function createSandboxDialogRoutes(): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  router.use(
    "/:version/dialog/oauth",
    limitPerClient((c) => c.text("Too many requests from this address; try again in a minute.", 429)),
  );
  router.get("/:version/dialog/oauth", async (c) => {
    const q = c.req.query();
    consentHeaders(c);
    const session = await hubSession(c);
    if (!session) return c.redirect("/hub/signin", 303);
    if (q.client_id !== SANDBOX_APP.id) return c.text("Invalid app ID: the sandbox only knows the app “sandbox-app”.", 400);
    if (!redirectAllowed(c, q.redirect_uri)) return c.text("The redirect_uri is not a URL of this service.", 400);
    const scopes = (q.scope ?? "").split(",").filter(Boolean);
    return c.html(<ConsentPage clientId={q.client_id} redirectUri={q.redirect_uri} state={q.state ?? ""} scopes={scopes} csrf={session.csrfToken} />);
  });

  router.post("/:version/dialog/oauth", async (c) => {
    const session = await hubSession(c);
    if (!session) return c.text("Sign in to the hub to grant access to sandbox pages.", 401);
    const origin = c.req.header("origin");
    if (origin !== undefined && origin !== new URL(c.get("services").config.publicBaseUrl).origin)
      return c.text("This consent was sent from another site, so it was refused.", 403);
    const form = await c.req.formData().catch(() => null);
    if (!form) return c.text("The consent must be sent as a form.", 400);
    const csrf = form.get("_csrf");
    if (typeof csrf !== "string" || !constantTimeEqual(csrf, session.csrfToken))
      return c.text("The consent form's security token is missing or out of date; start again from the hub.", 403);
    const redirectUri = String(form.get("redirect_uri") ?? "");
    if (form.get("client_id") !== SANDBOX_APP.id || !redirectAllowed(c, redirectUri)) return c.text("Invalid app ID or redirect_uri.", 400);
    const back = new URL(redirectUri);
    back.searchParams.set("state", String(form.get("state") ?? ""));
    if (form.get("decision") !== "allow") {
      back.searchParams.set("error", "access_denied");
      back.searchParams.set("error_reason", "user_denied");
      return c.redirect(back.toString(), 302);
    }
    const pageIds = form
      .getAll("page")
      .map(String)
      .filter((id) => sandboxPage(id));
    const code = random("sandbox-code");
    // Each consent opens its own sandbox: what one hub user publishes is never seen through another's grant.
    await store.saveGrant(c.get("services").db, {
      value: code,
      kind: "code",
      owner: random("sandbox-owner"),
      pageIds,
      redirectUri,
      expiresAt: new Date(Date.now() + CODE_TTL_MS),
    });
    back.searchParams.set("code", code);
    return c.redirect(back.toString(), 302);
  });
  return router;
}

/** `GET /oauth/access_token`: a code for a short-lived user token, or (fb_exchange_token) a long-lived one. */
export async function accessToken(c: Context<AppEnv>, params: Params): Promise<Response> {
  const db = c.get("services").db;
  const now = new Date();
  if (params.client_id !== SANDBOX_APP.id) return graphError(c, ERRORS.app);
  // This deployment's secret (withSandboxApp); services built without one accept no secret at all.
  const secret = c.get("services").config.graph.appSecret;
  if (!secret || typeof params.client_secret !== "string" || !constantTimeEqual(params.client_secret, secret)) return graphError(c, ERRORS.secret);
  let pageIds: string[];
  let owner: string;
  if (params.grant_type === "fb_exchange_token") {
    const grant = params.fb_exchange_token ? await store.userToken(db, params.fb_exchange_token, now) : null;
    if (!grant) return graphError(c, ERRORS.token);
    pageIds = grant.pageIds;
    owner = grant.owner;
  } else {
    const grant = params.code ? await store.useCode(db, params.code, now) : null;
    if (!grant) return graphError(c, ERRORS.code);
    if (grant.redirectUri !== params.redirect_uri) return graphError(c, ERRORS.redirect);
    pageIds = grant.pageIds;
    owner = grant.owner;
  }
  const long = params.grant_type === "fb_exchange_token";
  const expiresIn = long ? LONG_TOKEN_S : SHORT_TOKEN_S;
  const token = random("sandbox-user");
  await store.saveGrant(db, { value: token, kind: "user_token", owner, pageIds, redirectUri: null, expiresAt: new Date(now.getTime() + expiresIn * 1000) });
  return c.json({ access_token: token, token_type: "bearer", expires_in: expiresIn });
}

/** The permissions the sandbox grants with every consent (it grants whatever publishing needs). */
const SANDBOX_PERMISSIONS = [
  "pages_show_list",
  "pages_read_engagement",
  "pages_manage_posts",
  "business_management",
  "instagram_basic",
  "instagram_content_publish",
  "public_profile",
];

/** `GET /me/permissions` of a user token. */
export async function mePermissions(c: Context<AppEnv>, params: Params): Promise<Response> {
  const bearer = /^(?:Bearer|OAuth)\s+(\S+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
  const grant = await store.userToken(c.get("services").db, params.access_token ?? bearer ?? "", new Date());
  if (!grant) return graphError(c, ERRORS.token);
  return c.json({ data: SANDBOX_PERMISSIONS.map((permission) => ({ permission, status: "granted" })) });
}

/**
 * `GET /me/accounts`: the granted pages, each with a page token and its linked photoplatform account. A page
 * keeps one token per consent, however often its pages are listed.
 */
export async function meAccounts(c: Context<AppEnv>, params: Params): Promise<Response> {
  const db = c.get("services").db;
  const bearer = /^(?:Bearer|OAuth)\s+(\S+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
  const grant = await store.userToken(db, params.access_token ?? bearer ?? "", new Date());
  if (!grant) return graphError(c, ERRORS.token);
  const data = [];
  for (const id of grant.pageIds) {
    const page = sandboxPage(id);
    if (!page) continue;
    const token = await store.pageToken(db, { owner: grant.owner, platformAccountId: page.id });
    data.push({
      id: page.id,
      name: page.name,
      access_token: token,
      category: "Shopping & retail",
      tasks: ["ADVERTISE", "ANALYZE", "CREATE_CONTENT", "MESSAGING", "MODERATE", "MANAGE"],
      ...(page.photo ? { instagram_business_account: { id: page.photo.id, username: page.photo.username, name: page.photo.name } } : {}),
    });
  }
  return c.json({ data, paging: { cursors: { before: "QVFIUmFi", after: "QVFIUmFj" } } });
}
