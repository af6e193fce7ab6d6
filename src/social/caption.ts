/**
 * What a post's text looks like on the platform, and the per-platform rules a submission is checked against
 * before anything is fetched or queued. The delivery engine publishes `composeCaption(caption, hashtags)`, so
 * the length checked here is the length that is sent.
 *
 * @example
 * composeCaption("New in", ["summer", "sale"]); // "New in\n\n#summer #sale"
 */
import { CAPABILITIES, type Platform } from "./accounts";

/** Most hashtags photoplatform's publishing API accepts on one post (its error table: 30). */
export const PHOTOPLATFORM_MAX_HASHTAGS = 30;

/** photoplatform's accepted aspect ratios, width / height: 4:5 to 1.91:1. */
export const PHOTOPLATFORM_ASPECT = { min: { w: 4, h: 5 }, max: { w: 191, h: 100 } } as const;

/** Strips one leading '#': hashtags are stored and returned bare, and posted as `#tag`. */
export function bareHashtag(tag: string): string {
  return tag.startsWith("#") ? tag.slice(1) : tag;
}

/**
 * The text as posted: the caption, then (after a blank line, when there is a caption) the hashtags as
 * `#tag` words separated by single spaces.
 */
export function composeCaption(caption: string, hashtags: readonly string[]): string {
  if (hashtags.length === 0) return caption;
  const tags = hashtags.map((t) => `#${bareHashtag(t)}`).join(" ");
  return caption.trim() === "" ? tags : `${caption}\n\n${tags}`;
}

/** Length in Unicode code points (what the platforms count as characters; an emoji is one, not two). */
export function textLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

export interface RuleViolation {
  path: string;
  message: string;
}

/**
 * Checks what a platform accepts: text-only posts, image count, caption length with hashtags, hashtag count.
 * Returns the first problem, or null.
 */
export function checkPlatformRules(
  platform: Platform,
  accountId: string,
  post: { caption: string; hashtags: readonly string[]; imageCount: number },
): RuleViolation | null {
  const caps = CAPABILITIES[platform];
  if (post.imageCount === 0 && !caps.text) {
    return { path: "images", message: `${accountId}: ${platform} posts need exactly ${caps.minImages} image; text-only posts are not accepted` };
  }
  if (post.imageCount > caps.maxImages) {
    const why = platform === "photoplatform" ? "; carousels are not supported" : "";
    return {
      path: "images",
      message: `${accountId}: ${platform} accepts at most ${caps.maxImages} image${caps.maxImages === 1 ? "" : "s"} per post, got ${post.imageCount}${why}`,
    };
  }
  const length = textLength(composeCaption(post.caption, post.hashtags));
  if (length > caps.maxCaptionLength) {
    return {
      path: "caption",
      message: `${accountId}: the caption with its hashtags is ${length} characters; ${platform} accepts at most ${caps.maxCaptionLength}`,
    };
  }
  if (platform === "photoplatform" && post.hashtags.length > PHOTOPLATFORM_MAX_HASHTAGS) {
    return { path: "hashtags", message: `${accountId}: photoplatform accepts at most ${PHOTOPLATFORM_MAX_HASHTAGS} hashtags, got ${post.hashtags.length}` };
  }
  return null;
}

/** Whether width x height lies within photoplatform's 4:5 .. 1.91:1, compared exactly in integers. */
export function photoplatformAspectOk(width: number, height: number): boolean {
  const { min, max } = PHOTOPLATFORM_ASPECT;
  return width * min.h >= height * min.w && width * max.h <= height * max.w;
}
