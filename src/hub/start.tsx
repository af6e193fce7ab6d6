/**
 * Getting started: curl commands with this service's real base URL, the user's key prefix and first
 * connected account. The API reference is the service's own script-free page, /docs (src/http/docs-page.ts);
 * /hub/reference answers a redirect to it, for links that name the hub's address.
 */
import { Hono } from "hono";
import { listApiKeys } from "../http/api-keys";
import { listAccounts } from "../social/accounts";
import type { HubEnv, HubSession } from "./env";
import { Layout } from "./ui/layout";

function commands(base: string, accountId: string): Array<{ title: string; text: string }> {
  const api = `${base}/api/v1/social`;
  return [
    { title: "1. List your connected accounts", text: `curl -sS ${api}/accounts \\\n  -H "Authorization: Bearer $SHOPKIT_API_KEY"` },
    {
      title: "2. Publish a text post now",
      text: `curl -sS -X POST ${api}/posts \\\n  -H "Authorization: Bearer $SHOPKIT_API_KEY" \\\n  -H "Content-Type: application/json" \\\n  -H "Idempotency-Key: $(uuidgen)" \\\n  -d '{"accountIds":["${accountId}"],"caption":"Hello from the API","hashtags":["launch"]}'`,
    },
    { title: "3. Follow its delivery (use the id from step 2)", text: `curl -sS ${api}/posts/POST_ID \\\n  -H "Authorization: Bearer $SHOPKIT_API_KEY"` },
    { title: "4. Cancel it while it is still scheduled", text: `curl -sS -X DELETE ${api}/posts/POST_ID \\\n  -H "Authorization: Bearer $SHOPKIT_API_KEY"` },
  ];
}

export function createStartRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();

  router.get("/start", async (c) => {
    const session = c.get("session") as HubSession;
    const { db, config } = c.get("services");
    const live = (await listApiKeys(db, session.userId)).filter((k) => !k.revokedAt).at(-1);
    const account = (await listAccounts(db, session.userId)).find((a) => a.canPublish);
    const keyLine = live
      ? `export SHOPKIT_API_KEY="${live.prefix}…"   # the full key you copied when you created "${live.name}"`
      : `export SHOPKIT_API_KEY="sk_…"   # create a key on the API keys page first`;
    return c.html(
      <Layout title="Getting started" session={session} nav="start" nonce={c.get("secureHeadersNonce")}>
        <h1>Your first request</h1>
        <p>
          Every call goes to <code>{config.publicBaseUrl}</code> with your API key as a Bearer token, from your server.
        </p>
        <ol class="small">
          <li>
            <a href="/hub/keys">Create an API key</a> and copy it.
          </li>
          <li>
            <a href="/hub/accounts">Connect your pageplatform page</a>; its photoplatform account comes along.
          </li>
          <li>Run these commands in a terminal.</li>
        </ol>
        <h2>0. Your key</h2>
        <pre id="cmd-0">{keyLine}</pre>
        {commands(config.publicBaseUrl, account?.id ?? "pageplatform:YOUR_PAGE_ID").map((cmd, i) => (
          <section>
            <h2>{cmd.title}</h2>
            <pre id={`cmd-${i + 1}`}>{cmd.text}</pre>
            <button type="button" class="secondary" data-copy={`cmd-${i + 1}`} hidden aria-label={`Copy command ${i + 1}`}>
              Copy
            </button>
          </section>
        ))}
        <p>
          A post answers <code>202</code> (now) or <code>201</code> (scheduled); delivery runs in the background, so follow it on the{" "}
          <a href="/hub/posts">Posts page</a> or with step 3. The whole API: the <a href="/docs">API reference</a>.
        </p>
      </Layout>,
    );
  });

  router.get("/reference", (c) => c.redirect("/docs", 301));
  return router;
}
