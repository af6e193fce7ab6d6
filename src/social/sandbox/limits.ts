/**
 * The sandbox's per-client budget: its OAuth dialog, token exchange and Graph routes take no API key, so they
 * are limited per client address instead (bucket `sandbox`, SANDBOX_REQUESTS_PER_MINUTE, the same sliding
 * window as the API's buckets). Over it a Graph route answers Graph's rate-limit error (code 4) and the dialog a
 * plain page, both 429 with `Retry-After`.
 *
 * The client is `clientAddress` (src/http/rate-limit.ts): the socket's peer on Node (a Node request's own socket always wins,
 * so a header cannot be forged there), Cloudflare's `CF-Connecting-IP` on Workers, IPv6 by /64. A request
 * with neither a socket nor that header is this process calling itself (the delivery's in-process Graph calls
 * on Node, functions/node/sandbox-fetch.ts), which is not limited.
 *
 * @example
 * graph.use("*", limitPerClient((c) => graphError(c, GRAPH_ERRORS.clientRateLimit)));
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../../http/env";
import { clientAddress, draftRateLimitHeaders, takeBudget } from "../../http/rate-limit";

/** Requests one client may make to the sandbox's unauthenticated routes in a minute. */
export const SANDBOX_REQUESTS_PER_MINUTE = 600;
const BUCKET = "sandbox";

/** The client as the limit counts it, or null for a call from this process itself. */
export function sandboxClient(c: Context<AppEnv>): string | null {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  if (!incoming && c.req.header("cf-connecting-ip") === undefined) return null;
  return clientAddress(c);
}

/** Counts the request against its client's budget; over it, `refuse` answers (with the rate-limit headers added). */
export function limitPerClient(refuse: (c: Context<AppEnv>) => Response): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const client = sandboxClient(c);
    if (client === null) return next();
    const budget = await takeBudget(c.get("services"), BUCKET, client, SANDBOX_REQUESTS_PER_MINUTE);
    if (!budget) return next();
    const headers = draftRateLimitHeaders(BUCKET, SANDBOX_REQUESTS_PER_MINUTE, budget);
    if (!budget.success) {
      const res = refuse(c);
      for (const [name, value] of Object.entries({ ...headers, "Retry-After": String(budget.seconds) })) res.headers.set(name, value);
      return res;
    }
    for (const [name, value] of Object.entries(headers)) c.header(name, value);
    await next();
  };
}
