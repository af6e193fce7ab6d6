/**
 * Signing in and out: one-time links (printed by `npm start` and `npm run admin -- login-link`), the OIDC
 * provider when configured, and sign-out, which deletes the session row. Every form answers 303.
 * A link opens a confirmation page and signs in on its POST, so a mail scanner that fetches the link does
 * not use it up. The page names the account the link is for and, when another account is signed in in this
 * browser, that it will be signed out: a link someone else made for their own account cannot quietly swap a
 * signed-in user into it (whose pages and keys would then land in that account).
 */
import { Hono, type Context } from "hono";
import type { HubEnv } from "./env";
import { HubError } from "./errors";
import { readHubForm } from "./form";
import { limitPerClient } from "./guard";
import { peekLoginLink, useLoginLink } from "./login-links";
import { finishOidc, startOidc } from "./oidc";
import { clearSessionCookie, createSession, endSession, setSessionCookie } from "./session";
import { Layout } from "./ui/layout";

/** Sign-ins with the identity provider one client address may start a minute. */
export const OIDC_STARTS_PER_MINUTE = 20;

const invalidLink = () => new HubError(400, "This sign-in link is not valid: it was used already, has expired, or was copied incompletely. Ask for a new one.");

async function signIn(c: Context<HubEnv>, userId: string): Promise<Response> {
  // A new session id at every sign-in (no fixation); a session already in this browser ends.
  const previous = c.get("session");
  if (previous) await endSession(c.get("services"), previous.idHash);
  const { cookie } = await createSession(c.get("services"), userId);
  setSessionCookie(c, cookie);
  return c.redirect("/hub/keys", 303);
}

export function createSignInRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();

  router.get("/", (c) => c.redirect(c.get("session") ? "/hub/keys" : "/hub/signin", 303));

  router.get("/signin", (c) => {
    const oidc = Boolean(c.get("services").config.oidc);
    // Sign-out sends here with ?signed-out: a notice only, so it may sit in the URL.
    const signedOut = c.req.query("signed-out") !== undefined && !c.get("session");
    return c.html(
      <Layout title="Sign in" session={c.get("session")} flash={signedOut ? { kind: "ok", text: "You are signed out." } : null}>
        <h1>Sign in</h1>
        <div class="card">
          {oidc ? (
            <p>
              <a class="button" href="/hub/auth/start">
                Sign in with your identity provider
              </a>
            </p>
          ) : null}
          <p>
            {oidc ? "Or use" : "Use"} a one-time sign-in link. On an embedded server, <code>npm start</code> prints one for the first user; an operator makes
            one for any user with:
          </p>
          <pre class="wrap">npm run admin -- login-link --email you@example.com</pre>
          <p class="muted small">A link works once and expires 15 minutes after it was made.</p>
        </div>
      </Layout>,
    );
  });

  router.get("/login", async (c) => {
    const token = c.req.query("token") ?? "";
    const session = c.get("session");
    const email = await peekLoginLink(c.get("services"), token);
    if (!email) throw invalidLink();
    const switching = session && session.email !== email;
    return c.html(
      <Layout title="Sign in" session={session}>
        <h1>Sign in</h1>
        <form method="post" action="/hub/login" class="card">
          <input type="hidden" name="token" value={token} />
          {session ? <input type="hidden" name="_csrf" value={session.csrfToken} /> : null}
          <p>
            This one-time link signs you in to the hub as <strong>{email}</strong>.
          </p>
          {switching ? (
            <p class="flash error">
              You are signed in as <strong>{session.email}</strong>. Signing in with this link signs that account out of this browser; pages you connect and
              keys you make afterwards belong to {email}. If you did not ask for this link, keep your session and close this page.
            </p>
          ) : null}
          <button type="submit">{switching ? `Sign out and sign in as ${email}` : "Sign in"}</button>
        </form>
      </Layout>,
    );
  });

  router.post("/login", async (c) => {
    const body = await readHubForm(c);
    const userId = await useLoginLink(c.get("services"), body.token ?? "");
    if (!userId) throw invalidLink();
    return signIn(c, userId);
  });

  router.post("/logout", async (c) => {
    const session = c.get("session");
    if (session) await endSession(c.get("services"), session.idHash);
    clearSessionCookie(c);
    c.set("session", null);
    return c.redirect("/hub/signin?signed-out", 303);
  });

  // Each start stores a state row for anyone who asks, so it is limited per client address.
  router.get("/auth/start", limitPerClient("hub-auth-start", OIDC_STARTS_PER_MINUTE), async (c) => c.redirect(await startOidc(c), 302));
  router.get("/auth/callback", async (c) => signIn(c, await finishOidc(c)));

  return router;
}
