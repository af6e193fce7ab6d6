/**
 * The local stand-in for Neon's two ways in, so the Neon serverless driver reaches a plain Postgres on
 * loopback as it reaches Neon:
 *
 * - WebSockets (`Pool`, `Client`; Neon's documented local setup, the role of github.com/neondatabase/wsproxy):
 *   the driver opens `ws://127.0.0.1:<port>/v1?address=<host>:<port>` and speaks the Postgres wire protocol
 *   in binary frames; the bridge copies bytes both ways.
 * - HTTP queries (`neon()`, drizzle-orm/neon-http): `POST /sql` with the connection string in
 *   `Neon-Connection-String`, a body `{query, params}` or `{queries: [{query, params}, ...]}` (a batch, run in
 *   one transaction with `Neon-Batch-Isolation-Level`, `-Read-Only`, `-Deferrable`), answered as Neon answers
 *   with `Neon-Raw-Text-Output: true` and `Neon-Array-Mode: true`: `{command, rowCount, rows, fields,
 *   rowAsArray}` with every value as PostgreSQL's text (the driver parses by `fields[].dataTypeID`), a batch
 *   as `{results: [...]}`, a database error as 400 `{message, code, detail, ...}`. Each query runs on a
 *   node-postgres pool kept per connection string.
 *
 * Only loopback databases are reached. The bridge counts what crosses it: `roundTrips` is every HTTP query
 * plus every turn of a WebSocket conversation (the client speaking after the server has answered, the
 * connection's set-up included), the figure a request pays in latency to Neon.
 *
 * @example
 * const bridge = await startNeonBridge();
 * const { db, close } = createNeonDb(url, { wsProxy: bridge.wsProxy, webSocketConstructor: WebSocket, fetchEndpoint: bridge.fetchEndpoint });
 * await bridge.close();
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import pg from "pg";
import { WebSocketServer, type RawData } from "ws";

export interface NeonBridge {
  port: number;
  /** Hand to `neonConfig.wsProxy` (or createNeonDb's `wsProxy` option). */
  wsProxy: (host: string, port: number | string) => string;
  /** Hand to `neonConfig.fetchEndpoint` (or createNeonDb's `fetchEndpoint` option): the HTTP query path. */
  fetchEndpoint: string;
  /** WebSocket connections opened so far. */
  connections: number;
  /** HTTP query requests answered so far (a batch counts once). */
  httpQueries: number;
  /** Round trips to the database so far: HTTP queries plus WebSocket turns. */
  roundTrips: number;
  close(): Promise<void>;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);
/** What node-postgres hands back unparsed: the driver parses text by type itself, as with Neon. */
const RAW_TEXT = { getTypeParser: () => (value: string) => value };
const ERROR_FIELDS = [
  "severity",
  "code",
  "detail",
  "hint",
  "position",
  "internalPosition",
  "internalQuery",
  "where",
  "schema",
  "table",
  "column",
  "dataType",
  "constraint",
  "file",
  "line",
  "routine",
] as const;
const ISOLATION: Record<string, string> = {
  ReadUncommitted: "READ UNCOMMITTED",
  ReadCommitted: "READ COMMITTED",
  RepeatableRead: "REPEATABLE READ",
  Serializable: "SERIALIZABLE",
};
const MAX_BODY = 64 * 1024 * 1024;

interface HttpQuery {
  query: string;
  params?: unknown[];
}

export async function startNeonBridge(): Promise<NeonBridge> {
  const state = { connections: 0, httpQueries: 0, wsTurns: 0 };
  const pools = new Map<string, pg.Pool>();

  const poolFor = (connectionString: string): pg.Pool => {
    let pool = pools.get(connectionString);
    if (!pool) {
      pool = new pg.Pool({ connectionString, max: 8, idleTimeoutMillis: 0 });
      pool.on("error", () => {});
      pools.set(connectionString, pool);
    }
    return pool;
  };

  const server = createServer((req, res) => {
    handleHttp(req, res).catch((err: unknown) => send(res, 500, `bridge: ${(err as Error).message}`));
  });

  async function handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://bridge").pathname;
    if (req.method !== "POST" || path !== "/sql") return send(res, 404, "only POST /sql (and WebSockets at /v1) are served");
    const connectionString = String(req.headers["neon-connection-string"] ?? "");
    let target: URL;
    try {
      target = new URL(connectionString);
    } catch {
      return send(res, 400, { message: "Neon-Connection-String is not a valid URL" });
    }
    if (!LOOPBACK.has(target.hostname)) return send(res, 400, { message: "only loopback Postgres addresses are bridged" });
    let body: { query?: string; params?: unknown[]; queries?: HttpQuery[] };
    try {
      body = JSON.parse(await readBody(req)) as typeof body;
    } catch {
      return send(res, 400, { message: "the body is not JSON" });
    }
    state.httpQueries += 1;
    const client = await poolFor(withoutNeonParameters(target)).connect();
    try {
      if (Array.isArray(body.queries)) {
        const results = await batch(client, body.queries, req);
        return send(res, 200, { results });
      }
      if (typeof body.query !== "string") return send(res, 400, { message: "the body has neither query nor queries" });
      return send(res, 200, await run(client, { query: body.query, params: body.params }));
    } catch (err) {
      if (err instanceof pg.DatabaseError) return send(res, 400, databaseError(err));
      throw err;
    } finally {
      client.release();
    }
  }

  const wss = new WebSocketServer({ server });
  wss.on("connection", (ws, req) => {
    const address = new URL(req.url ?? "/", "http://bridge").searchParams.get("address") ?? "";
    const split = address.lastIndexOf(":");
    const host = address.slice(0, split);
    const port = Number(address.slice(split + 1));
    if (!LOOPBACK.has(host) || !Number.isInteger(port) || port < 1 || port > 65535) {
      ws.close(1008, "only loopback Postgres addresses are bridged");
      return;
    }
    state.connections += 1;
    // A turn begins when the client speaks while it is not already speaking (the first message included).
    let clientSpeaking = false;
    const socket = connect({ host: host.replace(/^\[|\]$/g, ""), port });
    socket.setNoDelay(true);
    socket.on("data", (chunk) => {
      clientSpeaking = false;
      ws.send(chunk);
    });
    socket.on("error", () => ws.close(1011, "database connection failed"));
    socket.on("close", () => ws.close());
    ws.on("message", (data: RawData) => {
      if (!clientSpeaking) {
        clientSpeaking = true;
        state.wsTurns += 1;
      }
      socket.write(toBuffer(data));
    });
    ws.on("close", () => socket.destroy());
    ws.on("error", () => socket.destroy());
  });

  // Idle keep-alive connections stay open as a pooled proxy's do: Node's 5 s default closes one just as
  // workerd may send the next query on it, and the driver does not retry a query it sent.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    wsProxy: (host, pgPort) => `127.0.0.1:${port}/v1?address=${host}:${pgPort}`,
    fetchEndpoint: `http://127.0.0.1:${port}/sql`,
    get connections() {
      return state.connections;
    },
    get httpQueries() {
      return state.httpQueries;
    },
    get roundTrips() {
      return state.httpQueries + state.wsTurns;
    },
    async close() {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all([...pools.values()].map((pool) => pool.end().catch(() => {})));
    },
  };
}

async function run(client: pg.PoolClient, q: HttpQuery) {
  const result = await client.query({ text: q.query, values: q.params ?? [], rowMode: "array", types: RAW_TEXT });
  return {
    command: result.command,
    rowCount: result.rowCount,
    rows: result.rows,
    fields: result.fields.map((f) => ({
      name: f.name,
      tableID: f.tableID,
      columnID: f.columnID,
      dataTypeID: f.dataTypeID,
      dataTypeSize: f.dataTypeSize,
      dataTypeModifier: f.dataTypeModifier,
      format: f.format,
    })),
    rowAsArray: true,
  };
}

/** A batch: every query in one transaction, as Neon runs `sql.transaction([...])`. */
async function batch(client: pg.PoolClient, queries: HttpQuery[], req: IncomingMessage) {
  const modes: string[] = [];
  const isolation = ISOLATION[String(req.headers["neon-batch-isolation-level"] ?? "")];
  if (isolation) modes.push(`ISOLATION LEVEL ${isolation}`);
  if (req.headers["neon-batch-read-only"] === "true") modes.push("READ ONLY");
  if (req.headers["neon-batch-deferrable"] === "true") modes.push("DEFERRABLE");
  await client.query(`BEGIN${modes.length ? ` ${modes.join(", ")}` : ""}`);
  try {
    const results = [];
    for (const q of queries) results.push(await run(client, q));
    await client.query("COMMIT");
    return results;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  }
}

/** The connection string node-postgres gets: the driver adds parameters only Neon's proxy reads. */
function withoutNeonParameters(url: URL): string {
  const copy = new URL(url);
  copy.protocol = "postgres:";
  copy.searchParams.delete("application_name");
  copy.searchParams.delete("sslmode");
  copy.searchParams.delete("channel_binding");
  return copy.toString();
}

function databaseError(err: pg.DatabaseError): Record<string, unknown> {
  const out: Record<string, unknown> = { message: err.message };
  for (const field of ERROR_FIELDS) if (err[field] !== undefined) out[field] = err[field];
  return out;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return void res.end();
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": typeof body === "string" ? "text/plain" : "application/json" });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Error("body too large");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
