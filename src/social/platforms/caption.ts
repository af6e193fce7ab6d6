/**
 * The text a platform receives: the caption, then the hashtags as `#tag` words after a blank line. Neither
 * platform has a hashtag field, so hashtags travel inside the text.
 *
 * Must produce exactly what src/social/caption.ts (the API's validation) measures; once that file is
 * committed this one re-exports it.
 *
 * @example
 * composeCaption("New mugs", ["coffee", "#shop"]); // "New mugs\n\n#coffee #shop"
 */

export function composeCaption(caption: string, hashtags: readonly string[]): string {
  if (hashtags.length === 0) return caption;
  const tags = hashtags.map((t) => `#${t.startsWith("#") ? t.slice(1) : t}`).join(" ");
  return caption.trim() === "" ? tags : `${caption}\n\n${tags}`;
}

/** The hashtags a platform would index in a text: `#` followed by letters, digits or underscores. */
export function parseHashtags(text: string): string[] {
  return [...text.matchAll(/(?:^|[^\p{L}\p{N}_&])#([\p{L}\p{N}_]+)/gu)].map((m) => m[1]!);
}
