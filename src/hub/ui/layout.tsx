/**
 * The page frame of every hub page: header with navigation and sign-out, a flash message, the content.
 * Scripts are optional extras (copy buttons) and carry the request's CSP nonce; everything else works
 * without JavaScript. `refreshSeconds` reloads the page while something is still outstanding.
 */
import type { Child } from "hono/jsx";
import type { HubSession } from "../env";
import { FAVICON_PATH } from "./styles";

export type NavKey = "keys" | "accounts" | "posts" | "gallery" | "credits" | "webhooks" | "start" | "reference" | null;

export interface LayoutProps {
  title: string;
  session: HubSession | null;
  nav?: NavKey;
  nonce?: string;
  refreshSeconds?: number;
  flash?: { kind: "ok" | "error"; text: string } | null;
  children?: Child;
}

const NAV: Array<{ key: Exclude<NavKey, null>; href: string; label: string }> = [
  { key: "keys", href: "/hub/keys", label: "API keys" },
  { key: "accounts", href: "/hub/accounts", label: "Accounts" },
  { key: "posts", href: "/hub/posts", label: "Posts" },
  { key: "gallery", href: "/hub/gallery", label: "Gallery" },
  { key: "credits", href: "/hub/credits", label: "Credits" },
  { key: "webhooks", href: "/hub/webhooks", label: "Webhooks" },
  { key: "start", href: "/hub/start", label: "Getting started" },
  { key: "reference", href: "/docs", label: "API reference" },
];

const COPY_SCRIPT = `document.querySelectorAll("[data-copy]").forEach(function(b){b.hidden=false;b.addEventListener("click",function(){var t=document.getElementById(b.getAttribute("data-copy"));if(!t)return;navigator.clipboard.writeText(t.textContent||"").then(function(){b.textContent="Copied";});});});`;

export function Layout(props: LayoutProps) {
  const { session } = props;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        {props.refreshSeconds ? <meta http-equiv="refresh" content={String(props.refreshSeconds)} /> : null}
        <title>{`${props.title} · Hub`}</title>
        <link rel="icon" href={FAVICON_PATH} type="image/svg+xml" />
        <link rel="stylesheet" href="/hub/assets/hub.css" />
      </head>
      <body>
        <a class="skip" href="#content">
          Skip to content
        </a>
        <header class="top">
          <div class="bar">
            <a class="brand" href="/hub">
              <img src={FAVICON_PATH} alt="" width={22} height={22} />
              Shopkit hub
            </a>
            {session ? (
              <nav aria-label="Hub">
                <ul>
                  {NAV.map((n) => (
                    <li>
                      <a href={n.href} aria-current={props.nav === n.key ? "page" : undefined}>
                        {n.label}
                      </a>
                    </li>
                  ))}
                </ul>
              </nav>
            ) : null}
            {session ? (
              <form method="post" action="/hub/logout">
                <span class="who">{session.email} </span>
                <input type="hidden" name="_csrf" value={session.csrfToken} />
                <button type="submit">Sign out</button>
              </form>
            ) : null}
          </div>
        </header>
        <main id="content">
          {props.flash ? (
            <p class={`flash ${props.flash.kind}`} role={props.flash.kind === "error" ? "alert" : "status"}>
              {props.flash.text}
            </p>
          ) : null}
          {props.children}
        </main>
        {props.nonce ? <script nonce={props.nonce} dangerouslySetInnerHTML={{ __html: COPY_SCRIPT }} /> : null}
      </body>
    </html>
  );
}

/** A CSRF-protected POST form. */
export function PostForm(props: { action: string; session: HubSession; class?: string; children?: Child }) {
  return (
    <form method="post" action={props.action} class={props.class}>
      <input type="hidden" name="_csrf" value={props.session.csrfToken} />
      {props.children}
    </form>
  );
}

/**
 * The second step of an action that cannot be undone (revoke, disconnect, cancel): a page that says what
 * will happen, a POST form carrying `confirm=yes`, and a link back that does nothing. No script needed; the
 * POST routes treat a form without `confirm=yes` as a first step and send it here.
 */
export function Confirm(props: { session: HubSession; question: string; action: string; button: string; back: string; backLabel: string; children?: Child }) {
  return (
    <section class="card confirm" aria-labelledby="confirm-q">
      <h1 id="confirm-q">{props.question}</h1>
      {props.children}
      <PostForm action={props.action} session={props.session} class="row">
        <input type="hidden" name="confirm" value="yes" />
        <button type="submit" class="danger">
          {props.button}
        </button>
        <a class="button secondary" href={props.back}>
          {props.backLabel}
        </a>
      </PostForm>
    </section>
  );
}

/**
 * A table that stacks into labelled cards on narrow screens (each cell carries its column's `data-label`),
 * scrolling sideways inside its frame where it does not fit.
 */
export function StackTable(props: { columns: Child[]; children?: Child }) {
  return (
    <div class="table-wrap">
      <table class="stack">
        <thead>
          <tr>
            {props.columns.map((column) => (
              <th scope="col">{column}</th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** A value shown once, with a copy button that only appears when scripts run. */
export function Secret(props: { id: string; value: string; label: string }) {
  return (
    <div class="secret">
      <code id={props.id}>{props.value}</code>
      <button type="button" class="secondary" data-copy={props.id} hidden aria-label={props.label}>
        Copy
      </button>
    </div>
  );
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  return `${iso.slice(0, 16).replace("T", " ")} UTC`;
}
