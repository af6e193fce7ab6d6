/**
 * Shared pieces of the rate-limit tests: staying clear of a minute boundary (both limiters use a sliding
 * window over one-minute buckets, so a burst that straddles the boundary is weighed differently) and a
 * closed loopback port for "Redis is down".
 */
import { createServer, type AddressInfo } from "node:net";

/** Waits for the next minute when fewer than `marginMs` remain in this one. */
export async function clearOfMinuteBoundary(marginMs = 5_000): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (60_000 - intoMinute < marginMs) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 250));
}

/** A loopback port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
