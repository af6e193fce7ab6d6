/**
 * The request's inline images, decoded while its body streamed in (src/http/inline-images.ts reads them):
 * the images layer holds the type so that image loading (load.ts) and the ports (src/services.ts) name it
 * without importing the HTTP layer.
 */
import { ApiError } from "../lib/errors";
import { sha256Hex } from "../lib/encoding";

/** The request's inline images by placeholder: the bytes, or the error that decoding them gave. */
export class InlineImages {
  private readonly entries = new Map<string, Uint8Array | ApiError>();
  private readonly digests = new Map<string, Promise<string>>();

  /** @internal */
  add(placeholder: string, result: Uint8Array | ApiError): void {
    this.entries.set(placeholder, result);
  }

  /**
   * The bytes a placeholder stands for, throwing its error; undefined for any other string. A placeholder
   * keeps the spaces its string started with (for the validators), which its callers may have trimmed.
   */
  bytes(value: string): Uint8Array | undefined {
    const result = this.entries.get(value.trimStart());
    if (result instanceof ApiError) throw result;
    return result;
  }

  /**
   * What a placeholder stands for in a request fingerprint: the digest of its image's bytes, or its error
   * (the same text gives the same either way); undefined for any other string.
   */
  async digest(value: string): Promise<string | undefined> {
    const key = value.trimStart();
    const result = this.entries.get(key);
    if (result === undefined) return undefined;
    if (result instanceof ApiError) return `image-error:${result.code}:${result.message}`;
    let digest = this.digests.get(key);
    if (!digest) this.digests.set(key, (digest = sha256Hex(result).then((hex) => `image-sha256:${hex}`)));
    return digest;
  }

  get size(): number {
    return this.entries.size;
  }
}
