/**
 * Posts pages: the user's posts with their images, each target by its account's name with its status, and
 * failures in the shop owner's words (the platform's own text behind a "details" toggle); a detail page;
 * and cancel after a confirmation step (area C's own `cancelPost`, so the rules are exactly those of
 * DELETE /posts/{id}), answered by a 303 to the post (src/hub/flash.ts). While something is still on its
 * way the page reloads itself every few seconds (a meta refresh: no script needed).
 */
import { Hono, type Context } from "hono";
import { ApiError } from "../http/errors";
import { listAccounts } from "../social/accounts";
import { cancelPost, getPost, listPosts } from "../social/posts";
import type { PostListQuery, PostRecord } from "../social/schemas";
import type { HubEnv, HubSession } from "./env";
import { redirectWithFlash, takeFlash } from "./flash";
import { readHubForm } from "./form";
import { Confirm, formatTime, Layout, StackTable } from "./ui/layout";

export const REFRESH_SECONDS = 3;
const PAGE_SIZE = 25;

/** What went wrong, in words; what happens next is added from the target's state. */
const ERROR_WORDS: Record<string, string> = {
  ACCOUNT_NEEDS_RECONNECT:
    "This account's permission to post has expired or was withdrawn on the platform. Reconnect it on the Accounts page, then post again.",
  RATE_LIMITED: "The platform asked us to slow down for a while.",
  PLATFORM_UNAVAILABLE: "The platform had a temporary problem.",
  PLATFORM_REJECTED:
    "The platform refused this post as it is: usually the picture (its size or shape) or the text (too long, or too many hashtags). Change it and post again.",
  OUTCOME_UNKNOWN: "The platform did not answer in time, so we check whether the post went out before trying again.",
  PUBLISHER_INTERRUPTED: "Sending was interrupted on our side.",
};

type Target = PostRecord["accounts"][number];
/** Account id -> name, for the accounts still connected. */
type Names = ReadonlyMap<string, string>;

async function accountNames(c: Context<HubEnv>): Promise<Names> {
  const accounts = await listAccounts(c.get("services").db, (c.get("session") as HubSession).userId);
  return new Map(accounts.map((a) => [a.id, a.name]));
}

function TargetError(props: { target: Target }) {
  const t = props.target;
  if (!t.error) return null;
  const words = ERROR_WORDS[t.error.code] ?? "Sending failed.";
  const next = t.nextAttemptAt ? ` We try again at ${formatTime(t.nextAttemptAt)}.` : t.status === "failed" ? " We stopped trying." : "";
  return (
    <div class="small">
      {words}
      {next}
      <details class="raw">
        <summary>Details</summary>
        <code>
          {t.error.code}: {t.error.message}
        </code>
      </details>
    </div>
  );
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

function AccountName(props: { id: string; names: Names }) {
  const name = props.names.get(props.id);
  return name ? (
    <strong>{name}</strong>
  ) : (
    <span>
      <code>{props.id}</code> <span class="muted small">(disconnected)</span>
    </span>
  );
}

function Targets(props: { post: PostRecord; names: Names }) {
  return (
    <ul class="plain">
      {props.post.accounts.map((t) => (
        <li>
          <AccountName id={t.accountId} names={props.names} /> <Status status={t.status} />
          {t.publishedAt ? <span class="muted small"> {formatTime(t.publishedAt)}</span> : null}
          <TargetError target={t} />
        </li>
      ))}
    </ul>
  );
}

/** The post's images, small; each opens the full image. */
function Thumbnails(props: { post: PostRecord; large?: boolean; limit?: number }) {
  const images = props.post.images.slice(0, props.limit ?? props.post.images.length);
  if (!images.length) return null;
  return (
    <div class={props.large ? "thumbs large" : "thumbs"}>
      {images.map((image, i) => (
        <a href={image.url}>
          <img
            src={image.url}
            alt={`Full size, ${i + 1} of ${props.post.images.length}`}
            width={props.large ? 120 : 56}
            height={props.large ? 120 : 56}
            loading="lazy"
            decoding="async"
          />
        </a>
      ))}
    </div>
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
  const names = await accountNames(c);
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
                <div class="post-cell">
                  <Thumbnails post={p} limit={1} />
                  <a href={`/hub/posts/${p.id}`}>{summary(p)}</a>
                </div>
              </td>
              <td data-label="Status">
                <Status status={p.status} />
              </td>
              <td data-label="Targets">
                <Targets post={p} names={names} />
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

async function detailPage(c: Context<HubEnv>) {
  const session = c.get("session") as HubSession;
  const post = await getPost(c.get("services"), session.userId, c.req.param("id")!);
  const flash = await takeFlash(c);
  const names = await accountNames(c);
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
        <p>{post.caption || <span class="muted">(no text)</span>}</p>
        {post.hashtags.length ? <p class="muted">{post.hashtags.map((h) => `#${h}`).join(" ")}</p> : null}
        <Thumbnails post={post} large />
        <p class="small muted">
          Created {formatTime(post.createdAt)}
          {post.scheduledFor ? ` · scheduled for ${formatTime(post.scheduledFor)}` : ""}
          {post.cancelledAt ? ` · cancelled ${formatTime(post.cancelledAt)}` : ""}
          {" · id "}
          <code>{post.id}</code>
        </p>
      </div>
      <h2>Where it goes</h2>
      <div class="card">
        <Targets post={post} names={names} />
      </div>
      {cancellable(post) ? (
        <p>
          <a class="button danger" href={`/hub/posts/${post.id}/cancel`}>
            Cancel post
          </a>
        </p>
      ) : null}
    </Layout>,
  );
}

/** A target is still to be sent (due, scheduled, or awaiting a retry). */
const cancellable = (post: PostRecord) => post.accounts.some((t) => t.status === "pending" || (t.status === "failed" && t.nextAttemptAt));

/** A target whose last attempt got no answer: the post may be live there, and cancelling does not remove it. */
const maybeLive = (t: PostRecord["accounts"][number]) => t.status === "failed" && t.nextAttemptAt && t.error?.code === "OUTCOME_UNKNOWN";

export function createPostRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();
  router.get("/", (c) => listPage(c));
  router.get("/:id", (c) => detailPage(c));

  router.get("/:id/cancel", async (c) => {
    const session = c.get("session") as HubSession;
    const post = await getPost(c.get("services"), session.userId, c.req.param("id"));
    if (!cancellable(post)) return redirectWithFlash(c, `/hub/posts/${post.id}`, { kind: "error", text: "Nothing of this post is still waiting to be sent." });
    const names = await accountNames(c);
    const waiting = post.accounts.filter((t) => t.status === "pending" || t.status === "failed");
    const live = post.accounts.filter((t) => t.status === "published");
    const unknown = post.accounts.filter(maybeLive);
    return c.html(
      <Layout title="Cancel post" session={session} nav="posts">
        <Confirm
          session={session}
          question="Cancel this post?"
          action={`/hub/posts/${post.id}/cancel`}
          button="Yes, cancel it"
          back={`/hub/posts/${post.id}`}
          backLabel="No, keep it"
        >
          <p>
            “{summary(post)}”{post.scheduledFor ? ` (scheduled for ${formatTime(post.scheduledFor)})` : ""}
          </p>
          <p>It will not be sent to: {waiting.map((t, i) => [i ? ", " : "", <AccountName id={t.accountId} names={names} />])}.</p>
          {live.length ? <p>Already published (stays live): {live.map((t, i) => [i ? ", " : "", <AccountName id={t.accountId} names={names} />])}.</p> : null}
          {unknown.length ? (
            <p class="flash error">
              The last attempt to publish to {unknown.map((t, i) => [i ? ", " : "", <AccountName id={t.accountId} names={names} />])} got no answer, so the post
              may already be live there; cancelling stops further attempts but does not remove it.
            </p>
          ) : null}
        </Confirm>
      </Layout>,
    );
  });

  router.post("/:id/cancel", async (c) => {
    const id = c.req.param("id");
    const back = `/hub/posts/${encodeURIComponent(id)}`;
    if ((await readHubForm(c)).confirm !== "yes") return c.redirect(`${back}/cancel`, 303);
    try {
      await cancelPost(c.get("services"), c.get("session")!.userId, id);
    } catch (err) {
      if (err instanceof ApiError && err.code === "POST_NOT_CANCELLABLE") return redirectWithFlash(c, back, { kind: "error", text: err.message });
      throw err;
    }
    return redirectWithFlash(c, back, { kind: "ok", text: "Cancelled: the targets that were not yet published will not be sent." });
  });
  return router;
}
