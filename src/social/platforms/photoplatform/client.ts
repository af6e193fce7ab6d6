/**
 * Raw Graph calls of photoplatform (a professional account): container, status, publish, quota, media list.
 */
import { graphGet, graphPost, type GraphTarget } from "../graph-http";
import type { ContainerState, MediaItem, PublishingLimit } from "./transform";

/** A container is invisible until media_publish; losing its answer costs at most an orphan container. */
export async function createContainer(g: GraphTarget, igUserId: string, imageUrl: string, caption: string): Promise<{ id: string }> {
  return graphPost(g, `${igUserId}/media`, { image_url: imageUrl, caption }, { publishes: false });
}

export async function readContainer(g: GraphTarget, containerId: string): Promise<ContainerState> {
  return graphGet(g, containerId, { fields: "status_code,status" });
}

export async function publishContainer(g: GraphTarget, igUserId: string, containerId: string): Promise<{ id: string }> {
  return graphPost(g, `${igUserId}/media_publish`, { creation_id: containerId }, { publishes: true });
}

export async function readPublishingLimit(g: GraphTarget, igUserId: string): Promise<PublishingLimit> {
  return graphGet(g, `${igUserId}/content_publishing_limit`, { fields: "config,quota_usage" });
}

export async function listMedia(g: GraphTarget, igUserId: string): Promise<MediaItem[]> {
  const res = await graphGet<{ data?: MediaItem[] }>(g, `${igUserId}/media`, { fields: "id,caption,timestamp", limit: 50 });
  return Array.isArray(res.data) ? res.data : [];
}
