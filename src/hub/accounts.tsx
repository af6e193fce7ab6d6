/**
 * Connected accounts page: connect (or reconnect) pageplatform pages with their photoplatform accounts, each
 * photoplatform account shown under the page it came with; see which need reconnecting; preselect for apps;
 * disconnect after a confirmation step. Every form, and the platform's return to the callback, answers 303
 * to this page with what happened (src/hub/flash.ts), so the OAuth code leaves the address bar and a reload
 * repeats nothing.
 */
import { and, asc, eq } from "drizzle-orm";
import { Hono, type Context } from "hono";
import { socialAccounts } from "../../db/schema";
import { toAccountRecord, type AccountRecord } from "../social/accounts";
import type { HubEnv, HubSession } from "./env";
import { HubError } from "./errors";
import { finishConnect, startConnect } from "./connect";
import { redirectWithFlash, takeFlash } from "./flash";
import { readHubForm } from "./form";
import { Confirm, Layout, PostForm } from "./ui/layout";

type Listed = AccountRecord & { pageAccountId: string | null };

/** The user's accounts, oldest first, each with the page it was connected through. */
async function accountsOf(c: Context<HubEnv>): Promise<Listed[]> {
  const rows = await c
    .get("services")
    .db.select()
    .from(socialAccounts)
    .where(eq(socialAccounts.userId, c.get("session")!.userId))
    .orderBy(asc(socialAccounts.createdAt), asc(socialAccounts.id));
  return rows.map((row) => ({ ...toAccountRecord(row), pageAccountId: row.pageAccountId }));
}

const PLATFORM_WORDS: Record<AccountRecord["platform"], string> = { pageplatform: "page", photoplatform: "photo account" };

function AccountItem(props: { account: Listed; session: HubSession; children?: unknown }) {
  const a = props.account;
  const path = `/hub/accounts/${encodeURIComponent(a.id)}`;
  return (
    <li class="account">
      <div class="who-is">
        <strong>{a.name}</strong> <span class="muted small">{PLATFORM_WORDS[a.platform]}</span>
        <div class="small muted">
          id for the API: <code>{a.id}</code>
        </div>
      </div>
      <div class="state">
        {a.canPublish ? <span class="badge active">connected</span> : <span class="badge reconnect">reconnect</span>}
        {a.selected ? <span class="badge">preselected</span> : null}
      </div>
      <div class="actions">
        <PostForm action={`${path}/select`} session={props.session} class="inline">
          <input type="hidden" name="selected" value={a.selected ? "false" : "true"} />
          <button type="submit" class="secondary" aria-label={`${a.selected ? "Stop preselecting" : "Preselect"} ${a.name}`}>
            {a.selected ? "Stop preselecting" : "Preselect"}
          </button>
        </PostForm>
        <a class="button danger" href={`${path}/disconnect`} aria-label={`Disconnect ${a.name}`}>
          Disconnect
        </a>
      </div>
      {a.canPublish ? null : (
        <p class="note small">
          The platform no longer accepts this connection (expired or revoked). Use “Connect pageplatform” to reconnect it; its id stays the same.
        </p>
      )}
      {props.children}
    </li>
  );
}

async function accountsPage(c: Context<HubEnv>) {
  const session = c.get("session") as HubSession;
  const flash = await takeFlash(c);
  const accounts = await accountsOf(c);
  const sandbox = c.get("services").config.graph.sandbox;
  const pages = accounts.filter((a) => a.platform === "pageplatform");
  const pageIds = new Set(pages.map((p) => p.id));
  const unlinked = accounts.filter((a) => a.platform !== "pageplatform" && !(a.pageAccountId && pageIds.has(a.pageAccountId)));
  return c.html(
    <Layout title="Accounts" session={session} nav="accounts" flash={flash}>
      <h1>Connected accounts</h1>
      <p class="muted">
        Connect your pageplatform page to post to it; the photoplatform account linked to the page comes along and is listed under it.
        {sandbox ? " This service runs the built-in platform sandbox: nothing reaches a real network." : ""}
      </p>
      <PostForm action="/hub/accounts/connect" session={session} class="row">
        <button type="submit">Connect pageplatform</button>
      </PostForm>
      {accounts.length === 0 ? (
        <p class="card">No accounts connected yet.</p>
      ) : (
        <>
          <ul class="plain card" aria-label="Pages">
            {pages.map((page) => {
              const linked = accounts.filter((a) => a.pageAccountId === page.id);
              return (
                <AccountItem account={page} session={session}>
                  {linked.length ? (
                    <ul class="linked" aria-label={`Linked to ${page.name}`}>
                      {linked.map((a) => (
                        <AccountItem account={a} session={session} />
                      ))}
                    </ul>
                  ) : null}
                </AccountItem>
              );
            })}
          </ul>
          {unlinked.length ? (
            <>
              <h2>Photo accounts without a connected page</h2>
              <ul class="plain card" aria-label="Other accounts">
                {unlinked.map((a) => (
                  <AccountItem account={a} session={session} />
                ))}
              </ul>
            </>
          ) : null}
        </>
      )}
      <p class="small muted">
        <strong>Preselected</strong> accounts are marked <code>"selected": true</code> when your apps list accounts through the API, so an app can offer them
        first. It changes nothing else: a post goes to the accounts it names.
      </p>
    </Layout>,
  );
}

export function createAccountRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();
  router.get("/", (c) => accountsPage(c));

  router.post("/connect", async (c) => {
    try {
      return c.redirect(await startConnect(c), 303);
    } catch (err) {
      if (err instanceof HubError) return redirectWithFlash(c, "/hub/accounts", { kind: "error", text: err.message });
      throw err;
    }
  });

  // The platform sends the browser back here with the code; the answer is a 303 to the page, so the code
  // leaves the address bar whatever happened.
  router.get("/callback", async (c) => {
    let result: Awaited<ReturnType<typeof finishConnect>>;
    try {
      result = await finishConnect(c);
    } catch (err) {
      if (err instanceof HubError) return redirectWithFlash(c, "/hub/accounts", { kind: "error", text: err.message });
      throw err;
    }
    const text = [
      result.connected.length ? `Connected: ${result.connected.join(", ")}.` : "No page was granted, so nothing was connected.",
      result.skipped.length ? `Not connected (no page access granted): ${result.skipped.join(", ")}.` : "",
      result.declined.length ? `Permissions not granted: ${result.declined.join(", ")}; publishing needs them, so connect again and allow them.` : "",
    ].filter(Boolean);
    return redirectWithFlash(c, "/hub/accounts", { kind: result.connected.length && !result.declined.length ? "ok" : "error", text: text.join(" ") });
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
    if (!rows[0]) return redirectWithFlash(c, "/hub/accounts", { kind: "error", text: "No connected account of yours has that id." });
    return redirectWithFlash(c, "/hub/accounts", { kind: "ok", text: `${rows[0].name} is ${selected ? "preselected" : "no longer preselected"}.` });
  });

  router.get("/:id/disconnect", async (c) => {
    const session = c.get("session") as HubSession;
    const id = c.req.param("id");
    const accounts = await accountsOf(c);
    const account = accounts.find((a) => a.id === id);
    if (!account) throw new HubError(404, "No connected account of yours has that id: it may be disconnected already.");
    const linked = accounts.filter((a) => a.pageAccountId === id);
    return c.html(
      <Layout title="Disconnect" session={session} nav="accounts">
        <Confirm
          session={session}
          question={`Disconnect ${account.name}?`}
          action={`/hub/accounts/${encodeURIComponent(id)}/disconnect`}
          button="Yes, disconnect"
          back="/hub/accounts"
          backLabel="No, keep it"
        >
          <p>
            This service deletes its access to the {PLATFORM_WORDS[account.platform]}. Posts already published stay on it; posts still waiting for it fail until
            you connect it again with “Connect pageplatform”.
          </p>
          {linked.length ? <p>{linked.map((a) => a.name).join(", ")}, linked to this page, stays connected until you disconnect it too.</p> : null}
        </Confirm>
      </Layout>,
    );
  });

  router.post("/:id/disconnect", async (c) => {
    const id = c.req.param("id");
    if ((await readHubForm(c)).confirm !== "yes") return c.redirect(`/hub/accounts/${encodeURIComponent(id)}/disconnect`, 303);
    const rows = await c
      .get("services")
      .db.delete(socialAccounts)
      .where(and(eq(socialAccounts.userId, c.get("session")!.userId), eq(socialAccounts.id, id)))
      .returning({ name: socialAccounts.name });
    if (!rows[0])
      return redirectWithFlash(c, "/hub/accounts", { kind: "error", text: "No connected account of yours has that id: it may be disconnected already." });
    return redirectWithFlash(c, "/hub/accounts", { kind: "ok", text: `${rows[0].name} is disconnected; its access token is deleted.` });
  });
  return router;
}
