/**
 * A webhook receiver for tests: a node:http server on 127.0.0.1 that records every request it gets (headers,
 * raw body, arrival time) and answers what `respond` says (200 by default), and a verifier built on the
 * `standardwebhooks` package, the library receivers use.
 *
 * @example
 * const receiver = await startReceiver((n) => (n <= 3 ? 500 : 200));
 * await waitForMessages(receiver, 4);
 * verified(receiver.received[0], secret); // the parsed message, or throws
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import { Webhook } from "standardwebhooks";

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** Epoch ms when the whole body had arrived. */
  at: number;
  path: string;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** Wait this long before answering. */
  delayMs?: number;
  /** The answer's body (none by default). */
  body?: string;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Messages of one type, by their parsed `type`. */
  ofType(type: string): Received[];
  close(): Promise<void>;
}

/** `respond(n, request)`: the answer to the n-th request (1-based). */
export async function startReceiver(respond: (n: number, request: Received) => number | Answer = () => 200, path = "/hooks"): Promise<Receiver> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const request = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now(), path: req.url ?? "" };
      received.push(request);
      const answer = respond(received.length, request);
      const { status, headers = {}, delayMs = 0, body } = typeof answer === "number" ? { status: answer } : answer;
      setTimeout(() => res.writeHead(status, headers).end(body), delayMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    received,
    ofType: (type) => received.filter((r) => (JSON.parse(r.body) as { type: string }).type === type),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The message, verified by the `standardwebhooks` package with `secret`; throws when the signature does not hold. */
export function verified(request: Received, secret: string): { type: string; timestamp: string; data: Record<string, unknown> } {
  const headers = {
    "webhook-id": String(request.headers["webhook-id"]),
    "webhook-timestamp": String(request.headers["webhook-timestamp"]),
    "webhook-signature": String(request.headers["webhook-signature"]),
  };
  return new Webhook(secret).verify(request.body, headers) as { type: string; timestamp: string; data: Record<string, unknown> };
}

export async function waitUntil<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
