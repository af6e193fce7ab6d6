/**
 * Hub middleware: security headers, the session from the cookie, CSRF checks and the signed-in gate.
 *
 * CSRF: every POST must come from this service's own origin (the Origin header, which browsers send on
 * every cross-origin and same-origin POST) and, once signed in, carry the session's synchronizer token in
 * `_csrf`. The session cookie is SameSite=Lax on top of that.
 */
import type { MiddlewareHandler } from "hono";
import { NONCE, secureHeaders } from "hono/secure-headers";
import { constantTimeEqual } from "../lib/encoding";
import type { HubEnv } from "./env";
import { HubError } from "./errors";
import { readHubForm } from "./form";
import { loadSession, readSessionCookie } from "./session";

/** CSP, frame and referrer headers; `extra` widens the CSP of one page (the API reference viewer). */
export function hubSecurityHeaders(extra: { scriptSrc?: string[]; styleSrc?: string[]; connectSrc?: string[]; fontSrc?: string[]; imgSrc?: string[] } = {}): MiddlewareHandler<HubEnv> {
  return async (c, next) => {
    const dialog = c.get("services").config.graph.dialogBaseUrl;
    const formAction = ["'self'", ...(dialog ? [new URL(dialog).origin] : [])];
    return secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'self'"],
        scriptSrc: [NONCE, ...(extra.scriptSrc ?? [])],
        styleSrc: ["'self'", ...(extra.styleSrc ?? [])],
        imgSrc: ["'self'", "data:", ...(extra.imgSrc ?? [])],
        fontSrc: ["'self'", ...(extra.fontSrc ?? [])],
        connectSrc: ["'self'", ...(extra.connectSrc ?? [])],
        objectSrc: ["'none'"],
        baseUri: ["'none'"],
        formAction,
        frameAncestors: ["'none'"],
      },
      xFrameOptions: "DENY",
      // same-origin, not no-referrer: with no-referrer browsers send "Origin: null" on form posts, which the CSRF check refuses.
      referrerPolicy: "same-origin",
      crossOriginEmbedderPolicy: false,
      crossOriginResourcePolicy: "same-origin",
    })(c, next);
  };
}

export const noStore: MiddlewareHandler<HubEnv> = async (c, next) => {
  await next();
  if (!c.res.headers.has("Cache-Control")) c.res.headers.set("Cache-Control", "no-store");
};

export const loadHubSession: MiddlewareHandler<HubEnv> = async (c, next) => {
  c.set("session", await loadSession(c.get("services"), readSessionCookie(c)));
  await next();
};

/** POSTs from another origin are refused; so are POSTs of a signed-in user without the session's token. */
export const csrfGuard: MiddlewareHandler<HubEnv> = async (c, next) => {
  if (c.req.method !== "POST") return next();
  const origin = c.req.header("origin");
  const own = new URL(c.get("services").config.publicBaseUrl).origin;
  if (origin !== undefined && origin !== own) throw new HubError(403, "This form was sent from another site, so it was refused.");
  const session = c.get("session");
  if (session) {
    const token = (await readHubForm(c))._csrf ?? "";
    if (!token || !constantTimeEqual(token, session.csrfToken)) {
      throw new HubError(403, "The form's security token is missing or out of date. Go back, reload the page and try again.");
    }
  } else if (origin === undefined) {
    throw new HubError(403, "This form was sent without an Origin header, so it was refused.");
  }
  return next();
};

export const requireSession: MiddlewareHandler<HubEnv> = async (c, next) => {
  if (!c.get("session")) {
    if (c.req.method === "GET") return c.redirect("/hub/signin", 303);
    throw new HubError(401, "Your session has ended. Sign in again.");
  }
  return next();
};
