/**
 * Getting started: one short path through the three areas (a QR code, a product photo, a post of that
 * photo), as commands for a terminal with this service's real base URL and the user's connected accounts
 * filled in. They run as shown with bash, curl, sed and GNU base64 (test/hub/browser.test.ts runs them
 * against a real server): the idempotency key is made with `date`, and big bodies go through files, since
 * one command-line argument holds at most 128 KB on Linux.
 * The API reference is the service's own script-free page, /docs (src/http/docs-page.ts); /hub/reference
 * answers a redirect to it, for links that name the hub's address.
 */
import { Hono } from "hono";
import { listApiKeys } from "../http/api-keys";
import { CONTROL_CHARACTER } from "../lib/encoding";
import { listAccounts } from "../social/accounts";
import type { HubEnv, HubSession } from "./env";
import { Layout } from "./ui/layout";

interface Step {
  title: string;
  intro: string;
  text: string;
}

const AUTH = `-H "Authorization: Bearer $SHOPKIT_API_KEY"`;
const JSON_TYPE = `-H "Content-Type: application/json"`;

/** The commands, in order; `accountIds` are the accounts the post goes to. */
function steps(base: string, accountIds: string[]): Step[] {
  const targets = JSON.stringify(accountIds).replace(/"/g, '\\"');
  return [
    {
      title: "1. A QR code for your shop",
      intro:
        "Makes qr.png, a code that opens your shop's page: put your own address at the end, URL-encoded. This address holds your key, so it is for your terminal; a code shown on a public page needs a key for QR codes only.",
      text: `curl -sS -o qr.png \\\n  "${base}/api/qr-code/generate/$SHOPKIT_API_KEY/https%3A%2F%2Fshop.example%2F?size=400"`,
    },
    {
      title: "2. A product photo",
      intro:
        "Save a photo of your product on a plain background as product.jpg in this folder. This puts it into a white studio scene and saves photo.png; it spends the credits the answer's cost shows.",
      text: `printf '{"productImages":[{"dataUrl":"data:image/jpeg;base64,%s"}],"promptId":"studio-white-sweep","model":"standard","aspectRatio":"1:1"}' \\\n  "$(base64 -w0 product.jpg)" > photo.json\ncurl -sS ${AUTH} ${JSON_TYPE} \\\n  -d @photo.json ${base}/api/image/product-photography \\\n  | sed -E 's/.*"data:image\\/png;base64,([^"]+)".*/\\1/' | base64 -d > photo.png`,
    },
    {
      title: "3. Post the photo",
      intro:
        "Uploads photo.png and posts it with a caption to your accounts. The Idempotency-Key makes sending the same post again safe: with the same key, nothing is posted twice.",
      text: `printf '{"base64":"%s"}' "$(base64 -w0 photo.png)" > media.json\nMEDIA_ID=$(curl -sS ${AUTH} ${JSON_TYPE} \\\n  -d @media.json ${base}/api/v1/social/media | sed 's/.*"id":"\\([^"]*\\)".*/\\1/')\nPOST_KEY="first-post-$(date +%Y%m%d%H%M%S)"\nPOST_ID=$(curl -sS ${AUTH} ${JSON_TYPE} \\\n  -H "Idempotency-Key: $POST_KEY" \\\n  -d "{\\"accountIds\\":${targets},\\"caption\\":\\"New in the shop\\",\\"images\\":[{\\"mediaId\\":\\"$MEDIA_ID\\"}]}" \\\n  ${base}/api/v1/social/posts | sed 's/^{"data":{"id":"\\([^"]*\\)".*/\\1/')\necho "$POST_ID"`,
    },
    {
      title: "4. See it go out",
      intro: "Sending takes a few seconds; each account's status turns to published. The Posts page shows the same.",
      text: `curl -sS ${AUTH} ${base}/api/v1/social/posts/$POST_ID`,
    },
  ];
}

export function createStartRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();

  router.get("/start", async (c) => {
    const session = c.get("session") as HubSession;
    const { db, config } = c.get("services");
    const live = (await listApiKeys(db, session.userId)).filter((k) => !k.revokedAt).at(-1);
    const accounts = (await listAccounts(db, session.userId)).filter((a) => a.canPublish);
    const keyLine = live
      ? `export SHOPKIT_API_KEY="sk_…"   # the whole key you copied when you created "${live.name.replace(new RegExp(CONTROL_CHARACTER, "g"), " ")}" (${live.prefix}…)`
      : `export SHOPKIT_API_KEY="sk_…"   # create a key on the API keys page first`;
    const base = config.publicBaseUrl;
    return c.html(
      <Layout title="Getting started" session={session} nav="start" nonce={c.get("secureHeadersNonce")}>
        <h1>Getting started</h1>
        <p>
          A QR code, a product photo and a post, in four steps, from a terminal (bash, curl). Every call goes to <code>{base}</code> with your API key, from
          your own computer or server, never from a public web page.
        </p>
        <ol class="small">
          <li>
            <a href="/hub/keys">Create an API key</a> and copy it.
          </li>
          <li>
            <a href="/hub/accounts">Connect your pageplatform page</a>; its photoplatform account comes along.
            {accounts.length ? ` Connected: ${accounts.map((a) => a.name).join(", ")}.` : " (Not done yet: step 3 needs it.)"}
          </li>
          <li>Open a terminal in a new folder and run the commands below in order.</li>
        </ol>
        <h2>0. Your key</h2>
        <p class="small muted">Paste your whole key between the quotes.</p>
        <pre id="cmd-0" tabindex={0}>
          {keyLine}
        </pre>
        {steps(base, accounts.length ? accounts.map((a) => a.id) : ["pageplatform:YOUR_PAGE_ID"]).map((step, i) => (
          <section>
            <h2>{step.title}</h2>
            <p class="small muted">{step.intro}</p>
            <pre id={`cmd-${i + 1}`} tabindex={0}>
              {step.text}
            </pre>
            <button type="button" class="secondary" data-copy={`cmd-${i + 1}`} hidden aria-label={`Copy step ${i + 1}`}>
              Copy
            </button>
          </section>
        ))}
        <p>
          Scheduling a post for later, cancelling one, more scenes and QR code types: the <a href="/docs">API reference</a>. Posts you schedule can be cancelled
          on the <a href="/hub/posts">Posts page</a>.
        </p>
      </Layout>,
    );
  });

  router.get("/reference", (c) => c.redirect("/docs", 301));
  return router;
}
