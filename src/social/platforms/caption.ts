/**
 * The text a platform receives. Neither platform has a hashtag field, so hashtags travel inside the text;
 * the composition is the API's own (src/social/caption.ts), so the length validated at creation is the
 * length published.
 *
 * @example
 * composeCaption("New mugs", ["coffee"]); // "New mugs\n\n#coffee"
 */
export { composeCaption } from "../caption";

/** The hashtags a platform would index in a text: `#` followed by letters, digits or underscores. */
export function parseHashtags(text: string): string[] {
  return [...text.matchAll(/(?:^|[^\p{L}\p{N}_&])#([\p{L}\p{N}_]+)/gu)].map((m) => m[1]!);
}
