/**
 * Connected accounts page: connect (or reconnect) pageplatform pages with their photoplatform accounts,
 * see which need reconnecting, select/unselect, disconnect.
 */
import { and, eq } from "drizzle-orm";
import { Hono, type Context } from "hono";
import { socialAccounts } from "../../db/schema";
import { listAccounts } from "../social/accounts";
import type { HubEnv, HubSession } from "./env";
import { HubError } from "./errors";
import { finishConnect, startConnect } from "./connect";
import { readHubForm } from "./form";
import { Layout, PostForm } from "./ui/layout";

type Flash = { kind: "ok" | "error"; text: string } | null;

async function accountsPage(c: Context<HubEnv>, flash: Flash = null) {
  const session = c.get("session") as HubSession;
  const accounts = await listAccounts(c.get("services").db, session.userId);
  const sandbox = c.get("services").config.graph.sandbox;
  return c.html(
    <Layout title="Accounts" session={session} nav="accounts" flash={flash}>
      <h1>Connected accounts</h1>
      <p class="muted">
        Posts go to the accounts you name in <code>accountIds</code>. Connecting a pageplatform page also connects the photoplatform professional account linked
        to it.{sandbox ? " This service runs the built-in platform sandbox: nothing reaches a real network." : ""}
      </p>
      <PostForm action="/hub/accounts/connect" session={session} class="row">
        <button type="submit">Connect pageplatform</button>
      </PostForm>
      {accounts.length === 0 ? (
        <p class="card">No accounts connected yet.</p>
      ) : (
        <ul class="plain card" aria-label="Accounts">
          {accounts.map((a) => (
            <li class="account">
              <div class="who-is">
                <strong>{a.name}</strong> <span class="muted small">{a.platform}</span>
                <div>
                  <code>{a.id}</code>
                </div>
              </div>
              <div class="state">
                {a.canPublish ? <span class="badge active">connected</span> : <span class="badge reconnect">reconnect</span>}
                <span class={`badge ${a.selected ? "active" : "cancelled"}`}>{a.selected ? "selected" : "not selected"}</span>
              </div>
              <div class="actions">
                <PostForm action={`/hub/accounts/${encodeURIComponent(a.id)}/select`} session={session} class="inline">
                  <input type="hidden" name="selected" value={a.selected ? "false" : "true"} />
                  <button type="submit" class="secondary" aria-label={`${a.selected ? "Unselect" : "Select"} ${a.name}`}>
                    {a.selected ? "Unselect" : "Select"}
                  </button>
                </PostForm>
                <PostForm action={`/hub/accounts/${encodeURIComponent(a.id)}/disconnect`} session={session} class="inline">
                  <button type="submit" class="danger" aria-label={`Disconnect ${a.name}`}>
                    Disconnect
                  </button>
                </PostForm>
              </div>
              {a.canPublish ? null : (
                <p class="note small">
                  The platform no longer accepts this connection (expired or revoked). Use “Connect pageplatform” to reconnect it; its id stays the same.
                </p>
              )}
            </li>
          ))}
        </ul>
      )}
    </Layout>,
  );
}

export function createAccountRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();
  router.get("/", (c) => accountsPage(c));

  router.post("/connect", async (c) => c.redirect(await startConnect(c), 303));

  router.get("/callback", async (c) => {
    const result = await finishConnect(c);
    const text = [
      result.connected.length ? `Connected: ${result.connected.join(", ")}.` : "No page was granted, so nothing was connected.",
      result.skipped.length ? `Not connected (no page access granted): ${result.skipped.join(", ")}.` : "",
      result.declined.length ? `Permissions not granted: ${result.declined.join(", ")}; publishing needs them, so connect again and allow them.` : "",
    ].filter(Boolean);
    return accountsPage(c, { kind: result.connected.length && !result.declined.length ? "ok" : "error", text: text.join(" ") });
  });

  router.post("/:id/select", async (c) => {
    const body = await readHubForm(c);
    const selected = body.selected === "true";
    const rows = await c
      .get("services")
      .db.update(socialAccounts)
      .set({ selected, updatedAt: c.get("services").clock.now() })
      .where(and(eq(socialAccounts.userId, c.get("session")!.userId), eq(socialAccounts.id, c.req.param("id"))))
      .returning({ name: socialAccounts.name });
    if (!rows[0]) throw new HubError(404, "No connected account of yours has that id.");
    return accountsPage(c, { kind: "ok", text: `${rows[0].name} is ${selected ? "selected" : "not selected"}.` });
  });

  router.post("/:id/disconnect", async (c) => {
    const rows = await c
      .get("services")
      .db.delete(socialAccounts)
      .where(and(eq(socialAccounts.userId, c.get("session")!.userId), eq(socialAccounts.id, c.req.param("id"))))
      .returning({ name: socialAccounts.name });
    if (!rows[0]) throw new HubError(404, "No connected account of yours has that id.");
    return accountsPage(c, { kind: "ok", text: `${rows[0].name} is disconnected; its token is deleted.` });
  });
  return router;
}
