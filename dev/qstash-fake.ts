/**
 * A QStash stand-in on 127.0.0.1 (tests and `npm run dev:edge`) speaking the HTTP API the real `@upstash/qstash` Client uses:
 * `POST /v2/publish/<destination>` (Upstash-Not-Before / Upstash-Delay, Upstash-Deduplication-Id,
 * Upstash-Retries; answers `{messageId}`, 202 for a deduplicated publish) and `DELETE /v2/messages/<id>`.
 * Due messages are POSTed to their destination with an `Upstash-Signature` made as QStash makes it: an HS256
 * JWT signed with the current signing key, claims iss "Upstash", sub = destination URL, exp, nbf, iat, jti,
 * body = base64url(SHA-256(body)); plus Upstash-Message-Id and Upstash-Retried. Non-2xx answers are retried.
 *
 * @example
 * const qstash = await startQStashFake({ token: "t", currentSigningKey: "k1", nextSigningKey: "k2" });
 * // env: QSTASH_URL = qstash.url ... ; later: qstash.messages, await qstash.redeliver(id), await qstash.close()
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createHash, randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { SignJWT } from "jose";

export interface FakeMessage {
  messageId: string;
  destination: string;
  body: string;
  headers: Record<string, string>;
  notBefore: number;
  deduplicationId?: string;
  retries: number;
  state: "scheduled" | "delivered" | "failed" | "cancelled";
  deliveries: Array<{ status: number; retried: number; at: number }>;
}

export interface QStashFakeOptions {
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
  /** Delay between QStash's own retries of a failed delivery (real QStash: 12 s and up). */
  retryDelayMs?: number;
}

export interface QStashFake {
  url: string;
  messages: Map<string, FakeMessage>;
  /** Deliver a message once more, exactly as before (QStash's at-least-once duplicate). */
  redeliver(messageId: string): Promise<number>;
  /** Signature for a body and URL, as QStash would make it with `key` (defaults to the current key). */
  sign(body: string, url: string, key?: string): Promise<string>;
  /** Resolves when every scheduled message has been delivered, failed or cancelled. */
  idle(timeoutMs?: number): Promise<void>;
  /** Resolves when no message due by now is waiting or being delivered (later ones may stay scheduled). */
  settled(timeoutMs?: number): Promise<void>;
  /** API requests answered so far (publishes and cancellations, refused ones included). */
  requests: number;
  close(): Promise<void>;
}

export async function startQStashFake(options: QStashFakeOptions): Promise<QStashFake> {
  const messages = new Map<string, FakeMessage>();
  const dedup = new Map<string, { messageId: string; at: number }>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const inFlight = new Set<Promise<unknown>>();

  const sign = async (body: string, url: string, key = options.currentSigningKey) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ body: createHash("sha256").update(body).digest("base64url") })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setIssuer("Upstash")
      .setSubject(url)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + 300)
      .setJti(`jwt_${randomUUID()}`)
      .sign(new TextEncoder().encode(key));
  };

  const deliverOnce = async (m: FakeMessage, retried: number): Promise<number> => {
    let status = 0;
    try {
      const res = await fetch(m.destination, {
        method: "POST",
        headers: {
          ...m.headers,
          "upstash-signature": await sign(m.body, m.destination),
          "upstash-message-id": m.messageId,
          "upstash-retried": String(retried),
          "user-agent": "Upstash-QStash",
        },
        body: m.body,
      });
      status = res.status;
      await res.arrayBuffer();
    } catch {
      status = 0;
    }
    m.deliveries.push({ status, retried, at: Date.now() });
    return status;
  };

  const schedule = (m: FakeMessage, atMs: number, retried: number) => {
    const timer = setTimeout(
      () => {
        timers.delete(timer);
        if (m.state !== "scheduled") return;
        const work = deliverOnce(m, retried).then((status) => {
          if (status >= 200 && status < 300) m.state = "delivered";
          else if (retried < m.retries) schedule(m, Date.now() + (options.retryDelayMs ?? 200), retried + 1);
          else m.state = "failed";
        });
        inFlight.add(work);
        void work.finally(() => inFlight.delete(work));
      },
      Math.max(0, atMs - Date.now()),
    );
    timers.add(timer);
  };

  const counted = { requests: 0 };
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    counted.requests += 1;
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${options.token}`) return send(401, { error: "Unauthorized" });
    let body = "";
    for await (const chunk of req) body += chunk;
    const path = req.url ?? "/";

    if (req.method === "POST" && path.startsWith("/v2/publish/")) {
      const destination = path.slice("/v2/publish/".length);
      const h = (name: string) => (req.headers[name.toLowerCase()] as string | undefined) ?? undefined;
      const dedupId = h("Upstash-Deduplication-Id");
      const seen = dedupId ? dedup.get(dedupId) : undefined;
      if (seen && Date.now() - seen.at < 10 * 60_000) return send(202, { messageId: seen.messageId, deduplicated: true });
      const notBefore = h("Upstash-Not-Before") ? Number(h("Upstash-Not-Before")) * 1000 : Date.now() + parseDelay(h("Upstash-Delay"));
      const forwarded: Record<string, string> = {};
      if (h("Content-Type")) forwarded["content-type"] = h("Content-Type")!;
      for (const [k, v] of Object.entries(req.headers)) if (k.startsWith("upstash-forward-") && typeof v === "string") forwarded[k.slice(16)] = v;
      const m: FakeMessage = {
        messageId: `msg_${randomUUID().replace(/-/g, "")}`,
        destination,
        body,
        headers: forwarded,
        notBefore,
        deduplicationId: dedupId,
        retries: h("Upstash-Retries") !== undefined ? Number(h("Upstash-Retries")) : 3,
        state: "scheduled",
        deliveries: [],
      };
      messages.set(m.messageId, m);
      if (dedupId) dedup.set(dedupId, { messageId: m.messageId, at: Date.now() });
      schedule(m, notBefore, 0);
      return send(201, { messageId: m.messageId });
    }
    const cancel = /^\/v2\/messages\/([^/?]+)$/.exec(path);
    if (req.method === "DELETE" && cancel) {
      const m = messages.get(cancel[1]!);
      if (m?.state !== "scheduled") return send(404, { error: `message ${cancel[1]} not found` });
      m.state = "cancelled";
      return send(202, {});
    }
    send(404, { error: "not found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    messages,
    sign,
    async redeliver(messageId) {
      const m = messages.get(messageId);
      if (!m) throw new Error(`no message ${messageId}`);
      return deliverOnce(m, 0);
    },
    async idle(timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while ([...messages.values()].some((m) => m.state === "scheduled") || inFlight.size > 0) {
        if (Date.now() > deadline) throw new Error("qstash fake: messages still scheduled");
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async settled(timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while ([...messages.values()].some((m) => m.state === "scheduled" && m.notBefore <= Date.now()) || inFlight.size > 0) {
        if (Date.now() > deadline) {
          const waiting = [...messages.values()].filter((m) => m.state === "scheduled" && m.notBefore <= Date.now());
          throw new Error(
            `qstash fake: due messages still waiting: ${waiting.map((m) => `${m.destination} (${m.deliveries.map((d) => d.status).join(", ")})`).join("; ")}`,
          );
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    get requests() {
      return counted.requests;
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function parseDelay(value: string | undefined): number {
  const m = value ? /^(\d+)([smhd])$/.exec(value.trim()) : null;
  if (!m) return 0;
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "s" | "m" | "h" | "d"];
}
