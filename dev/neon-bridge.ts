/**
 * A WebSocket-to-TCP bridge, so the Neon serverless driver reaches a plain Postgres (Neon's documented
 * local setup, the role of github.com/neondatabase/wsproxy). The driver opens
 * `ws://127.0.0.1:<port>/v1?address=<host>:<port>` and speaks the Postgres wire protocol in binary frames;
 * the bridge copies bytes both ways. Only loopback targets are allowed.
 *
 * @example
 * const bridge = await startNeonBridge();
 * const { db, close } = createNeonDb(url, { wsProxy: bridge.wsProxy, webSocketConstructor: WebSocket });
 * await bridge.close();
 */
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { WebSocketServer, type RawData } from "ws";

export interface NeonBridge {
  port: number;
  /** Hand to `neonConfig.wsProxy` (or createNeonDb's `wsProxy` option). */
  wsProxy: (host: string, port: number | string) => string;
  /** Connections opened so far. */
  connections: number;
  close(): Promise<void>;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

export async function startNeonBridge(): Promise<NeonBridge> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", resolve));
  const state = { connections: 0 };

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
    const socket = connect({ host: host.replace(/^\[|\]$/g, ""), port });
    socket.setNoDelay(true);
    socket.on("data", (chunk) => ws.send(chunk));
    socket.on("error", () => ws.close(1011, "database connection failed"));
    socket.on("close", () => ws.close());
    ws.on("message", (data: RawData) => socket.write(toBuffer(data)));
    ws.on("close", () => socket.destroy());
    ws.on("error", () => socket.destroy());
  });

  const { port } = wss.address() as AddressInfo;
  return {
    port,
    wsProxy: (host, pgPort) => `127.0.0.1:${port}/v1?address=${host}:${pgPort}`,
    get connections() {
      return state.connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => resolve());
      }),
  };
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
