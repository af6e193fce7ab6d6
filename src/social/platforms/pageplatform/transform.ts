/**
 * Pure mappings for pageplatform (Graph Pages API): request parameters from our post, and feed items as
 * the generic items reconciliation matches on.
 */
import type { PlatformItem } from "../match";

export interface FeedItem {
  id: string;
  message?: string;
  created_time?: string;
}

/** `attached_media[i]={"media_fbid":"<id>"}` parameters of a multi-photo feed post. */
export function attachedMediaParams(photoIds: readonly string[]): Record<string, string> {
  const params: Record<string, string> = {};
  photoIds.forEach((id, i) => {
    params[`attached_media[${i}]`] = JSON.stringify({ media_fbid: id });
  });
  return params;
}

export function feedItemsToPlatformItems(items: readonly FeedItem[]): PlatformItem[] {
  return items.filter((i) => typeof i?.id === "string").map((i) => ({ id: i.id, text: i.message, time: i.created_time }));
}
