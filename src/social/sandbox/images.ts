/**
 * The sandbox fetches post images the way Meta's crawler does: a plain GET of the URL at publish time.
 * A URL that does not answer 200 with image bytes is refused with the platform's own error.
 */
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
    return looksLikeImage(bytes);
  } catch {
    return false;
  }
}

function looksLikeImage(b: Uint8Array): boolean {
  const jpeg = b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff;
  const png = b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47;
  const webp = b[0] === 0x52 && b[1] === 0x49 && b[2] === 0x46 && b[3] === 0x46 && b[8] === 0x57 && b[9] === 0x45;
  return jpeg || png || webp;
}
