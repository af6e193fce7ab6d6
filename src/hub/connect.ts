/**
 * Connecting pageplatform pages and their photoplatform accounts through the Graph API's OAuth flow:
 * login dialog with the publishing permissions -> callback with `code` and `state` (checked against this
 * session) -> code exchange -> long-lived user token -> `me/accounts` (pages with page tokens, and the
 * photoplatform professional account linked to each page). Every page and linked account becomes an account
 * row `pageplatform:<id>` / `photoplatform:<id>` holding the page token, encrypted (photoplatform publishing
 * uses the linked page's token). Reconnecting updates the same rows: same ids, a fresh token, status active.
 * With PLATFORM_SANDBOX=on, the same code talks to the built-in sandbox (its dialog at /sandbox, its Graph at /sandbox/graph).
 */
import type { Context } from "hono";
import { socialAccounts } from "../../db/schema";
import type { Services } from "../services";
import { graphBaseUrl } from "../social/platforms";
import { accountIdOf } from "../social/accounts";
import type { HubEnv } from "./env";
import { HubError } from "./errors";
import { SANDBOX_APP } from "../social/sandbox/pages";
import { saveState, takeState } from "./oauth-states";

/** What publishing to pages and to their photoplatform accounts needs. */
export const PUBLISH_SCOPES = [
  "pages_show_list",
  "pages_read_engagement",
  "pages_manage_posts",
  "business_management",
  "instagram_basic",
  "instagram_content_publish",
];

/** The platform app's OAuth redirect URI is `${PUBLIC_BASE_URL}` + this (the Meta app's "Valid OAuth Redirect URIs"). */
export const META_REDIRECT_PATH = "/hub/accounts/callback";

const MAX_PAGES_OF_PAGES = 10;

interface GraphPage {
  id: string;
  name: string;
  access_token?: string;
  instagram_business_account?: { id: string; username?: string; name?: string };
}

function graphApp(services: Services) {
  const { config } = services;
  const sandbox = config.graph.sandbox;
  const appId = config.graph.appId ?? (sandbox ? SANDBOX_APP.id : undefined);
  const appSecret = config.graph.appSecret;
  if (!appId || !appSecret) {
    throw new HubError(
      503,
      "Connecting accounts is not set up on this service yet: the operator has to configure the platform app (GRAPH_API_BASE, META_APP_ID, META_APP_SECRET).",
    );
  }
  return {
    appId,
    appSecret,
    dialogBase: config.graph.dialogBaseUrl ?? `${config.publicBaseUrl}/sandbox`,
    graphBase: graphBaseUrl(config),
    version: config.graph.version,
    redirectUri: `${config.publicBaseUrl}${META_REDIRECT_PATH}`,
  };
}

export async function startConnect(c: Context<HubEnv>): Promise<string> {
  const services = c.get("services");
  const app = graphApp(services);
  const state = await saveState(services, { kind: "meta", sessionHash: c.get("session")!.idHash, nonce: null, codeVerifier: null });
  const url = new URL(`${app.dialogBase}/${app.version}/dialog/oauth`);
  url.search = new URLSearchParams({
    client_id: app.appId,
    redirect_uri: app.redirectUri,
    state,
    response_type: "code",
    scope: PUBLISH_SCOPES.join(","),
  }).toString();
  return url.toString();
}

export interface ConnectResult {
  connected: string[];
  skipped: string[];
  /** Publishing permissions the user declined in the dialog: publishing will fail until they are granted. */
  declined: string[];
}

export async function finishConnect(c: Context<HubEnv>): Promise<ConnectResult> {
  const services = c.get("services");
  const session = c.get("session");
  if (!session) throw new HubError(401, "Your session has ended. Sign in again.");
  // Only this session's own state is taken: another session opening this URL leaves it for its owner.
  const pending = await takeState(services, c.req.query("state"), "meta", session.idHash);
  if (!pending) {
    throw new HubError(
      400,
      "This connection attempt is unknown, expired or belongs to another session, so nothing was connected. Start again with “Connect pageplatform”.",
    );
  }
  if (c.req.query("error")) throw new HubError(400, "The connection was cancelled on pageplatform, so nothing was connected.");
  const code = c.req.query("code");
  if (!code) throw new HubError(400, "pageplatform sent no authorization code, so nothing was connected.");

  const app = graphApp(services);
  const api = (path: string, params: Record<string, string>) => {
    const url = new URL(`${app.graphBase}/${app.version}/${path}`);
    url.search = new URLSearchParams(params).toString();
    return url;
  };
  const short = await graphCall<{ access_token: string }>(
    services,
    api("oauth/access_token", { client_id: app.appId, client_secret: app.appSecret, redirect_uri: app.redirectUri, code }),
  );
  const long = await graphCall<{ access_token: string }>(
    services,
    api("oauth/access_token", { grant_type: "fb_exchange_token", client_id: app.appId, client_secret: app.appSecret, fb_exchange_token: short.access_token }),
  );

  const permissions = await graphCall<{ data?: Array<{ permission: string; status: string }> }>(
    services,
    api("me/permissions", { access_token: long.access_token }),
  );
  const granted = new Set((permissions.data ?? []).filter((p) => p.status === "granted").map((p) => p.permission));
  const declined = PUBLISH_SCOPES.filter((scope) => !granted.has(scope));

  const pages: GraphPage[] = [];
  let next: URL | null = api("me/accounts", {
    fields: "id,name,access_token,instagram_business_account{id,username,name}",
    limit: "100",
    access_token: long.access_token,
  });
  for (let i = 0; next && i < MAX_PAGES_OF_PAGES; i++) {
    const page: { data?: GraphPage[]; paging?: { next?: string } } = await graphCall(services, next);
    pages.push(...(page.data ?? []));
    // Only follow `next` on the Graph host itself: the user token travels in that URL.
    const candidate: URL | null = page.paging?.next ? new URL(page.paging.next) : null;
    next = candidate && candidate.origin === new URL(app.graphBase).origin ? candidate : null;
  }

  const result: ConnectResult = { connected: [], skipped: [], declined };
  for (const page of pages) {
    if (!page.access_token) {
      result.skipped.push(page.name);
      continue;
    }
    await saveAccount(services, session.userId, "pageplatform", page.id, page.name, page.access_token, null);
    result.connected.push(page.name);
    const photo = page.instagram_business_account;
    if (photo?.id) {
      const name = photo.username ? `@${photo.username}` : (photo.name ?? `${page.name} (photoplatform)`);
      await saveAccount(services, session.userId, "photoplatform", photo.id, name, page.access_token, accountIdOf("pageplatform", page.id));
      result.connected.push(name);
    }
  }
  services.log.info("accounts connected", { userId: session.userId, count: result.connected.length, skipped: result.skipped.length, declined });
  return result;
}

async function saveAccount(
  services: Services,
  userId: string,
  platform: "pageplatform" | "photoplatform",
  platformAccountId: string,
  name: string,
  token: string,
  /** The page a photoplatform account comes with (shown under it in the hub); null for a page. */
  pageAccountId: string | null,
) {
  if (!/^\d{1,30}$/.test(platformAccountId)) throw new HubError(502, "pageplatform answered with an account id that is not a number.");
  const values = {
    name: name.slice(0, 200),
    tokenCiphertext: await services.tokens.encrypt(token),
    tokenStatus: "active",
    tokenError: null,
    pageAccountId,
    updatedAt: services.clock.now(),
  };
  await services.db
    .insert(socialAccounts)
    .values({ id: accountIdOf(platform, platformAccountId), userId, platform, platformAccountId, ...values })
    .onConflictDoUpdate({ target: [socialAccounts.userId, socialAccounts.id], set: values });
}

/** A Graph GET; the URL carries secrets (code, app secret, tokens), so it is never logged or shown. */
async function graphCall<T>(services: Services, url: URL): Promise<T> {
  let res: Response;
  try {
    res = await services.platformFetch(url.toString(), { signal: AbortSignal.timeout(15_000) });
  } catch (err) {
    services.log.warn("graph connect call failed", { path: url.pathname, reason: (err as Error).name });
    throw new HubError(502, "pageplatform could not be reached, so nothing was connected. Try again in a minute.");
  }
  const body = (await res.json().catch(() => null)) as (T & { error?: { message?: string; code?: number } }) | null;
  if (!res.ok || !body || body.error) {
    services.log.warn("graph connect call refused", { path: url.pathname, status: res.status, code: body?.error?.code });
    const reason = body?.error?.message ? `: ${body.error.message.slice(0, 200)}` : "";
    throw new HubError(502, `pageplatform refused the connection${reason}. Nothing was connected; try again.`);
  }
  return body;
}
