/**
 * Hub middleware: security headers, the session from the cookie, CSRF checks and the signed-in gate.
 *
 * CSRF: every POST must come from this service's own origin (the Origin header, which browsers send on
 * every cross-origin and same-origin POST) and, once signed in, carry the session's synchronizer token in
 * `_csrf`. The session cookie is SameSite=Lax on top of that.
 *
 * Routes anyone may call that make work for the server (starting a sign-in stores a state row) are limited
 * per client address (`limitPerClient`).
 */
import type { MiddlewareHandler } from "hono";
import { NONCE, secureHeaders } from "hono/secure-headers";
import { clientAddress, takeBudget } from "../http/rate-limit";
import { constantTimeEqual } from "../lib/encoding";
import type { HubEnv } from "./env";
import { HubError } from "./errors";
import { readHubForm } from "./form";
import { loadSession, readSessionCookie } from "./session";

/** CSP, frame and referrer headers of every hub page: scripts only with the request's nonce, everything else from this origin. */
export function hubSecurityHeaders(): MiddlewareHandler<HubEnv> {
  return async (c, next) => {
    const dialog = c.get("services").config.graph.dialogBaseUrl;
    const formAction = ["'self'", ...(dialog ? [new URL(dialog).origin] : [])];
    // Post images are shown from where media are stored: this origin (/files) or the bucket's public URL.
    const storage = c.get("services").config.s3?.publicBaseUrl;
    const imgSrc = ["'self'", "data:", ...(storage ? [new URL(storage).origin] : [])];
    return secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'self'"],
        scriptSrc: [NONCE],
        styleSrc: ["'self'"],
        imgSrc,
        fontSrc: ["'self'"],
        connectSrc: ["'self'"],
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

/**
 * At most `perMinute` requests a minute per client address (`clientAddress`) to the routes it guards, in
 * the rate limiter's `bucket`; over it a 429 page with Retry-After. When the limiter cannot answer, the
 * request goes through, as the API's limits do.
 */
export function limitPerClient(bucket: string, perMinute: number): MiddlewareHandler<HubEnv> {
  return async (c, next) => {
    const budget = await takeBudget(c.get("services"), bucket, clientAddress(c), perMinute);
    if (budget && !budget.success) {
      c.header("Retry-After", String(budget.seconds));
      throw new HubError(429, `Too many attempts from your network in the last minute. Try again in ${budget.seconds} seconds.`);
    }
    return next();
  };
}
