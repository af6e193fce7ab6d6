/**
 * One entry for "an image given by URL or inline": the areas accept either and should not care which.
 */
import { ApiError } from "../lib/errors";
import type { InlineImages } from "./inline-images";
import type { SafeFetcher } from "../services";
import { bytesFromBase64 } from "./base64";
import { MAX_IMAGE_BYTES } from "./sniff";

export interface ImageInput {
  /** Public https URL, fetched through the SafeFetcher. */
  url?: string;
  /** Bare Base64 or a data URI. */
  base64?: string;
  /** Alias of `base64` for callers whose field is named after data URIs. */
  dataUri?: string;
}

/**
 * Loads image bytes from `{url}` (through `fetcher`, capped at 10 MB while streaming) or from
 * `{base64}` / `{dataUri}`. Exactly one must be given. Returns the raw bytes; sniff or decode them next.
 * Inline text that is a placeholder of `inline` (an image the body reader already decoded) gives its bytes.
 *
 * @example
 * const bytes = await loadImageBytes(services.fetcher, { url: body.imageUrl });
 * const info = sniffImage(bytes);
 */
export async function loadImageBytes(fetcher: SafeFetcher, input: ImageInput, inlineImages?: InlineImages): Promise<Uint8Array> {
  const inline = input.base64 ?? input.dataUri;
  const given = [input.url, inline].filter((v) => v !== undefined && v !== "").length;
  if (given !== 1 || (input.base64 !== undefined && input.dataUri !== undefined)) {
    throw new ApiError("VALIDATION_FAILED", "Give the image either as a URL or as Base64, not both and not neither.");
  }
  const bytes = input.url
    ? (await fetcher.fetchBytes(input.url, { maxBytes: MAX_IMAGE_BYTES })).bytes
    : (inlineImages?.bytes(inline!) ?? bytesFromBase64(inline!));
  if (bytes.length > MAX_IMAGE_BYTES) {
    throw new ApiError("PAYLOAD_TOO_LARGE", "The image is larger than 10 MB.");
  }
  if (bytes.length === 0) throw new ApiError("INVALID_IMAGE", "The image is empty (0 bytes).");
  return bytes;
}
