/**
 * Recognising our own post on a platform after an ambiguous attempt. No hidden marker is put in captions
 * (users see every character), so a match is: the same text, created no earlier than the delivery (minus
 * clock skew), and not already recorded by another delivery of the same account, so two deliveries with
 * identical text each find their own item. The earliest candidate wins: it is the one the lost attempt made.
 */

/** Clock skew tolerated between us and the platform. */
export const MATCH_SKEW_MS = 5 * 60_000;

export interface PlatformItem {
  id: string;
  text: string | undefined;
  /** Graph timestamp such as 2026-05-01T10:00:00+0000. */
  time: string | undefined;
}

/** Graph timestamps carry the offset without a colon; Date.parse wants one. */
export function parseGraphTime(value: string | undefined): number {
  if (!value) return Number.NaN;
  return Date.parse(value.replace(/([+-]\d{2})(\d{2})$/, "$1:$2"));
}

export function sameText(a: string | undefined, b: string): boolean {
  const norm = (s: string) => s.replace(/\r\n?/g, "\n").trim();
  return a !== undefined && norm(a) === norm(b);
}

export function findOwnItem(items: readonly PlatformItem[], text: string, since: Date, known: ReadonlySet<string>): PlatformItem | null {
  const floor = since.getTime() - MATCH_SKEW_MS;
  const candidates = items.filter((item) => {
    if (known.has(item.id) || !sameText(item.text, text)) return false;
    const t = parseGraphTime(item.time);
    return Number.isNaN(t) || t >= floor;
  });
  const at = (item: PlatformItem) => parseGraphTime(item.time) || 0;
  return candidates.sort((a, b) => at(a) - at(b))[0] ?? null;
}
