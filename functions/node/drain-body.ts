/**
 * Honest early replies on Node. When the app answers before reading the request body (401, 404,
 * 415, 429, a 413 from the declared length), Node's server and @hono/node-server tear the keep-alive socket
 * down while the client is still sending, and the client sees a socket error instead of the reply. This
 * wrapper around `app.fetch` settles the body before the reply goes out: a body nobody touched is read and
 * discarded (up to `maxBytes`, within `timeoutMs`), so the connection stays usable; when that is not
 * possible (too large, too slow, or a body the app stopped reading half-way) the reply says
 * `Connection: close`, the socket is ended only after the reply is written, and the rest of the body is
 * still swallowed for a moment so the client reads the reply rather than a reset.
 *
 * @example
 * serve({ fetch: drainUnreadBody(app.fetch, { maxBytes: MAX_BODY_BYTES }), port });
 */
import { IncomingMessage } from "node:http";
import type { Http2Bindings, HttpBindings } from "@hono/node-server";

type FetchLike = (req: Request, env: HttpBindings | Http2Bindings) => Response | Promise<Response>;

export interface DrainOptions {
  /** Largest body read and thrown away to keep a connection (the API's body limit). */
  maxBytes: number;
  /** Longest wait for a body nobody reads; after it the reply closes the connection. */
  timeoutMs?: number;
}

export function drainUnreadBody(fetch: FetchLike, options: DrainOptions): FetchLike {
  const timeoutMs = options.timeoutMs ?? 10_000;
  return async (req, env) => {
    const res = await fetch(req, env);
    const incoming = incomingOf(env);
    // HTTP/2 streams end on their own; only HTTP/1.1 connections are at stake.
    if (!incoming || incoming.readableEnded || incoming.complete || !hasBody(incoming)) return res;
    const declared = Number(incoming.headers["content-length"]);
    if (!(declared > options.maxBytes)) {
      // Untouched: read the socket directly. Opened but not read (reading `.body` starts the stream, as the
      // body limit does to count a chunked body): read it through the request's own stream. Locked: the app
      // gave up on it.
      if (incoming.readableFlowing === null && (await discard(incoming, options.maxBytes, timeoutMs))) return res;
      if (incoming.readableFlowing !== null && req.body && !req.body.locked && (await discardStream(req.body, options.maxBytes, timeoutMs))) return res;
    }
    swallow(incoming);
    return withConnectionClose(res);
  };
}

/**
 * A request's body as Node's own chunks (`configureBodySource` in src/http/inline-images.ts), when the
 * request came through @hono/node-server over HTTP/1.1, nobody has started reading its body, and its length
 * is declared (the API's body limit has then checked that length, and Node's parser ends the body there);
 * undefined otherwise, and the body is read through the request's web stream as before.
 *
 * @example
 * configureBodySource(untouchedBody);
 */
export function untouchedBody(env: unknown): AsyncIterable<Uint8Array> | undefined {
  const incoming = incomingOf(env);
  if (!incoming || incoming.readableFlowing !== null || incoming.readableDidRead) return undefined;
  if (incoming.headers["transfer-encoding"] !== undefined || incoming.headers["content-length"] === undefined) return undefined;
  return incoming;
}

/**
 * Whether `err` is the error this request's connection was closed with while its body was read (Node's
 * "aborted"), for `configureClientHungUp` in src/http/errors.ts.
 *
 * @example
 * configureClientHungUp(hungUp);
 */
export function hungUp(env: unknown, err: unknown): boolean {
  return err instanceof Error && incomingOf(env)?.errored === err;
}

/** The HTTP/1.1 request @hono/node-server passes in `env`; undefined for HTTP/2 or an in-process call. */
function incomingOf(env: unknown): IncomingMessage | undefined {
  const incoming = (env as Partial<HttpBindings> | undefined)?.incoming;
  return incoming instanceof IncomingMessage ? incoming : undefined;
}

function hasBody(incoming: IncomingMessage): boolean {
  return incoming.headers["transfer-encoding"] !== undefined || Number(incoming.headers["content-length"] ?? 0) > 0;
}

/** Reads the body to its end; false when it is larger than `maxBytes` or not over within `timeoutMs`. */
function discard(incoming: IncomingMessage, maxBytes: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let bytes = 0;
    const done = (ok: boolean) => {
      clearTimeout(timer);
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onError);
      incoming.off("close", onError);
      resolve(ok);
    };
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > maxBytes) done(false);
    };
    const onEnd = () => done(true);
    const onError = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    incoming.on("data", onData);
    incoming.once("end", onEnd);
    incoming.once("error", onError);
    incoming.once("close", onError);
    incoming.resume();
  });
}

/** The same through a web stream nobody has locked. */
async function discardStream(body: ReadableStream<Uint8Array>, maxBytes: number, timeoutMs: number): Promise<boolean> {
  const reader = body.getReader();
  let bytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
  const read = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return true;
      bytes += value.length;
      if (bytes > maxBytes) return false;
    }
  })().catch(() => false);
  try {
    return await Promise.race([read, timeout]);
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}

/** How long a closing connection keeps reading what the client still sends after the reply (nginx's lingering close). */
const LINGER_MS = 5_000;

/**
 * Keeps reading (and dropping) what still arrives, and makes the close a lingering one: once the reply is
 * written the socket only half-closes (FIN), and is destroyed when the client has finished sending or after
 * LINGER_MS. Node would otherwise destroy it at once, and unread data would make the kernel answer with a
 * reset that can reach the client before it has read the reply (EPIPE/ECONNRESET instead of the 413).
 */
function swallow(incoming: IncomingMessage): void {
  if (incoming.destroyed) return;
  incoming.on("data", () => {});
  incoming.on("error", () => {});
  incoming.resume();
  const socket = incoming.socket as (typeof incoming.socket & { destroySoon?: () => void }) | null;
  if (!socket || typeof socket.destroySoon !== "function") return;
  socket.destroySoon = () => {
    socket.on("data", () => {});
    socket.resume();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once("end", () => {
      clearTimeout(timer);
      socket.destroy();
    });
    socket.once("close", () => clearTimeout(timer));
    if (socket.writable) socket.end();
  };
}

function withConnectionClose(res: Response): Response {
  const headers = new Headers(res.headers);
  headers.set("Connection", "close");
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}
