/**
 * photoplatform adapter: container (`/{ig-user}/media`) -> status polling until FINISHED ->
 * `/{ig-user}/media_publish`. The container id is persisted before the next step, so a retry resumes the
 * same container; a container already PUBLISHED is never published again (its media is looked up
 * instead). The 24-hour publishing quota is read from `content_publishing_limit` before publishing.
 *
 * @example
 * const result = await photoPlatform.publish(ctx); // { providerPostId: "17890000000000001" }
 */
import { PlatformError } from "../errors";
import { findOwnItem } from "../match";
import type { PlatformAdapter, PublishContext, PublishResult } from "../types";
import { createContainer, listMedia, publishContainer, readContainer, readPublishingLimit } from "./client";
import { containerStatus, mediaItemsToPlatformItems, quotaExhausted } from "./transform";

export const photoPlatform: PlatformAdapter = {
  async publish(ctx) {
    const { graph, platformAccountId: igUserId } = ctx;
    if (ctx.imageUrls.length !== 1) throw new PlatformError("invalid", "photoplatform posts need exactly one image.");
    let containerId = ctx.containerId;

    if (containerId) {
      const status = containerStatus(await readContainer(graph, containerId));
      if (status === "PUBLISHED") return locateMedia(ctx);
      if (status === "EXPIRED" || status === "ERROR" || status === "UNKNOWN") {
        // A dead container is replaced by a fresh one; nothing was published from it.
        containerId = null;
        await ctx.saveContainer(null);
      }
    }
    if (!containerId) {
      containerId = (await createContainer(graph, igUserId, ctx.imageUrls[0]!, ctx.text)).id;
      await ctx.saveContainer(containerId);
    }
    const ready = await waitUntilFinished(ctx, containerId);
    if (ready === "PUBLISHED") return locateMedia(ctx);

    const exhausted = quotaExhausted(await readPublishingLimit(graph, igUserId));
    if (exhausted) {
      throw new PlatformError(
        "rate_limit",
        `The account has used its publishing quota (${exhausted.usage} of ${exhausted.total} per ${Math.round(exhausted.durationS / 3600)} h).`,
        {
          retryAfterMs: 60 * 60_000,
        },
      );
    }
    await ctx.beforePublish();
    return { providerPostId: (await publishContainer(graph, igUserId, containerId)).id };
  },

  async reconcile(ctx) {
    // Only media_publish makes a post visible, and it needs a container we persisted first.
    if (!ctx.containerId) return null;
    const status = containerStatus(await readContainer(ctx.graph, ctx.containerId));
    return status === "PUBLISHED" ? locateMedia(ctx) : null;
  },
};

async function waitUntilFinished(ctx: PublishContext, containerId: string): Promise<"FINISHED" | "PUBLISHED"> {
  const deadline = ctx.now().getTime() + ctx.poll.maxWaitMs;
  for (;;) {
    const state = await readContainer(ctx.graph, containerId);
    const status = containerStatus(state);
    if (status === "FINISHED" || status === "PUBLISHED") return status;
    if (status === "ERROR")
      throw new PlatformError("invalid", `The platform could not process the image (container status ERROR${state.status ? `: ${state.status}` : ""}).`);
    if (status === "EXPIRED") {
      await ctx.saveContainer(null);
      throw new PlatformError("transient", "The media container expired before it was published; a new one is made on the next attempt.");
    }
    // Kept for the next attempt, which resumes polling this same container.
    if (ctx.now().getTime() + ctx.poll.intervalMs > deadline) throw new PlatformError("transient", "The media container is still being processed.");
    await ctx.sleep(ctx.poll.intervalMs);
  }
}

/** The container says PUBLISHED: find its media in the account's recent media; never publish again. */
async function locateMedia(ctx: PublishContext): Promise<PublishResult> {
  const items = mediaItemsToPlatformItems(await listMedia(ctx.graph, ctx.platformAccountId));
  const found = findOwnItem(items, ctx.text, ctx.since, await ctx.knownPostIds());
  return { providerPostId: found?.id ?? null };
}
