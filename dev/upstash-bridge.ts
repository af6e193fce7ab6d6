/**
 * A local server (tests and `npm run dev:edge`) that speaks the Upstash Redis REST protocol and forwards to a real Redis over RESP.
 *
 * - `POST /` with a JSON array (`["SET","k","v"]`): one command, answers `{result}` (or 400 `{error}`).
 * - `POST /pipeline` with an array of commands: answers `[{result}|{error}, ...]`.
 * - `POST /multi-exec`: the same, inside MULTI/EXEC.
 * - `Authorization: Bearer <token>` is required; `Upstash-Encoding: base64` makes every bulk string
 *   base64 (simple strings too, except "OK"), as the real service does and as @upstash/redis decodes.
 * - The one deliberate difference from a plain proxy: `#!lua flags=allow-key-locking` (Upstash-only) is
 *   stripped from scripts, which Redis 7.0 refuses. EVALSHA with the flagged script's hash is mapped to
 *   the stripped script's hash, so a client's evalsha-then-eval (@upstash/redis's scripts) stays on the fast path.
 *
 * @example
 * const bridge = await startUpstashBridge();             // Redis at 127.0.0.1:6379
 * const redis = new Redis({ url: bridge.url, token: bridge.token });
 * await bridge.close();
 */
import { createHash, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";

export interface UpstashBridgeOptions {
  redisHost?: string;
  redisPort?: number;
  token?: string;
}

export interface UpstashBridge {
  /** e.g. "http://127.0.0.1:40123" */
  url: string;
  token: string;
  /** Number of REST requests answered so far (any path). */
  requests: number;
  close(): Promise<void>;
}

export type RespValue = string | number | null | Buffer | RespError | RespValue[];

export class RespError extends Error {}

const FLAG_LINE = /^#!lua flags=allow-key-locking/;

export async function startUpstashBridge(options: UpstashBridgeOptions = {}): Promise<UpstashBridge> {
  const token = options.token ?? `test-${randomUUID()}`;
  const redis = new RespConnection(options.redisHost ?? "127.0.0.1", options.redisPort ?? 6379);
  const shaMap = new Map<string, string>();

  /** Strips the flag from a script and remembers how the client's hash maps to the stored one. */
  const stripScript = (script: string): string => {
    if (!FLAG_LINE.test(script)) return script;
    const stripped = script.replace(FLAG_LINE, "#!lua");
    shaMap.set(sha1(script), sha1(stripped));
    return stripped;
  };
  const rewrite = (command: string[]): string[] => {
    const name = command[0]?.toUpperCase();
    if ((name === "EVAL" || name === "EVAL_RO") && command[1] !== undefined) return [command[0]!, stripScript(command[1]), ...command.slice(2)];
    if ((name === "EVALSHA" || name === "EVALSHA_RO") && command[1] !== undefined) {
      return [command[0]!, shaMap.get(command[1].toLowerCase()) ?? command[1], ...command.slice(2)];
    }
    if (name === "SCRIPT" && command[1]?.toUpperCase() === "LOAD" && command[2] !== undefined) return [command[0]!, command[1], stripScript(command[2])];
    return command;
  };

  const state = { requests: 0 };
  const server = createServer((req, res) => {
    state.requests += 1;
    handle(req, res).catch((err: unknown) => send(res, 500, { error: `bridge: ${(err as Error).message}` }));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, { error: "Unauthorized" });
    if (req.method !== "POST") return send(res, 405, { error: "only POST is supported by this bridge" });
    const base64 = String(req.headers["upstash-encoding"] ?? "").toLowerCase() === "base64";
    const path = new URL(req.url ?? "/", "http://bridge").pathname.replace(/\/+$/, "") || "/";
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      return send(res, 400, { error: "ERR body is not valid JSON" });
    }
    const out = (value: RespValue) => encodeResult(value, base64);

    if (path === "/") {
      const command = toCommand(body);
      if (!command) return send(res, 400, { error: "ERR a command is a non-empty JSON array" });
      const [reply] = await redis.send([rewrite(command)]);
      return reply instanceof RespError ? send(res, 400, { error: reply.message }) : send(res, 200, { result: out(reply!) });
    }
    if (path === "/pipeline" || path === "/multi-exec") {
      const commands = Array.isArray(body) ? body.map(toCommand) : [];
      if (commands.length === 0 || commands.some((c) => c === null)) return send(res, 400, { error: "ERR a pipeline is a non-empty array of commands" });
      const rewritten = (commands as string[][]).map(rewrite);
      if (path === "/pipeline") {
        const replies = await redis.send(rewritten);
        return send(
          res,
          200,
          replies.map((r) => (r instanceof RespError ? { error: r.message } : { result: out(r) })),
        );
      }
      // MULTI, the commands and EXEC are written in one go on the shared connection, so nothing interleaves.
      const replies = await redis.send([["MULTI"], ...rewritten, ["EXEC"]]);
      const exec = replies[replies.length - 1];
      const queued = replies.slice(1, -1).find((r) => r instanceof RespError);
      if (queued instanceof RespError) return send(res, 400, { error: queued.message });
      if (exec instanceof RespError) return send(res, 400, { error: exec.message });
      if (!Array.isArray(exec)) return send(res, 400, { error: "ERR transaction aborted" });
      return send(
        res,
        200,
        exec.map((r) => (r instanceof RespError ? { error: r.message } : { result: out(r) })),
      );
    }
    return send(res, 404, { error: `ERR unknown path ${path}` });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    get requests() {
      return state.requests;
    },
    async close() {
      redis.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function sha1(text: string): string {
  return createHash("sha1").update(text).digest("hex");
}

function toCommand(value: unknown): string[] | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  return value.map((v) => (v === null || v === undefined ? "" : typeof v === "string" ? v : typeof v === "object" ? JSON.stringify(v) : String(v)));
}

function encodeResult(value: RespValue, base64: boolean): unknown {
  if (value === null || typeof value === "number") return value;
  if (Array.isArray(value)) return value.map((v) => (v instanceof RespError ? v.message : encodeResult(v, base64)));
  if (Buffer.isBuffer(value)) return base64 ? value.toString("base64") : value.toString("utf8");
  if (value instanceof RespError) return value.message;
  return base64 && value !== "OK" ? Buffer.from(value, "utf8").toString("base64") : value;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * A minimal RESP2 client: commands are pipelined on one socket and replies matched in order. A broken
 * connection fails the waiting commands and is reopened on the next send.
 */
export class RespConnection {
  private socket: Socket | null = null;
  private buffer = Buffer.alloc(0);
  private waiting: Array<{ resolve: (v: RespValue) => void; reject: (e: Error) => void }> = [];

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** Sends every command in one write; resolves with one reply per command (errors as RespError values). */
  send(commands: string[][]): Promise<RespValue[]> {
    const socket = this.open();
    const replies = commands.map(() => new Promise<RespValue>((resolve, reject) => this.waiting.push({ resolve, reject })));
    socket.write(Buffer.concat(commands.map(encodeCommand)));
    return Promise.all(replies);
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
  }

  private open(): Socket {
    if (this.socket && !this.socket.destroyed) return this.socket;
    const socket = connect({ host: this.host, port: this.port });
    socket.setNoDelay(true);
    this.buffer = Buffer.alloc(0);
    socket.on("data", (chunk) => {
      this.buffer = Buffer.concat([this.buffer, chunk as Buffer]);
      for (;;) {
        const parsed = parseReply(this.buffer, 0);
        if (!parsed) break;
        this.buffer = this.buffer.subarray(parsed.end);
        this.waiting.shift()?.resolve(parsed.value);
      }
    });
    const fail = (err: Error) => {
      if (this.socket === socket) this.socket = null;
      const pending = this.waiting;
      this.waiting = [];
      for (const w of pending) w.reject(new Error(`Redis at ${this.host}:${this.port}: ${err.message}`));
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new Error("connection closed")));
    this.socket = socket;
    return socket;
  }
}

function encodeCommand(args: string[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = Buffer.from(arg, "utf8");
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

/** Parses one reply at `start`; null when the buffer does not hold a whole reply yet. */
function parseReply(buf: Buffer, start: number): { value: RespValue; end: number } | null {
  const lineEnd = buf.indexOf("\r\n", start);
  if (lineEnd < 0) return null;
  const type = String.fromCharCode(buf[start]!);
  const line = buf.toString("utf8", start + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case "+":
      return { value: line, end: next };
    case "-":
      return { value: new RespError(line), end: next };
    case ":":
      return { value: Number(line), end: next };
    case "$": {
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (buf.length < next + length + 2) return null;
      return { value: Buffer.from(buf.subarray(next, next + length)), end: next + length + 2 };
    }
    case "*": {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: RespValue[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, at);
        if (!item) return null;
        items.push(item.value);
        at = item.end;
      }
      return { value: items, end: at };
    }
    default:
      throw new Error(`unexpected RESP type byte ${JSON.stringify(type)}`);
  }
}
