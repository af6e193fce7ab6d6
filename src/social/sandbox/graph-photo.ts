/**
 * Sandbox photoplatform endpoints: `POST /{ig-user}/media` (container), `GET /{container}` (status_code
 * IN_PROGRESS, then FINISHED after a short processing delay), `POST /{ig-user}/media_publish`,
 * `GET /{ig-user}/content_publishing_limit` and `GET /{ig-user}/media`.
 */
import type { Context } from "hono";
import type { AppEnv } from "../../http/env";
import { GRAPH_ERRORS, graphError } from "./graph-errors";
import { applyFault, callerAccount, graphTime, lostAnswer, type Caller, type Params } from "./graph-common";
import { imageFetchable } from "./images";
import * as store from "./store";

/** How long a container stays IN_PROGRESS: long enough that adapters must poll, short enough for tests. */
export const CONTAINER_PROCESSING_MS = 800;
export const QUOTA_TOTAL = 50;
const QUOTA_DURATION_S = 86_400;

export async function createContainer(c: Context<AppEnv>, caller: Caller, params: Params) {
  const url = params.image_url;
  if (!url) return graphError(c, GRAPH_ERRORS.invalidParam);
  // Meta downloads the image when the container is made, and refuses the container if it cannot.
  if (!(await imageFetchable(c.get("services"), url))) return graphError(c, GRAPH_ERRORS.photoImageUnfetchable);
  const item = await store.insertItem(c.get("services").db, {
    id: store.newGraphId(),
    owner: caller.owner,
    platform: "photoplatform",
    platformAccountId: caller.accountId,
    kind: "container",
    state: "IN_PROGRESS",
    caption: params.caption ?? "",
    imageUrls: [url],
    readyAt: Date.now() + CONTAINER_PROCESSING_MS,
  });
  return c.json({ id: item.id });
}

export async function publishContainer(c: Context<AppEnv>, caller: Caller, params: Params) {
  const db = c.get("services").db;
  const container = params.creation_id ? await store.getItem(db, params.creation_id) : null;
  if (container?.kind !== "container" || container.owner !== caller.owner || container.platformAccountId !== caller.accountId)
    return graphError(c, GRAPH_ERRORS.invalidParam);

  const fault = await applyFault(c, caller);
  if (fault.response) return fault.response;
  if ((await store.publishedSince(db, callerAccount(caller), new Date(Date.now() - QUOTA_DURATION_S * 1000))) >= QUOTA_TOTAL)
    return graphError(c, GRAPH_ERRORS.photoQuota);
  const state = await store.containerState(db, container, Date.now());
  if (state === "IN_PROGRESS") return graphError(c, GRAPH_ERRORS.notReady);
  if (state !== "FINISHED") return graphError(c, GRAPH_ERRORS.containerUsed);

  const mediaId = store.newGraphId();
  // The container flips to PUBLISHED once and the media row comes with it, or neither happens.
  const done = await db.transaction(async (tx) => {
    if (!(await store.markContainerPublished(tx, container.id, mediaId))) return false;
    await store.insertItem(tx, {
      id: mediaId,
      owner: caller.owner,
      platform: "photoplatform",
      platformAccountId: caller.accountId,
      kind: "media",
      state: "published",
      caption: container.caption,
      imageUrls: container.imageUrls,
      attachedIds: [container.id],
    });
    return true;
  });
  if (!done) return graphError(c, GRAPH_ERRORS.containerUsed);
  return fault.loseAnswer ? lostAnswer() : c.json({ id: mediaId });
}

export async function publishingLimit(c: Context<AppEnv>, caller: Caller) {
  const usage = await store.publishedSince(c.get("services").db, callerAccount(caller), new Date(Date.now() - QUOTA_DURATION_S * 1000));
  return c.json({ data: [{ quota_usage: usage, config: { quota_total: QUOTA_TOTAL, quota_duration: QUOTA_DURATION_S } }] });
}

export async function listMedia(c: Context<AppEnv>, caller: Caller, params: Params) {
  const items = await store.listItems(c.get("services").db, callerAccount(caller), ["media"]);
  const limit = Math.min(100, Math.max(1, Number(params.limit) || 25));
  const data = items
    .reverse()
    .slice(0, limit)
    .map((i) => ({ id: i.id, caption: i.caption, media_type: "IMAGE", media_url: i.imageUrls[0], timestamp: graphTime(i.createdAt) }));
  return c.json({ data, paging: {} });
}

/** `GET /{id}`: a container's status, or the fields of a published item. */
export async function readNode(c: Context<AppEnv>, item: store.SandboxItem) {
  if (item.kind === "container") {
    const status = await store.containerState(c.get("services").db, item, Date.now());
    return c.json({ id: item.id, status_code: status, ...(status === "ERROR" ? { status: "Error: 2207001" } : {}) });
  }
  if (item.kind === "media")
    return c.json({ id: item.id, caption: item.caption, media_type: "IMAGE", media_url: item.imageUrls[0], timestamp: graphTime(item.createdAt) });
  if (item.kind === "feed") return c.json({ id: item.id, message: item.caption, created_time: graphTime(item.createdAt) });
  return c.json({ id: item.id, images: item.imageUrls.map((source) => ({ source })) });
}
