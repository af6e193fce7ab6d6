/**
 * Rule 9: video, carousels, stories, reels and direct messages are unsupported. Callers coming from other
 * social APIs send these as a `type`/`kind`/`mediaType` field, a `video` field, or a video file as an image;
 * each gets a 422 that says the kind is unsupported instead of a generic "unknown field".
 * Runs on the raw JSON, before (and whatever the outcome of) schema validation.
 *
 * @example
 * assertSupportedKind({ accountIds: "x", type: "reel" }); // throws 422: "reel posts are not supported ..."
 */
import { ApiError } from "../http/errors";

const KIND_FIELDS = new Set(["type", "kind", "mediatype", "media_type", "posttype", "post_type", "format", "contenttype", "content_type"]);

const KIND_NAMES: Array<[RegExp, string]> = [
  [/^(videos?|movie|clip|live|live_?video|shorts?)$/i, "video"],
  [/^(carousel|carousel_album|album|multi_?image|gallery)$/i, "carousel"],
  [/^(stor(y|ies))$/i, "story"],
  [/^(reels?)$/i, "reel"],
  [/^(messages?|direct|direct_?messages?|dms?|chat)$/i, "direct message"],
];

const KIND_KEYS: Array<[RegExp, string]> = [
  [/^(videos?|video_?urls?|video_?ids?)$/i, "video"],
  [/^(carousel|carousel_?items|children)$/i, "carousel"],
  [/^(stor(y|ies))$/i, "story"],
  [/^(reels?)$/i, "reel"],
  [/^(messages?|direct_?messages?|recipients?|recipient_?ids?)$/i, "direct message"],
];

const VIDEO_EXTENSION = /\.(mp4|m4v|mov|qt|webm|mkv|avi|wmv|flv|mpe?g|3gp|m3u8|mpd|ts)$/i;

const WHAT_IS_SUPPORTED = "area C publishes feed posts: a caption, hashtags and up to ten images (photoplatform: exactly one)";

function unsupported(kind: string, path: string): ApiError {
  const label = kind === "direct message" ? "Direct messages are" : `${kind[0]!.toUpperCase()}${kind.slice(1)} posts are`;
  const message = `${label} not supported: ${WHAT_IS_SUPPORTED}.`;
  return new ApiError("VALIDATION_FAILED", message, { details: [{ path, message: `${kind} is not supported` }] });
}

function kindOfValue(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const v = value.trim();
  if (/^video\//i.test(v)) return "video";
  for (const [pattern, kind] of KIND_NAMES) if (pattern.test(v)) return kind;
  return null;
}

/** A URL or data URI that names a video rather than an image. */
function videoSource(value: unknown): boolean {
  if (typeof value !== "string") return false;
  if (/^data:video\//i.test(value)) return true;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return false;
  try {
    return VIDEO_EXTENSION.test(new URL(value).pathname);
  } catch {
    return false;
  }
}

function checkObject(obj: Record<string, unknown>, prefix: string): void {
  for (const [key, value] of Object.entries(obj)) {
    const path = prefix ? `${prefix}.${key}` : key;
    for (const [pattern, kind] of KIND_KEYS) if (pattern.test(key)) throw unsupported(kind, path);
    if (KIND_FIELDS.has(key.toLowerCase()) || key === "mimeType") {
      const kind = kindOfValue(value);
      if (kind) throw unsupported(kind, path);
    }
    if ((key === "url" || key === "base64") && videoSource(value)) throw unsupported("video", path);
  }
}

/** Throws 422 when a post (or media) body asks for a kind this API does not publish. */
export function assertSupportedKind(body: unknown): void {
  if (typeof body === "string") {
    if (videoSource(body)) throw unsupported("video", "(body)");
    return;
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return;
  const record = body as Record<string, unknown>;
  checkObject(record, "");
  const images = record.images ?? record.media ?? record.mediaUrls;
  if (!Array.isArray(images)) return;
  images.forEach((item, i) => {
    const path = `images.${i}`;
    if (videoSource(item)) throw unsupported("video", path);
    if (typeof item === "object" && item !== null && !Array.isArray(item)) checkObject(item as Record<string, unknown>, path);
  });
}
