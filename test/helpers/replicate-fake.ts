/**
 * A test-only Replicate on 127.0.0.1, speaking the HTTP API the real `replicate` client uses:
 * `POST /v1/models/{owner}/{name}/predictions` (official models), `POST /v1/predictions` (with `version`),
 * `GET /v1/predictions` (the list), `GET /v1/predictions/{id}`, `POST /v1/predictions/{id}/cancel`, plus `GET /files/{id}.png` serving each
 * output (what replicate.delivery does). Every /v1 request needs `Authorization: Bearer <token>` (401 with
 * Replicate's problem body otherwise). Predictions go starting → processing → a terminal status as they are
 * polled, and each output is a real PNG at the size the input asks for (aspect_ratio, resolution 1K/2K/4K
 * = 1024/2048/4096 px on the long edge, 1024 without a resolution), a gradient made with sharp.
 *
 * Behaviour is scripted per model ("owner/name", or the version id for the versioned route) or for all
 * ("*"); every request is recorded (method, path, headers, body, status) for assertions.
 *
 * Webhooks: a prediction created with `webhook` (and `webhook_events_filter` naming "completed", or none)
 * is delivered to that URL once it ends, signed the Standard Webhooks way (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature: v1,<HMAC-SHA256>` with `webhookSecret`, which
 * `GET /v1/webhooks/default/secret` also serves). A delivery answered with anything but 2xx, or not at all,
 * is retried with backoff, as Replicate does. A script can delay, drop, duplicate or replay the delivery,
 * or sign it wrongly or with a stale timestamp; `sendWebhook` sends one by hand.
 *
 * The fake has its own clock: a prediction scripted with `durationMs` ends when `clock.advance` passes
 * its end, so a "90 s prediction" takes no wall time. Without `durationMs` a prediction advances by polls
 * (and one with a webhook ends at once).
 *
 * @example
 * const replicate = await startReplicateFake();
 * replicate.script("*", { polls: 3, rateLimitCreates: 1, retryAfterSeconds: 2 });
 * const generator = ReplicateGenerator({ token: replicate.token, baseUrl: replicate.url, storage, log });
 * // ... replicate.requests.filter((r) => r.path.endsWith("/cancel")); await replicate.close();
 */
import { createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import sharp from "sharp";

/** What the fake does with the predictions of one model. Every field is optional. */
export interface ReplicateBehaviour {
  /** GETs answered "processing" before the terminal status ("slow"). Default 1. */
  polls?: number;
  /**
   * How the prediction ends: default "succeeded"; "refused" is a failure with a safety-filter message;
   * "canceled" is stopped on Replicate's side (Cancel-After, the dashboard); "never" stays processing until
   * canceled through the API.
   */
  outcome?: "succeeded" | "failed" | "refused" | "canceled" | "never";
  /** The prediction's `error` for "failed" (and "refused"). */
  error?: string;
  /** Predictions whose prompt contains this text fail ("failed"), the others end as `outcome` says: one bad item of a batch. */
  failPromptContaining?: string;
  /** Answer the first N creates with 429 and Retry-After. Default 0. */
  rateLimitCreates?: number;
  /** Retry-After seconds on those 429s (and "~Ns" in the body). Default 1; null sends no header. */
  retryAfterSeconds?: number | null;
  /** `output` as `[url]` instead of `url`. */
  outputAsArray?: boolean;
  /** Answer the first N GETs of each prediction with 503 (a flaky API). Default 0. */
  serverErrors?: number;
  /**
   * Download every `image_input` URL on create, as Replicate does, and fail the prediction when one does not
   * load (HTTP error, or not an image). Off by default, since unit tests pass URLs that serve nothing.
   */
  fetchInputs?: boolean;
  /** Serve these bytes as the output instead of the gradient. */
  image?: Uint8Array;
  /** Long edge of the output per `resolution` input ("" = none given); defaults 1K 1024, 2K 2048, 4K 4096, "" 1024. */
  longEdge?: Record<string, number>;
  /** Make the first N predictions but drop the connection instead of answering their creates. Default 0. */
  loseCreateAnswers?: number;
  /**
   * Make the first N predictions but answer their creates only when `releaseCreateAnswers` is called (the
   * caller dies before it reads the answer). Default 0.
   */
  holdCreateAnswers?: number;
  /** The prediction runs this long on the fake's clock (`clock.advance`), whatever the polls. */
  durationMs?: number;
  /** How the "completed" webhook is delivered. */
  webhook?: WebhookBehaviour;
}

/** What happens to a prediction's webhook. Every field is optional; the default is one good delivery at once. */
export interface WebhookBehaviour {
  /** Wall-clock wait before the first delivery. */
  delayMs?: number;
  /** Never deliver (a lost callback). */
  drop?: boolean;
  /** Deliver the same message twice (the same webhook-id: a redelivery). */
  replay?: boolean;
  /** Also deliver the event again under a second webhook-id (a duplicated event). */
  duplicate?: boolean;
  /** Sign with another secret. */
  badSignature?: boolean;
  /** Add this to the webhook-timestamp (e.g. -600: ten minutes old). */
  timestampOffsetSeconds?: number;
  /** Deliveries after a failed one (non-2xx or no answer), waiting 250 ms doubling. Default 8. */
  retries?: number;
}

/** One webhook delivery attempt. */
export interface WebhookDelivery {
  predictionId: string;
  webhookId: string;
  url: string;
  attempt: number;
  /** The HTTP status answered, 0 when the target did not answer. */
  status: number;
  /** The response body (first 500 characters). */
  body: string;
}

export interface RecordedRequest {
  method: string;
  /** Path with query, e.g. "/v1/predictions/abc". */
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The raw body text ("" when none). */
  body: string;
  /** The status the fake answered. */
  status: number;
}

export interface FakePrediction {
  id: string;
  model: string;
  version: string;
  input: Record<string, unknown>;
  status: "starting" | "processing" | "succeeded" | "failed" | "canceled";
  polls: number;
  errorsServed: number;
  behaviour: ReplicateBehaviour;
  canceled: boolean;
  /** Why the prediction failed when `fetchInputs` could not load an input. */
  inputError?: string;
  /** The fake clock's time at creation, and when it ends (durationMs), in ms. */
  createdAt: number;
  endsAt?: number;
  /** Where and whether to call back. */
  webhook?: string;
  /** Set once its webhook was scheduled. */
  notified: boolean;
}

export interface ReplicateFake {
  /** API base including /v1, for the client's `baseUrl`. */
  url: string;
  /** The only token the fake accepts. */
  token: string;
  requests: RecordedRequest[];
  predictions: Map<string, FakePrediction>;
  /** URLs the fake downloaded for `fetchInputs`, with the status each answered (0 = network error). */
  inputFetches: Array<{ url: string; status: number; contentType: string | null }>;
  /** Sets the behaviour for a model id ("owner/name" or a version id) or for every model ("*"). */
  script(modelOrAll: string, behaviour: ReplicateBehaviour): void;
  /** The secret webhooks are signed with (`whsec_…`). */
  readonly webhookSecret: string;
  /** Replaces the signing secret (what rotating it in Replicate's dashboard does); answers the new one. */
  rotateWebhookSecret(): string;
  /** Every webhook delivery attempt, in order. */
  webhooks: WebhookDelivery[];
  /**
   * The fake's clock. `advance` moves it and ends the predictions whose time has come; it resolves once
   * their webhooks' first deliveries (delays included) are answered.
   */
  clock: { now(): number; advance(ms: number): Promise<void> };
  /**
   * Sends a webhook for a prediction by hand and answers the HTTP status (0: no answer). Default: a fresh
   * webhook-id, a good signature, the current time.
   */
  sendWebhook(predictionId: string, options?: { webhookId?: string; badSignature?: boolean; timestampOffsetSeconds?: number }): Promise<number>;
  /** Webhook deliveries still scheduled or retrying. */
  pendingWebhooks(): number;
  /** Answers the creates held by `holdCreateAnswers` (to callers still waiting); answers how many. */
  releaseCreateAnswers(): number;
  /** Forgets scripts, predictions and recorded requests (between tests). */
  reset(): void;
  close(): Promise<void>;
}

export interface ReplicateFakeOptions {
  /** Default: a random "r8_…" token. */
  token?: string;
}

const DEFAULT_EDGE: Record<string, number> = { "1K": 1024, "2K": 2048, "4K": 4096, "": 1024 };

/**
 * Starts the fake on a free port. Point the client's `baseUrl` (or REPLICATE_API_BASE) at `url`.
 *
 * @example
 * const replicate = await startReplicateFake({ token: "r8_test" });
 * replicate.script("google/nano-banana-pro", { outcome: "refused" });
 */
export async function startReplicateFake(options: ReplicateFakeOptions = {}): Promise<ReplicateFake> {
  const token = options.token ?? `r8_${randomBytes(18).toString("hex")}`;
  const requests: RecordedRequest[] = [];
  const predictions = new Map<string, FakePrediction>();
  const scripts = new Map<string, ReplicateBehaviour>();
  const createsSeen = new Map<string, number>();
  const lostAnswers = new Map<string, number>();
  const heldAnswers = new Map<string, number>();
  const held: Array<() => void> = [];
  const inputFetches: ReplicateFake["inputFetches"] = [];
  let webhookSecret = `whsec_${randomBytes(24).toString("base64")}`;
  const wrongSecret = `whsec_${randomBytes(24).toString("base64")}`;
  const webhooks: WebhookDelivery[] = [];
  let clockOffset = 0;
  const now = () => Date.now() + clockOffset;
  let pending = 0;
  let closed = false;
  let origin = "";

  const behaviourFor = (model: string) => scripts.get(model) ?? scripts.get("*") ?? {};

  const view = (p: FakePrediction) => {
    const output = p.status === "succeeded" ? `${origin}/files/${p.id}.png` : null;
    const failed = p.status === "failed";
    return {
      id: p.id,
      model: p.model,
      version: p.version,
      input: p.input,
      logs: "",
      output: output && p.behaviour.outputAsArray ? [output] : output,
      data_removed: false,
      error: failed
        ? (p.inputError ??
          p.behaviour.error ??
          (p.behaviour.outcome === "refused" ? "The output was flagged as sensitive (E005). Try a different prompt." : "Prediction failed."))
        : null,
      source: "api",
      status: p.status,
      created_at: new Date(p.createdAt).toISOString(),
      webhook: p.webhook ?? null,
      urls: { get: `${origin}/v1/predictions/${p.id}`, cancel: `${origin}/v1/predictions/${p.id}/cancel`, web: `${origin}/p/${p.id}` },
      metrics: p.status === "succeeded" ? { predict_time: 1.5 } : {},
    };
  };

  const end = (p: FakePrediction) => {
    const { failPromptContaining } = p.behaviour;
    const outcome = failPromptContaining && String(p.input.prompt ?? "").includes(failPromptContaining) ? "failed" : (p.behaviour.outcome ?? "succeeded");
    p.status = outcome === "succeeded" || outcome === "canceled" ? outcome : "failed";
  };

  /** A GET: a timed prediction follows the clock, another moves on by one poll. */
  const advance = (p: FakePrediction) => {
    if (p.status !== "starting" && p.status !== "processing") return;
    p.polls += 1;
    const { polls = 1, outcome = "succeeded" } = p.behaviour;
    if (outcome === "never") p.status = "processing";
    else if (p.endsAt !== undefined) {
      if (now() >= p.endsAt) end(p);
      else p.status = "processing";
    } else if (p.polls <= polls) p.status = "processing";
    else end(p);
    if (p.status !== "processing") void notify(p);
  };

  const sign = (secret: string, id: string, timestamp: string, body: string) =>
    `v1,${createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64"))
      .update(`${id}.${timestamp}.${body}`)
      .digest("base64")}`;

  /** One delivery attempt; answers the status (0 when nothing answered). */
  const deliver = async (p: FakePrediction, webhookId: string, attempt: number, options: { badSignature?: boolean; timestampOffsetSeconds?: number }) => {
    const body = JSON.stringify(view(p));
    const timestamp = String(Math.floor(Date.now() / 1000) + (options.timestampOffsetSeconds ?? 0));
    let status = 0;
    let text = "";
    try {
      const res = await fetch(p.webhook!, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "webhook-id": webhookId,
          "webhook-timestamp": timestamp,
          "webhook-signature": sign(options.badSignature ? wrongSecret : webhookSecret, webhookId, timestamp, body),
        },
        body,
        signal: AbortSignal.timeout(30_000),
      });
      status = res.status;
      text = (await res.text()).slice(0, 500);
    } catch {
      status = 0;
    }
    webhooks.push({ predictionId: p.id, webhookId, url: p.webhook!, attempt, status, body: text });
    return status;
  };

  /** Delivers one message until it is taken (2xx) or the retries run out; `onFirst` after the first answer. */
  const deliverWithRetries = async (p: FakePrediction, webhookId: string, behaviour: WebhookBehaviour, onFirst: () => void) => {
    const retries = behaviour.retries ?? 8;
    let wait = 250;
    for (let attempt = 1; attempt <= retries + 1 && !closed; attempt++) {
      const status = await deliver(p, webhookId, attempt, behaviour);
      if (attempt === 1) onFirst();
      if (status >= 200 && status < 300) return;
      await new Promise((r) => setTimeout(r, wait));
      wait *= 2;
    }
  };

  /** Schedules the prediction's webhook once it has ended; resolves when its first delivery is answered. */
  const notify = (p: FakePrediction): Promise<void> => {
    if (!p.webhook || p.notified) return Promise.resolve();
    p.notified = true;
    const behaviour = p.behaviour.webhook ?? {};
    if (behaviour.drop) return Promise.resolve();
    pending += 1;
    return new Promise<void>((resolveFirst) => {
      const run = async () => {
        const id = `msg_${randomBytes(12).toString("hex")}`;
        await deliverWithRetries(p, id, behaviour, resolveFirst);
        if (behaviour.replay) await deliverWithRetries(p, id, behaviour, () => {});
        if (behaviour.duplicate) await deliverWithRetries(p, `msg_${randomBytes(12).toString("hex")}`, behaviour, () => {});
      };
      setTimeout(() => {
        run()
          .catch(() => undefined)
          .finally(() => {
            pending -= 1;
            resolveFirst();
          });
      }, behaviour.delayMs ?? 0);
    });
  };

  /** Replicate fetches inputs itself; an input it cannot load fails the prediction. */
  const loadInputs = async (input: Record<string, unknown>): Promise<string | undefined> => {
    const urls = Array.isArray(input.image_input) ? input.image_input : [];
    for (const [i, url] of urls.entries()) {
      let status = 0;
      let contentType: string | null = null;
      try {
        const res = await fetch(String(url), { signal: AbortSignal.timeout(10_000) });
        status = res.status;
        contentType = res.headers.get("content-type");
        await res.arrayBuffer();
      } catch {
        status = 0;
      }
      inputFetches.push({ url: String(url), status, contentType });
      if (status !== 200 || !contentType?.startsWith("image/")) return `Failed to load image_input[${i}]: ${status === 0 ? "network error" : `HTTP ${status}`}`;
    }
    return undefined;
  };

  const create = async (model: string, version: string, body: Record<string, unknown>, res: ServerResponse): Promise<number> => {
    const key = version || model;
    const behaviour = behaviourFor(key);
    const seen = (createsSeen.get(key) ?? 0) + 1;
    createsSeen.set(key, seen);
    if (seen <= (behaviour.rateLimitCreates ?? 0)) {
      const after = behaviour.retryAfterSeconds === undefined ? 1 : behaviour.retryAfterSeconds;
      const headers: Record<string, string> = after === null ? {} : { "retry-after": String(after) };
      return send(res, 429, { detail: `Request was throttled. Your rate limit resets in ~${after ?? 1}s.` }, headers);
    }
    if (!body.input || typeof body.input !== "object")
      return send(res, 422, { title: "Input validation failed", detail: "- input: Invalid type. Expected: object", status: 422 });
    const id = randomBytes(13).toString("hex").slice(0, 26);
    const filter = Array.isArray(body.webhook_events_filter) ? body.webhook_events_filter : ["completed"];
    const webhook = typeof body.webhook === "string" && filter.includes("completed") ? body.webhook : undefined;
    const durationMs = behaviour.durationMs ?? (webhook ? 0 : undefined);
    const p: FakePrediction = {
      id,
      model: model || "acme/versioned",
      version: version || "hidden",
      input: body.input as Record<string, unknown>,
      status: "starting",
      polls: 0,
      errorsServed: 0,
      behaviour,
      canceled: false,
      createdAt: now(),
      endsAt: durationMs === undefined ? undefined : now() + durationMs,
      webhook,
      notified: false,
    };
    if (behaviour.fetchInputs) {
      p.inputError = await loadInputs(p.input);
      if (p.inputError) p.status = "failed";
    }
    predictions.set(id, p);
    const lost = lostAnswers.get(key) ?? 0;
    if (lost < (behaviour.loseCreateAnswers ?? 0)) {
      lostAnswers.set(key, lost + 1);
      res.socket?.destroy();
      return 0;
    }
    const holding = heldAnswers.get(key) ?? 0;
    if (holding < (behaviour.holdCreateAnswers ?? 0)) {
      heldAnswers.set(key, holding + 1);
      return new Promise<number>((resolve) => held.push(() => resolve(res.destroyed ? 0 : send(res, 201, view(p)))));
    }
    const status = send(res, 201, view(p));
    // A prediction already over (an input that did not load, no duration) calls back after its create's answer.
    if (p.status === "failed" || (durationMs === 0 && behaviour.outcome !== "never")) {
      setTimeout(() => {
        if (p.status === "starting") end(p);
        void notify(p);
      }, 5);
    }
    return status;
  };

  const route = async (req: IncomingMessage, res: ServerResponse, path: string, body: string): Promise<number> => {
    const method = req.method ?? "GET";
    const file = /^\/files\/([\w-]+)\.png$/.exec(path);
    if (method === "GET" && file) {
      const p = predictions.get(file[1]!);
      if (p?.status !== "succeeded") return send(res, 404, { detail: "Not found." });
      const png = p.behaviour.image ?? (await gradient(p.input, p.behaviour.longEdge));
      const type = png[0] === 0xff && png[1] === 0xd8 ? "image/jpeg" : png[0] === 0x52 && png[1] === 0x49 ? "image/webp" : "image/png";
      res.writeHead(200, { "content-type": type, "content-length": String(png.length) }).end(png);
      return 200;
    }
    if (!path.startsWith("/v1/")) return send(res, 404, { detail: "Not found." });
    if (req.headers.authorization !== `Bearer ${token}`) {
      return send(res, 401, { title: "Unauthenticated", detail: "You did not pass a valid authentication token", status: 401 });
    }
    let json: Record<string, unknown> = {};
    if (method === "POST" && body) {
      try {
        json = JSON.parse(body) as Record<string, unknown>;
      } catch {
        return send(res, 400, { title: "Bad request", detail: "The request body is not valid JSON.", status: 400 });
      }
    }
    if (method === "GET" && path === "/v1/webhooks/default/secret") return send(res, 200, { key: webhookSecret });
    // The account's predictions, newest first, in one page (Replicate pages by `next`).
    if (method === "GET" && path === "/v1/predictions")
      return send(res, 200, { next: null, previous: null, results: [...predictions.values()].reverse().map(view) });
    const official = /^\/v1\/models\/([\w.-]+\/[\w.-]+)\/predictions$/.exec(path);
    if (method === "POST" && official) return create(official[1]!, "", json, res);
    if (method === "POST" && path === "/v1/predictions") {
      if (typeof json.version !== "string") return send(res, 422, { title: "Invalid version", detail: "- version: is required", status: 422 });
      return create("", json.version, json, res);
    }
    const one = /^\/v1\/predictions\/(\w+)(\/cancel)?$/.exec(path);
    const p = one ? predictions.get(one[1]!) : undefined;
    if (!one || !p) return send(res, 404, { detail: "Not found.", status: 404 });
    if (method === "GET" && !one[2]) {
      if (p.errorsServed < (p.behaviour.serverErrors ?? 0)) {
        p.errorsServed += 1;
        return send(res, 503, { detail: "Service temporarily unavailable.", status: 503 });
      }
      advance(p);
      return send(res, 200, view(p));
    }
    if (method === "POST" && one[2]) {
      p.canceled = true;
      if (p.status === "starting" || p.status === "processing") {
        p.status = "canceled";
        void notify(p);
      }
      return send(res, 200, view(p));
    }
    return send(res, 405, { detail: "Method not allowed." });
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const path = req.url ?? "/";
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) headers[name] = Array.isArray(value) ? value.join(", ") : (value ?? "");
      const record: RecordedRequest = { method: req.method ?? "GET", path, headers, body, status: 0 };
      requests.push(record);
      route(req, res, path.split("?")[0]!, body)
        .then((status) => (record.status = status))
        .catch(() => {
          record.status = 500;
          if (!res.headersSent) send(res, 500, { detail: "Internal server error" });
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: `${origin}/v1`,
    token,
    requests,
    predictions,
    inputFetches,
    get webhookSecret() {
      return webhookSecret;
    },
    rotateWebhookSecret() {
      webhookSecret = `whsec_${randomBytes(24).toString("base64")}`;
      return webhookSecret;
    },
    webhooks,
    clock: {
      now,
      async advance(ms) {
        clockOffset += ms;
        const firsts: Promise<void>[] = [];
        for (const p of predictions.values()) {
          if ((p.status === "starting" || p.status === "processing") && p.endsAt !== undefined && now() >= p.endsAt && p.behaviour.outcome !== "never") {
            end(p);
            firsts.push(notify(p));
          }
        }
        await Promise.all(firsts);
      },
    },
    async sendWebhook(predictionId, options = {}) {
      const p = predictions.get(predictionId);
      if (!p?.webhook) throw new Error(`prediction ${predictionId} has no webhook`);
      return deliver(p, options.webhookId ?? `msg_${randomBytes(12).toString("hex")}`, 1, options);
    },
    pendingWebhooks: () => pending,
    releaseCreateAnswers() {
      const answers = held.splice(0);
      for (const answer of answers) answer();
      return answers.length;
    },
    script: (model, behaviour) => void scripts.set(model, behaviour),
    reset() {
      webhooks.length = 0;
      scripts.clear();
      createsSeen.clear();
      lostAnswers.clear();
      heldAnswers.clear();
      for (const answer of held.splice(0)) answer();
      predictions.clear();
      requests.length = 0;
      inputFetches.length = 0;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        closed = true;
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): number {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
  return status;
}

/**
 * Output size from the input: the long edge from `resolution`, the other side from `aspect_ratio`.
 *
 * @example
 * outputSize({ resolution: "2K", aspect_ratio: "16:9" }); // { width: 2048, height: 1152 }
 */
export function outputSize(input: Record<string, unknown>, longEdge: Record<string, number> = {}): { width: number; height: number } {
  const edges = { ...DEFAULT_EDGE, ...longEdge };
  const edge = edges[typeof input.resolution === "string" ? input.resolution : ""] ?? 1024;
  const ratio = /^(\d+):(\d+)$/.exec(String(input.aspect_ratio ?? ""));
  const [w, h] = ratio ? [Number(ratio[1]), Number(ratio[2])] : [1, 1];
  return w >= h ? { width: edge, height: Math.round((edge * h) / w) } : { width: Math.round((edge * w) / h), height: edge };
}

/** A diagonal gradient PNG at the size the input asks for. */
async function gradient(input: Record<string, unknown>, longEdge?: Record<string, number>): Promise<Buffer> {
  const { width, height } = outputSize(input, longEdge);
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      raw[i] = Math.round((x / width) * 255);
      raw[i + 1] = Math.round((y / height) * 255);
      raw[i + 2] = 160;
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 2 })
    .toBuffer();
}
