/**
 * Loopback servers for image-fetch tests.
 *
 * - `startImageServer()`: an HTTPS server on 127.0.0.1 (random port) with a throwaway self-signed certificate
 *   made by openssl at test time. Reach it through the fetchers' test allowance:
 *   `createNodeFetcher({ testAllow: { origins: [server.origin], ca: server.ca } })`.
 * - `startHitCounter()`: TCP listeners that count every connection, to prove refused URLs never reach a
 *   private address.
 *
 * @example
 * const server = await startImageServer();
 * server.route("/logo.png", (_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(pngBytes));
 * const fetcher = createNodeFetcher({ testAllow: { origins: [server.origin], ca: server.ca } });
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, fetch as undiciFetch } from "undici";

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => void;

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

export interface ImageServer {
  /** e.g. "https://127.0.0.1:41234" */
  origin: string;
  /** PEM certificate to trust (self-signed, valid for 127.0.0.1, ::1 and localhost). */
  ca: string;
  port: number;
  requests: RecordedRequest[];
  url(path: string): string;
  route(path: string, handler: RouteHandler): void;
  /** A fetch (WHATWG signature) that trusts `ca`; hand it to createEdgeFetcher({ fetch }). */
  fetch: (url: string, init: RequestInit) => Promise<Response>;
  close(): Promise<void>;
}

let cached: { key: string; cert: string } | undefined;

/** A fresh self-signed EC certificate for 127.0.0.1/::1/localhost, made once per process, never committed. */
export function selfSignedCert(): { key: string; cert: string } {
  if (cached) return cached;
  const dir = mkdtempSync(join(tmpdir(), "image-server-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
        "-days",
        "2",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost",
      ],
      { stdio: "pipe" },
    );
    cached = { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") };
    return cached;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Built-in routes: `/status/<code>`, `/redirect?to=<url>&status=302`, `/html`, `/big?bytes=<n>` (with
 * Content-Length), `/stream?bytes=<n>` (chunked, no length), `/slow` (one byte a second, never ends).
 */
export async function startImageServer(options: { host?: string } = {}): Promise<ImageServer> {
  const { key, cert } = selfSignedCert();
  const routes = new Map<string, RouteHandler>();
  const requests: RecordedRequest[] = [];
  const openSockets = new Set<Socket>();
  const timers = new Set<ReturnType<typeof setInterval>>();

  const server: HttpsServer = createHttpsServer({ key, cert }, (req, res) => {
    const url = new URL(req.url ?? "/", "https://test.invalid");
    requests.push({ method: req.method ?? "GET", path: url.pathname + url.search, headers: req.headers });
    const custom = routes.get(url.pathname);
    if (custom) return custom(req, res, url);
    builtIn(url, res, timers);
  });
  server.on("connection", (socket: Socket) => {
    openSockets.add(socket);
    socket.on("close", () => openSockets.delete(socket));
  });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as { port: number }).port;
  const origin = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const agent = new Agent({ connect: { ca: cert } });

  return {
    origin,
    ca: cert,
    port,
    requests,
    url: (path) => `${origin}${path}`,
    route: (path, handler) => void routes.set(path, handler),
    fetch: async (url, init) => (await undiciFetch(url, { ...(init as object), dispatcher: agent })) as unknown as Response,
    close: async () => {
      for (const t of timers) clearInterval(t);
      for (const s of openSockets) s.destroy();
      await agent.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function builtIn(url: URL, res: ServerResponse, timers: Set<ReturnType<typeof setInterval>>): void {
  const path = url.pathname;
  if (path.startsWith("/status/")) {
    res.writeHead(Number(path.slice("/status/".length)) || 500, { "content-type": "text/plain" }).end("status");
  } else if (path === "/redirect") {
    res.writeHead(Number(url.searchParams.get("status") ?? 302), { location: url.searchParams.get("to") ?? "/" }).end();
  } else if (path === "/html") {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><p>not an image</p>");
  } else if (path === "/big") {
    const bytes = Number(url.searchParams.get("bytes") ?? 11 * 1024 * 1024);
    res.writeHead(200, { "content-type": "image/png", "content-length": String(bytes) });
    streamZeros(res, bytes);
  } else if (path === "/stream") {
    const bytes = Number(url.searchParams.get("bytes") ?? 11 * 1024 * 1024);
    res.writeHead(200, { "content-type": "image/jpeg" }); // no length: chunked
    streamZeros(res, bytes);
  } else if (path === "/slow") {
    res.writeHead(200, { "content-type": "image/png" });
    res.write(Buffer.from([0x89]));
    const timer = setInterval(() => res.write(Buffer.from([0])), 1000);
    timers.add(timer);
    res.on("close", () => {
      clearInterval(timer);
      timers.delete(timer);
    });
  } else {
    res.writeHead(404, { "content-type": "text/plain" }).end("not found");
  }
}

/** Writes zeros in 64 KiB chunks, respecting backpressure, and stops when the client goes away. */
function streamZeros(res: ServerResponse, total: number): void {
  const chunk = Buffer.alloc(64 * 1024);
  let sent = 0;
  const pump = (): void => {
    while (sent < total && !res.destroyed) {
      const n = Math.min(chunk.length, total - sent);
      sent += n;
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once("drain", pump);
    }
    if (!res.destroyed) res.end();
  };
  res.on("error", () => undefined);
  pump();
}

export interface HitCounter {
  /** Connections accepted so far, over every listener. */
  hits(): number;
  /** Ports actually bound, e.g. [{host:"127.0.0.1", port: 443}, ...]. */
  bound: Array<{ host: string; port: number }>;
  close(): Promise<void>;
}

/**
 * Listens on each requested loopback host:port it can bind (443 and 80 need privileges and may be taken; those
 * are skipped) plus one random port per host, and counts connections. A refused URL must leave `hits()` at 0.
 */
export async function startHitCounter(targets: Array<{ host: string; port: number }> = []): Promise<HitCounter> {
  let count = 0;
  const servers: TcpServer[] = [];
  const bound: Array<{ host: string; port: number }> = [];
  const hosts = [...new Set(targets.map((t) => t.host).concat("127.0.0.1"))];
  const wanted = [...targets, ...hosts.map((host) => ({ host, port: 0 }))];
  for (const { host, port } of wanted) {
    const server = createTcpServer((socket) => {
      count++;
      socket.destroy();
    });
    const ok = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, host, () => resolve(true));
    });
    if (!ok) continue;
    servers.push(server);
    bound.push({ host, port: (server.address() as { port: number }).port });
  }
  return {
    hits: () => count,
    bound,
    close: async () => {
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}
