/**
 * How the background loops stop: the tick under way finishes first (the work its claims start is waited for
 * too), then the work in flight, within `timeoutMs`. Resolves with how many were still in flight.
 *
 * @example
 * const left = await waitForInFlight(running, inflight, 20_000);
 */
export async function waitForInFlight(running: Promise<void> | null, inflight: ReadonlyMap<unknown, Promise<void>>, timeoutMs: number): Promise<number> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
    timer.unref?.();
  });
  const settled = Promise.allSettled([running]).then(() => Promise.allSettled([...inflight.values()]));
  await Promise.race([settled, deadline]);
  clearTimeout(timer);
  return inflight.size;
}
