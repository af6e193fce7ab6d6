/**
 * pageplatform adapter: text post (`/{page}/feed`), one photo (`/{page}/photos`), several photos
 * (unpublished photos, then a feed post with `attached_media`). Reconciliation reads the page feed.
 *
 * @example
 * const result = await pagePlatform.publish(ctx); // { providerPostId: "123_456" }
 */
import type { PlatformAdapter } from "../types";
import { MATCH_SKEW_MS, findOwnItem } from "../match";
import { feedItemsToPlatformItems } from "./transform";
import { createFeedPost, createPhotoPost, listFeed, uploadUnpublishedPhoto } from "./client";

export const pagePlatform: PlatformAdapter = {
  async publish(ctx) {
    const { graph, platformAccountId: pageId, text, imageUrls } = ctx;
    if (imageUrls.length === 0) {
      await ctx.beforePublish();
      return { providerPostId: (await createFeedPost(graph, pageId, text)).id };
    }
    if (imageUrls.length === 1) {
      await ctx.beforePublish();
      const photo = await createPhotoPost(graph, pageId, imageUrls[0]!, text);
      // The feed shows the photo's post (post_id); that is the id reconciliation can find again.
      return { providerPostId: photo.post_id ?? photo.id };
    }
    const photoIds: string[] = [];
    for (const url of imageUrls) photoIds.push((await uploadUnpublishedPhoto(graph, pageId, url)).id);
    await ctx.beforePublish();
    return { providerPostId: (await createFeedPost(graph, pageId, text, photoIds)).id };
  },

  async reconcile(ctx) {
    const items = await listFeed(ctx.graph, ctx.platformAccountId, new Date(ctx.since.getTime() - MATCH_SKEW_MS));
    const found = findOwnItem(feedItemsToPlatformItems(items), ctx.text, ctx.since, await ctx.knownPostIds());
    return found ? { providerPostId: found.id } : null;
  },
};
