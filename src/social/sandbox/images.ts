/**
 * The sandbox checks post images the way Meta's crawler does, at publish time: a URL that does not give image
 * bytes is refused with the platform's own error. The images the delivery sends are this service's own
 * stored objects (their public URLs, `storage.urlFor`), which are read from storage directly: no request, so
 * the sandbox never calls this service's own address, on Node or at a bucket. Any other URL goes through the
 * service's safe fetcher (`services.fetcher`): https on 443 only, public addresses only however the host is
 * spelled, no redirects, at most SANDBOX_IMAGE_MAX_BYTES, with a timeout.
 */
import { SOCIAL_IMAGE } from "../../images/normalise";
import { imageFormat } from "../../images/sniff";
import type { Services, Storage } from "../../services";

/** The largest image the sandbox takes: what the service stores for a post (normalised media). */
export const SANDBOX_IMAGE_MAX_BYTES = SOCIAL_IMAGE.maxBytes;
const TIMEOUT_MS = 10_000;

/** True when `url` gives image bytes the platform would take. */
export async function imageFetchable(services: Pick<Services, "storage" | "fetcher">, url: string): Promise<boolean> {
  const key = ownKey(services.storage, url);
  if (key === "") return false;
  let bytes: Uint8Array | null;
  if (key !== null) {
    bytes = (await services.storage.get(key).catch(() => null))?.bytes ?? null;
  } else {
    bytes = await services.fetcher.fetchBytes(url, { maxBytes: SANDBOX_IMAGE_MAX_BYTES, timeoutMs: TIMEOUT_MS }).then(
      (fetched) => fetched.bytes,
      () => null,
    );
  }
  return bytes !== null && bytes.length <= SANDBOX_IMAGE_MAX_BYTES && imageFormat(bytes) !== null;
}

/**
 * The storage key whose public URL is exactly `url`; "" for a URL under the storage's public base that names
 * no key (it is never fetched either); null for a URL elsewhere.
 */
function ownKey(storage: Storage, url: string): string | null {
  let base: string;
  try {
    base = storage.urlFor("k").slice(0, -1);
  } catch {
    return null;
  }
  if (!url.startsWith(base)) return null;
  const rest = url.slice(base.length);
  let decoded = rest;
  try {
    decoded = decodeURIComponent(rest);
  } catch {
    // Not percent-encoding: only the raw form can match.
  }
  for (const key of new Set([rest, decoded])) {
    if (key === "" || key.split("/").some((segment) => segment === "." || segment === "..")) continue;
    try {
      if (storage.urlFor(key) === url) return key;
    } catch {
      // A key the storage would refuse to name.
    }
  }
  return "";
}
