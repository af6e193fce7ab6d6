/**
 * Sign-in with an OpenID Connect provider (OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET) through
 * `openid-client`: authorization code flow with PKCE (S256), `state` and `nonce`. The state goes to the
 * provider and into a short-lived HttpOnly cookie of this browser; the callback accepts only the state of
 * its own cookie, once. The ID token's issuer and subject map to a user, created on first sign-in.
 *
 * @example
 * const url = await startOidc(c); return c.redirect(url);
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import * as client from "openid-client";
import { userForSubject } from "../http/auth";
import type { Services } from "../services";
import type { HubEnv } from "./env";
import { HubError } from "./errors";
import { saveState, STATE_TTL_MS, takeState } from "./oauth-states";
import { isHttps } from "./session";

const STATE_COOKIE = "hub_oidc";
const configs = new Map<string, Promise<client.Configuration>>();

function configFor(services: Services): Promise<client.Configuration> {
  const oidc = services.config.oidc;
  if (!oidc) throw new HubError(404, "Sign-in with an identity provider is not set up on this service.");
  const key = `${oidc.issuer}|${oidc.clientId}`;
  let config = configs.get(key);
  if (!config) {
    const issuer = new URL(oidc.issuer);
    // Plain http only for a provider on this machine (development and tests); anything else must be https.
    const loopback = issuer.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(issuer.hostname);
    config = client.discovery(issuer, oidc.clientId, oidc.clientSecret, undefined, loopback ? { execute: [client.allowInsecureRequests] } : undefined);
    config.catch(() => configs.delete(key));
    configs.set(key, config);
  }
  return config;
}

/** Where the identity provider sends the browser back: register `${PUBLIC_BASE_URL}` + this at the provider. */
export const OIDC_REDIRECT_PATH = "/hub/auth/callback";

const redirectUri = (services: Services) => `${services.config.publicBaseUrl}${OIDC_REDIRECT_PATH}`;

export async function startOidc(c: Context<HubEnv>): Promise<string> {
  const services = c.get("services");
  const config = await configFor(services).catch((err) => {
    services.log.warn("oidc discovery failed", { err: String(err) });
    throw new HubError(502, "The identity provider could not be reached. Try again in a minute.");
  });
  const codeVerifier = client.randomPKCECodeVerifier();
  const nonce = client.randomNonce();
  const state = await saveState(services, { kind: "oidc", sessionHash: null, nonce, codeVerifier });
  setCookie(c, STATE_COOKIE, state, { path: "/hub/auth", httpOnly: true, sameSite: "Lax", secure: isHttps(services), maxAge: STATE_TTL_MS / 1000 });
  return client
    .buildAuthorizationUrl(config, {
      redirect_uri: redirectUri(services),
      scope: "openid email profile",
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: "S256",
      state,
      nonce,
    })
    .toString();
}

/** The signed-in user's id; throws a HubError for a wrong state or nonce, a refused consent or a bad token. */
export async function finishOidc(c: Context<HubEnv>): Promise<string> {
  const services = c.get("services");
  const expectedState = getCookie(c, STATE_COOKIE);
  deleteCookie(c, STATE_COOKIE, { path: "/hub/auth", secure: isHttps(services) });
  // The state is taken only when it is this browser's own (its cookie), so nobody else can use it up.
  const pending = expectedState && c.req.query("state") === expectedState ? await takeState(services, expectedState, "oidc", null) : null;
  if (!pending || !expectedState) {
    throw new HubError(400, "This sign-in attempt is unknown, expired or was started in another browser. Start again from the sign-in page.");
  }
  if (c.req.query("error")) throw new HubError(400, "The identity provider did not sign you in. Start again from the sign-in page.");
  const config = await configFor(services);
  const url = new URL(redirectUri(services));
  url.search = new URL(c.req.url).search;
  let claims: client.IDToken | undefined;
  try {
    const tokens = await client.authorizationCodeGrant(config, url, {
      pkceCodeVerifier: pending.codeVerifier!,
      expectedState,
      expectedNonce: pending.nonce!,
      idTokenExpected: true,
    });
    claims = tokens.claims();
  } catch (err) {
    services.log.info("oidc sign-in refused", { reason: (err as { code?: string }).code ?? (err as Error).name });
    throw new HubError(400, "The identity provider's answer could not be verified, so you were not signed in. Start again from the sign-in page.");
  }
  if (!claims?.sub) throw new HubError(400, "The identity provider sent no subject, so you were not signed in.");
  return userForSubject(services, claims);
}
