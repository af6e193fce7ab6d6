/**
 * Posts pages: the user's posts with each target's status and errors in words, a detail page, and cancel
 * (area C's own `cancelPost`, so the rules are exactly those of DELETE /posts/{id}). While something is
 * still on its way the page reloads itself every few seconds (a meta refresh: no script needed).
 */
import { Hono, type Context } from "hono";
import { ApiError } from "../http/errors";
import { cancelPost, getPost, listPosts } from "../social/posts";
import type { PostListQuery, PostRecord } from "../social/schemas";
import type { HubEnv, HubSession } from "./env";
import { formatTime, Layout, PostForm, StackTable } from "./ui/layout";

export const REFRESH_SECONDS = 3;
const PAGE_SIZE = 25;

const ERROR_WORDS: Record<string, string> = {
  ACCOUNT_NEEDS_RECONNECT: "The platform no longer accepts this account's connection. Reconnect it on the Accounts page, then post again.",
  RATE_LIMITED: "The platform asked us to slow down; we will try again automatically.",
  PLATFORM_UNAVAILABLE: "The platform had a temporary problem; we will try again automatically.",
  PLATFORM_REJECTED: "The platform refused this post as it is (for example its image or text).",
  OUTCOME_UNKNOWN: "The platform did not answer in time; we check whether the post went out before trying again.",
  PUBLISHER_INTERRUPTED: "Publishing was interrupted; we will try again automatically.",
};

type Target = PostRecord["accounts"][number];

function targetError(t: Target): string | null {
  if (!t.error) return null;
  const words = ERROR_WORDS[t.error.code] ?? "Publishing failed.";
  return `${words}${t.nextAttemptAt ? ` Next attempt: ${formatTime(t.nextAttemptAt)}.` : ""} (${t.error.code}: ${t.error.message})`;
}

/** Something will still change soon: a target being sent, due, or awaiting a retry. */
function outstanding(post: PostRecord, now: number): boolean {
  if (post.status === "queued" || post.status === "publishing") return true;
  const soon = (iso: string | null) => iso !== null && new Date(iso).getTime() - now < 10 * 60_000;
  return post.accounts.some((t) => (t.status === "pending" || t.status === "failed") && soon(t.nextAttemptAt));
}

function Status(props: { status: string }) {
  return <span class={`badge ${props.status}`}>{props.status.replace("_", " ")}</span>;
}

function Targets(props: { post: PostRecord }) {
  return (
    <ul class="plain">
      {props.post.accounts.map((t) => (
        <li>
          <code>{t.accountId}</code> <Status status={t.status} />
          {t.publishedAt ? <span class="muted small"> {formatTime(t.publishedAt)}</span> : null}
          {targetError(t) ? <div class="small">{targetError(t)}</div> : null}
        </li>
      ))}
    </ul>
  );
}

const summary = (p: PostRecord) => (p.caption || (p.imageUrls.length ? `${p.imageUrls.length} image(s)` : "(no text)")).slice(0, 80);

async function listPage(c: Context<HubEnv>) {
  const session = c.get("session") as HubSession;
  const offset = Math.min(10_000, Math.max(0, Number.parseInt(c.req.query("offset") ?? "0", 10) || 0));
  const listed = await listPosts(c.get("services"), session.userId, { limit: PAGE_SIZE, offset } as PostListQuery);
  const page = { ...listed, items: JSON.parse(`[${listed.items}]`) as PostRecord[] };
  const now = c.get("services").clock.now().getTime();
  const refresh = page.items.some((p) => outstanding(p, now));
  return c.html(
    <Layout title="Posts" session={session} nav="posts" refreshSeconds={refresh ? REFRESH_SECONDS : undefined}>
      <h1>Posts</h1>
      <p class="muted">
        {page.total} post{page.total === 1 ? "" : "s"}, newest first.{refresh ? " This page refreshes itself while posts are on their way." : ""}
      </p>
      {page.items.length === 0 ? (
        <p class="card">
          No posts yet. Create one with <code>POST /api/v1/social/posts</code>; see <a href="/hub/start">Getting started</a>.
        </p>
      ) : (
        <StackTable columns={["Post", "Status", "Targets", "When"]}>
          {page.items.map((p) => (
            <tr>
              <td data-label="Post">
                <a href={`/hub/posts/${p.id}`}>{summary(p)}</a>
              </td>
              <td data-label="Status">
                <Status status={p.status} />
              </td>
              <td data-label="Targets">
                <Targets post={p} />
              </td>
              <td data-label="When" class="when">
                {p.scheduledFor ? `scheduled ${formatTime(p.scheduledFor)}` : formatTime(p.createdAt)}
              </td>
            </tr>
          ))}
        </StackTable>
      )}
      <p class="row">
        {offset > 0 ? <a href={`/hub/posts?offset=${Math.max(0, offset - PAGE_SIZE)}`}>Newer</a> : null}
        {page.hasMore ? <a href={`/hub/posts?offset=${offset + PAGE_SIZE}`}>Older</a> : null}
      </p>
    </Layout>,
  );
}

async function detailPage(c: Context<HubEnv>, flash: { kind: "ok" | "error"; text: string } | null = null, status: 200 | 409 = 200) {
  const session = c.get("session") as HubSession;
  const post = await getPost(c.get("services"), session.userId, c.req.param("id")!);
  const cancellable = post.accounts.some((t) => t.status === "pending" || (t.status === "failed" && t.nextAttemptAt));
  const refresh = outstanding(post, c.get("services").clock.now().getTime());
  return c.html(
    <Layout title="Post" session={session} nav="posts" flash={flash} refreshSeconds={refresh && !flash ? REFRESH_SECONDS : undefined}>
      <p>
        <a href="/hub/posts">All posts</a>
      </p>
      <h1>
        Post <Status status={post.status} />
      </h1>
      <div class="card">
        <p>
          <span class="muted">Id</span> <code>{post.id}</code>
        </p>
        <p>{post.caption || <span class="muted">(no text)</span>}</p>
        {post.hashtags.length ? <p class="muted">{post.hashtags.map((h) => `#${h}`).join(" ")}</p> : null}
        <p class="small muted">
          Created {formatTime(post.createdAt)}
          {post.scheduledFor ? ` · scheduled for ${formatTime(post.scheduledFor)}` : ""}
          {post.cancelledAt ? ` · cancelled ${formatTime(post.cancelledAt)}` : ""}
        </p>
        {post.imageUrls.length ? <p class="small">{post.imageUrls.length} image(s)</p> : null}
      </div>
      <h2>Targets</h2>
      <div class="card">
        <Targets post={post} />
      </div>
      {cancellable ? (
        <PostForm action={`/hub/posts/${post.id}/cancel`} session={session}>
          <p class="small muted">Cancelling stops the targets not yet published; anything already live stays live.</p>
          <button type="submit" class="danger">
            Cancel post
          </button>
        </PostForm>
      ) : null}
    </Layout>,
    status,
  );
}

export function createPostRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();
  router.get("/", (c) => listPage(c));
  router.get("/:id", (c) => detailPage(c));
  router.post("/:id/cancel", async (c) => {
    try {
      await cancelPost(c.get("services"), c.get("session")!.userId, c.req.param("id"));
    } catch (err) {
      if (err instanceof ApiError && err.code === "POST_NOT_CANCELLABLE") return detailPage(c, { kind: "error", text: err.message }, 409);
      throw err;
    }
    return detailPage(c, { kind: "ok", text: "Cancelled: the targets that were not yet published will not be sent." });
  });
  return router;
}
