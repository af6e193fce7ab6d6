/**
 * A body-size limit that does not touch the body when it need not: GET and HEAD pass (they take no body
 * here; on Node a body nobody reads is drained, functions/node/drain-body.ts), a declared Content-Length is
 * judged from its header as Hono's `bodyLimit` does, and only a body of undeclared length (chunked) goes
 * through Hono's limit, which counts it as it streams. Hono's limit reads
 * `c.req.raw.body` first, and on Node that makes @hono/node-server build the full web Request and start its
 * stream: a cost on every request, and an inline-image body could no longer be read from Node's own chunks
 * (src/http/inline-images.ts). The platform sandbox's in-process requests (functions/node/sandbox-fetch.ts)
 * likewise never build one.
 *
 * @example
 * app.use("/api/*", declaredBodyLimit(20 * 1024 * 1024, () => new ApiError("PAYLOAD_TOO_LARGE", "…")));
 */
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";

export function declaredBodyLimit(maxSize: number, tooLarge: () => Error): MiddlewareHandler {
  const countBody = bodyLimit({
    maxSize,
    onError: () => {
      throw tooLarge();
    },
  });
  return (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const declared = c.req.header("content-length");
    if (declared === undefined || c.req.header("transfer-encoding") !== undefined) return countBody(c, next);
    if (Number.parseInt(declared, 10) > maxSize) throw tooLarge();
    return next();
  };
}
