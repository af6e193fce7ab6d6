/**
 * The SafeFetcher for Workers (portable: runs anywhere with a WHATWG fetch). Workers give no DNS API, so the
 * checks are the URL rules (https, port 443, no credentials, IP literals must be public, local names refused)
 * plus `redirect: "manual"` with every 3xx refused; the platform's own egress rules do the rest.
 */
import type { SafeFetcher } from "../../services";
import { createSafeFetcher, type FetchLike, type SafeFetchOptions } from "./fetch-core";

export interface EdgeFetcherOptions extends SafeFetchOptions {
  /** The fetch to send with; default the global one. Tests pass one that trusts their self-signed CA. */
  fetch?: FetchLike;
}

/**
 * @example
 * const fetcher = createEdgeFetcher();
 * const { bytes, contentType } = await fetcher.fetchBytes("https://cdn.example.com/logo.png");
 */
export function createEdgeFetcher(options: EdgeFetcherOptions = {}): SafeFetcher {
  const send: FetchLike = options.fetch ?? ((url, init) => fetch(url, init));
  return createSafeFetcher(send, options);
}
