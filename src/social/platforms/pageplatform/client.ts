/**
 * Raw Graph calls of pageplatform (a page): text posts, photo posts, unpublished photos for multi-photo
 * posts, and the feed read used to reconcile.
 */
import { graphGet, graphPost, type GraphTarget } from "../graph-http";
import { attachedMediaParams, type FeedItem } from "./transform";

export async function createFeedPost(g: GraphTarget, pageId: string, message: string, photoIds: readonly string[] = []): Promise<{ id: string }> {
  return graphPost(g, `${pageId}/feed`, { message, ...attachedMediaParams(photoIds) }, { publishes: true });
}

export async function createPhotoPost(g: GraphTarget, pageId: string, url: string, caption: string): Promise<{ id: string; post_id?: string }> {
  return graphPost(g, `${pageId}/photos`, { url, caption, published: true }, { publishes: true });
}

/** An unpublished photo is invisible until attached to a feed post, so losing its answer is harmless. */
export async function uploadUnpublishedPhoto(g: GraphTarget, pageId: string, url: string): Promise<{ id: string }> {
  return graphPost(g, `${pageId}/photos`, { url, published: false }, { publishes: false });
}

export async function listFeed(g: GraphTarget, pageId: string, since: Date): Promise<FeedItem[]> {
  const res = await graphGet<{ data?: FeedItem[] }>(g, `${pageId}/feed`, {
    fields: "id,message,created_time",
    since: Math.floor(since.getTime() / 1000),
    limit: 50,
  });
  return Array.isArray(res.data) ? res.data : [];
}
