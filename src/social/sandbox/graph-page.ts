/**
 * Sandbox pageplatform endpoints: `POST /{page}/feed`, `POST /{page}/photos`, `GET /{page}/feed`.
 */
import type { Context } from "hono";
import type { AppEnv } from "../../http/env";
import { GRAPH_ERRORS, graphError } from "./graph-errors";
import { applyFault, callerAccount, faultOutcome, graphTime, lostAnswer, type Caller, type Params } from "./graph-common";
import { imageFetchable } from "./images";
import * as store from "./store";

export async function postFeed(c: Context<AppEnv>, caller: Caller, params: Params) {
  const db = c.get("services").db;
  const message = params.message ?? "";
  const photoIds = Object.keys(params)
    .filter((k) => /^attached_media\[\d+\]$/.test(k))
    .sort((a, b) => Number(a.match(/\d+/)![0]) - Number(b.match(/\d+/)![0]))
    .map((k) => parseMediaFbid(params[k]!));
  if (photoIds.some((id) => id === null) || (!message && photoIds.length === 0)) return graphError(c, GRAPH_ERRORS.invalidParam);
  const photos = await store.getItems(db, photoIds as string[]);
  const usable = photos.filter((p) => p.kind === "photo" && p.state === "unpublished" && p.owner === caller.owner && p.platformAccountId === caller.accountId);
  if (usable.length !== photoIds.length) return graphError(c, GRAPH_ERRORS.invalidParam);

  const byId = new Map(usable.map((p) => [p.id, p]));
  const item = {
    id: `${caller.accountId}_${store.newGraphId()}`,
    owner: caller.owner,
    platform: "pageplatform",
    platformAccountId: caller.accountId,
    kind: "feed",
    state: "published",
    caption: message,
    imageUrls: (photoIds as string[]).flatMap((id) => byId.get(id)!.imageUrls),
    attachedIds: photoIds as string[],
  };
  // No fault (the usual case): the item is stored by the same statement that looked for one.
  const kind = await store.insertUnlessFault(db, item);
  if (!kind) return c.json({ id: item.id });
  const fault = await faultOutcome(c, caller, kind);
  if (fault.response) return fault.response;
  await store.insertItem(db, item);
  return fault.loseAnswer ? lostAnswer() : c.json({ id: item.id });
}

export async function postPhoto(c: Context<AppEnv>, caller: Caller, params: Params) {
  const db = c.get("services").db;
  const url = params.url;
  if (!url) return graphError(c, GRAPH_ERRORS.invalidParam);
  const published = params.published !== "false" && params.published !== "0";
  const fault = published ? await applyFault(c, caller) : { loseAnswer: false };
  if (fault.response) return fault.response;
  if (!(await imageFetchable(c.get("services"), url))) return graphError(c, GRAPH_ERRORS.pageImageUnfetchable);

  const photoId = store.newGraphId();
  const base = { owner: caller.owner, platform: "pageplatform", platformAccountId: caller.accountId, imageUrls: [url] };
  if (!published) {
    await store.insertItem(db, { ...base, id: photoId, kind: "photo", state: "unpublished" });
    return c.json({ id: photoId });
  }
  const postId = `${caller.accountId}_${store.newGraphId()}`;
  // Both rows or neither: a crash in between must not leave a photo without its post.
  await db.transaction(async (tx) => {
    await store.insertItem(tx, { ...base, id: photoId, kind: "photo", state: "attached" });
    await store.insertItem(tx, {
      ...base,
      id: postId,
      kind: "feed",
      state: "published",
      caption: params.caption ?? params.message ?? "",
      attachedIds: [photoId],
    });
  });
  return fault.loseAnswer ? lostAnswer() : c.json({ id: photoId, post_id: postId });
}

export async function getFeed(c: Context<AppEnv>, caller: Caller, params: Params) {
  const items = await store.listItems(c.get("services").db, callerAccount(caller), ["feed"]);
  const since = Number(params.since);
  const limit = Math.min(100, Math.max(1, Number(params.limit) || 25));
  const data = items
    .filter((i) => !Number.isFinite(since) || i.createdAt.getTime() >= since * 1000)
    .reverse()
    .slice(0, limit)
    .map((i) => ({ id: i.id, message: i.caption, created_time: graphTime(i.createdAt) }));
  return c.json({ data, paging: {} });
}

function parseMediaFbid(value: string): string | null {
  try {
    const parsed = JSON.parse(value) as { media_fbid?: unknown };
    const id = typeof parsed.media_fbid === "string" || typeof parsed.media_fbid === "number" ? String(parsed.media_fbid) : null;
    // Graph ids are decimal; anything else (a NUL inside the JSON, say) names no photo.
    return id !== null && /^\d{1,30}$/.test(id) ? id : null;
  } catch {
    return null;
  }
}
