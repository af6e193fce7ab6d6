/**
 * The sandbox fetches post images the way Meta's crawler does: a plain GET of the URL at publish time.
 * A URL that does not answer 200 with image bytes is refused with the platform's own error.
 */
import { imageFormat } from "../../images/sniff";

const TIMEOUT_MS = 10_000;

export async function imageFetchable(url: string): Promise<boolean> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return false;
  try {
    const res = await fetch(parsed, { signal: AbortSignal.timeout(TIMEOUT_MS), redirect: "follow" });
    if (!res.ok) {
      await res.body?.cancel();
      return false;
    }
    const bytes = new Uint8Array(await res.arrayBuffer());
    return imageFormat(bytes) !== null;
  } catch {
    return false;
  }
}
