/**
 * Gallery page: the images area B made for the user, newest first, as thumbnails a page at a time (filtered
 * by template); each item's page shows it with what made it and what it cost, "Post this" (a form that posts
 * it to chosen accounts through area C's own createPost, as `POST /api/v1/social/posts` with `{galleryId}`
 * does) and delete (with a confirmation step). Every form answers with a redirect (src/hub/flash.ts).
 */
import { Hono, type Context } from "hono";
import { ApiError } from "../http/errors";
import { thumbnailSize } from "../images/geometry";
import { galleryPage } from "../photo/account";
import { deleteGalleryItem, galleryView, getGalleryItem } from "../photo/gallery";
import { listAccounts } from "../social/accounts";
import { createPost } from "../social/posts";
import { PostCreateSchema } from "../social/schemas";
import type { HubEnv, HubSession } from "./env";
import { HubError } from "./errors";
import { redirectWithFlash, takeFlash } from "./flash";
import { readHubForm } from "./form";
import { Confirm, formatTime, Layout, PostForm, StackTable } from "./ui/layout";

const BASE = "/hub/gallery";
const PAGE_SIZE = 24;
/** The template filter as the page accepts it (ids are lower-case words and dashes). */
const TEMPLATE_ID = /^[a-z0-9-]{1,64}$/;

async function listPage(c: Context<HubEnv>) {
  const session = c.get("session") as HubSession;
  const services = c.get("services");
  const flash = await takeFlash(c);
  const offset = Math.min(10_000, Math.max(0, Number.parseInt(c.req.query("offset") ?? "0", 10) || 0));
  const template = c.req.query("template") ?? "";
  const templateId = TEMPLATE_ID.test(template) ? template : undefined;
  const page = await galleryPage(services, session.userId, { templateId, limit: PAGE_SIZE, offset });
  const more = (at: number) => `${BASE}?${new URLSearchParams({ ...(templateId ? { template: templateId } : {}), offset: String(at) })}`;
  return c.html(
    <Layout title="Gallery" session={session} nav="gallery" flash={flash}>
      <h1>Gallery</h1>
      <p class="muted">Every product photo you have made, newest first. Open one to see its details, post it to your accounts, or delete it.</p>
      <form method="get" action={BASE} class="row">
        <div>
          <label for="gallery-template">Template</label>
          <input id="gallery-template" name="template" value={templateId ?? ""} placeholder="e.g. studio-plinth" maxlength={64} />
        </div>
        <button type="submit" class="secondary">
          Filter
        </button>
        {templateId ? <a href={BASE}>Show all</a> : null}
      </form>
      {page.items.length === 0 ? (
        <p>{templateId ? "No images from this template." : "No images yet. Make one with POST /api/image/product-photography."}</p>
      ) : (
        <StackTable columns={["Image", "Made from", "Model", "Cost", "Made"]}>
          {page.items.map((item) => (
            <tr>
              <td data-label="Image">
                <div class="thumbs large">
                  <a href={`${BASE}/${item.id}`}>
                    <img
                      src={item.thumbnailUrl}
                      alt={`Open ${item.label ?? item.templateId ?? "this one"}`}
                      width={120}
                      height={120}
                      loading="lazy"
                      decoding="async"
                    />
                  </a>
                </div>
              </td>
              <td data-label="Made from">
                <a href={`${BASE}/${item.id}`}>{madeFrom(item)}</a>
                {item.label ? <div class="small muted">{item.label}</div> : null}
              </td>
              <td data-label="Model">
                {item.model} · {item.resolution} · {item.aspectRatio}
              </td>
              <td data-label="Cost">{item.cost.credits} credits</td>
              <td data-label="Made">{formatTime(item.createdAt)}</td>
            </tr>
          ))}
        </StackTable>
      )}
      {page.total > PAGE_SIZE ? (
        <nav class="pager" aria-label="Gallery pages">
          {offset > 0 ? <a href={more(Math.max(0, offset - PAGE_SIZE))}>← Newer</a> : null}{" "}
          <span class="muted">
            {offset + 1}–{offset + page.items.length} of {page.total}
          </span>{" "}
          {page.hasMore ? <a href={more(offset + PAGE_SIZE)}>Older →</a> : null}
        </nav>
      ) : null}
    </Layout>,
  );
}

function madeFrom(item: { templateId: string | null; scenePrompt: string | null }): string {
  if (item.templateId && item.scenePrompt) return `${item.templateId}: ${item.scenePrompt}`;
  return item.templateId ?? item.scenePrompt ?? "—";
}

async function itemPage(c: Context<HubEnv>, id: string) {
  const session = c.get("session") as HubSession;
  const services = c.get("services");
  const item = galleryView(services, await found(() => getGalleryItem(services, session.userId, id)));
  const flash = await takeFlash(c);
  const accounts = (await listAccounts(services.db, session.userId)).filter((a) => a.canPublish);
  const here = `${BASE}/${item.id}`;
  return c.html(
    <Layout title="Gallery image" session={session} nav="gallery" flash={flash}>
      <p class="small">
        <a href={BASE}>← Gallery</a>
      </p>
      <h1>{madeFrom(item)}</h1>
      <div class="preview">
        <a href={item.imageUrl}>
          <img src={item.thumbnailUrl} alt={`${madeFrom(item)}, full size`} {...thumbnailSize(item.width, item.height)} />
        </a>
      </div>
      <dl class="details">
        <dt>Label</dt>
        <dd>{item.label ?? "—"}</dd>
        <dt>Model</dt>
        <dd>
          {item.model} at {item.resolution}, {item.aspectRatio} ({item.width}×{item.height} px)
        </dd>
        <dt>Cost</dt>
        <dd>
          {item.cost.credits} credits (${item.cost.usd.toFixed(4)}, ₹{item.cost.inr.toFixed(2)})
        </dd>
        <dt>Made</dt>
        <dd>{formatTime(item.createdAt)}</dd>
        <dt>Image</dt>
        <dd>
          <a href={item.imageUrl}>PNG</a> · <code class="small">{item.id}</code>
        </dd>
      </dl>
      <section class="card" aria-labelledby="post-this">
        <h2 id="post-this">Post this</h2>
        {accounts.length === 0 ? (
          <p>
            No account can publish yet. <a href="/hub/accounts">Connect a page</a> first.
          </p>
        ) : (
          <PostForm action={`${here}/post`} session={session}>
            <input type="hidden" name="key" value={`hub-gallery-${crypto.randomUUID()}`} />
            <fieldset class="scopes">
              <legend>Post to</legend>
              {accounts.map((a) => (
                <label>
                  <input type="checkbox" name={`account_${a.id}`} value="on" /> {a.name} <span class="small muted">({a.platform})</span>
                </label>
              ))}
            </fieldset>
            <label for="post-caption">Caption</label>
            <textarea id="post-caption" name="caption" rows={3} maxlength={2200} />
            <button type="submit">Post now</button>
          </PostForm>
        )}
      </section>
      <p>
        <a class="button danger" href={`${here}/delete`}>
          Delete from gallery
        </a>
      </p>
    </Layout>,
  );
}

/** The API's 404 for another user's item, as the hub's 404 page. */
async function found<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) throw new HubError(404, "No image of your gallery has that id.");
    throw err;
  }
}

export function createGalleryRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();
  router.get("/", (c) => listPage(c));
  router.get("/:id", (c) => itemPage(c, c.req.param("id")));

  router.post("/:id/post", async (c) => {
    const form = await readHubForm(c);
    const services = c.get("services");
    const userId = c.get("session")!.userId;
    const id = c.req.param("id");
    const item = await found(() => getGalleryItem(services, userId, id));
    const back = `${BASE}/${item.id}`;
    const accountIds = Object.keys(form)
      .filter((k) => k.startsWith("account_") && form[k] === "on")
      .map((k) => k.slice("account_".length));
    if (accountIds.length === 0) return redirectWithFlash(c, back, { kind: "error", text: "Choose at least one account to post to." });
    const parsed = PostCreateSchema.safeParse({ accountIds, caption: typeof form.caption === "string" ? form.caption : "", images: [{ galleryId: item.id }] });
    if (!parsed.success) return redirectWithFlash(c, back, { kind: "error", text: "The caption or the accounts could not be used; check them and try again." });
    const key = typeof form.key === "string" && /^hub-gallery-[0-9a-f-]{36}$/.test(form.key) ? form.key : `hub-gallery-${crypto.randomUUID()}`;
    try {
      const created = await createPost(services, userId, key, parsed.data);
      return redirectWithFlash(c, `/hub/posts/${created.post.id}`, { kind: "ok", text: "Posted from your gallery; each account's state shows below." });
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) return redirectWithFlash(c, back, { kind: "error", text: err.message });
      throw err;
    }
  });

  router.get("/:id/delete", async (c) => {
    const session = c.get("session") as HubSession;
    const id = c.req.param("id");
    const item = await found(() => getGalleryItem(c.get("services"), session.userId, id));
    return c.html(
      <Layout title="Delete image" session={session} nav="gallery">
        <Confirm
          session={session}
          question="Delete this image from your gallery?"
          action={`${BASE}/${item.id}/delete`}
          button="Yes, delete it"
          back={`${BASE}/${item.id}`}
          backLabel="No, keep it"
        >
          <p>Its image and thumbnail are removed. Posts made from it keep their own copy. This cannot be undone.</p>
        </Confirm>
      </Layout>,
    );
  });

  router.post("/:id/delete", async (c) => {
    const id = c.req.param("id");
    if ((await readHubForm(c)).confirm !== "yes") return c.redirect(`${BASE}/${encodeURIComponent(id)}/delete`, 303);
    await found(() => deleteGalleryItem(c.get("services"), c.get("session")!.userId, id));
    return redirectWithFlash(c, BASE, { kind: "ok", text: "The image is deleted from your gallery." });
  });
  return router;
}
