/**
 * The ports: everything the app reaches outside its own code goes through `Services`.
 * Entry points (functions/node.ts, functions/worker.ts) and tests build a Services object and hand it to
 * `createApp(services)`. Edge twins live in src/adapters (portable); Node-only twins in functions/node.
 * It sits below the HTTP layer and the areas, so it names only types from src/lib, src/images, src/heavy's
 * limiter, db and src/config.ts; the image-generator port that area B implements is declared here.
 */
import type { HeavyWork } from "./heavy";
import type { Config } from "./config";
import type { Db } from "../db/client";
import type { RgbaImage } from "./images/types";
import type { InlineImages } from "./images/inline-images";
import type { DecodeLimits } from "./images/limits";
import type { ApiKeyCache } from "./lib/key-cache";
import type { AspectRatio, ModelOption, Resolution } from "./lib/model-catalog";

/** Outcome of one rate-limit check. `reset` is unix milliseconds when the window frees up. */
export interface RateLimitResult {
  success: boolean;
  limit: number;
  remaining: number;
  reset: number;
  /** True when the limiter could not answer (Redis down or slow): the request was let through. */
  unknown?: boolean;
}

/** Per-user request budgets, e.g. `limit("social-write", userId, 60)`. */
export interface RateLimiter {
  limit(bucket: string, identifier: string, perMinute: number): Promise<RateLimitResult>;
}

/** When to look at a delivery. The queue says *when*; the delivery row says *what*. */
export interface Queue {
  /** Ask for `publish(deliveryId)` at `notBefore` (or now). Returns a job id, or null when the queue is the poller. */
  enqueue(deliveryId: string, notBefore?: Date): Promise<string | null>;
  /** Best-effort cancellation of a job. */
  cancel(jobId: string): Promise<void>;
  /**
   * Ask for the webhook delivery `webhookDeliveryId` to be sent at `notBefore`: a QStash message (its job id),
   * or, for the poller, the process's webhook sender told when it is due (null).
   */
  enqueueWebhook(webhookDeliveryId: string, notBefore: Date): Promise<string | null>;
  /** "qstash" or "poller": the poller finds due deliveries itself, so nothing needs enqueuing. */
  readonly kind: "qstash" | "poller";
}

export interface StoredObject {
  bytes: Uint8Array;
  contentType: string;
}

/** Object storage for media and generated images. `put` returns the public URL of the object. */
export interface Storage {
  put(key: string, bytes: Uint8Array, contentType: string): Promise<string>;
  get(key: string): Promise<StoredObject | null>;
  delete(key: string): Promise<void>;
  urlFor(key: string): string;
}

export interface FetchedImage {
  bytes: Uint8Array;
  contentType: string | null;
}

/**
 * Fetches a user-given URL safely: https on 443 only, no credentials, no redirects, no private, loopback,
 * link-local or mapped addresses (checked on every resolved address where the runtime allows), size capped
 * while streaming, with a timeout. Throws ApiError INVALID_IMAGE_URL (422) or PAYLOAD_TOO_LARGE (413).
 */
export interface SafeFetcher {
  fetchBytes(url: string, options?: { maxBytes?: number; timeoutMs?: number }): Promise<FetchedImage>;
  /**
   * POSTs one webhook message by the same URL rules (loopback endpoints too when WEBHOOK_ALLOW_LOOPBACK is on),
   * redirects not followed, within `timeoutMs` for the answer's headers. Resolves with the receiver's status
   * whatever it is; throws an Error whose message says why no answer came (refused URL, network, timeout).
   */
  postWebhook(request: WebhookRequest): Promise<WebhookAnswer>;
}

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
}

export interface WebhookAnswer {
  status: number;
  /** The answer's Retry-After header, as sent. */
  retryAfter: string | null;
}

export interface Clock {
  now(): Date;
}

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** AES-GCM encryption of platform tokens at rest. */
export interface TokenCipher {
  encrypt(plain: string): Promise<string>;
  decrypt(cipher: string): Promise<string>;
}

/** Publishes one delivery to its platform; set by area C (see src/social/delivery). */
export interface Publisher {
  publish(deliveryId: string): Promise<unknown>;
}

/** One input image, already loaded, sniffed and limit-checked. */
export interface InputImage {
  bytes: Uint8Array;
  mimeType: "image/jpeg" | "image/png" | "image/webp";
  width: number;
  height: number;
  /** A URL of this service's own storage that serves the bytes (what Replicate is given); "" when not stored. */
  url: string;
  /** The storage key behind `url`, when stored. */
  key?: string;
}

/** What a generator is asked for: one product in one scene, at an exact size. */
export interface SceneRequest {
  product: InputImage;
  reference?: InputImage;
  /** The full scene description: the template's prompt, the user's scenePrompt, the product's own prompt. */
  prompt: string;
  /** The template, when the request named one (the local compositor styles its backdrop from it). */
  templateId?: string;
  model: ModelOption;
  resolution: Resolution;
  aspectRatio: AspectRatio;
  /** Exact output size in pixels (long edge from the resolution, the other from the aspect ratio). */
  width: number;
  height: number;
  /** Aborted when the caller gives up (timeout, shutdown). */
  signal?: AbortSignal;
}

/**
 * The image-generator port. A generator makes the scene only; the logo and the texts are composited by
 * the service afterwards, so no model ever redraws them. The result may be any size: the caller fits it to
 * `width` x `height` exactly (cover crop) when it is not.
 */
/** A provider's prediction as the service tracks it (Replicate's statuses). */
export interface PredictionState {
  id: string;
  status: "starting" | "processing" | "succeeded" | "failed" | "canceled" | "aborted";
  output?: unknown;
  error?: unknown;
}

/**
 * A generator whose scenes are a provider's predictions, handled one step at a time so that a job can
 * outlive the process or request that started it: create (with a webhook where the service can be called
 * back), read again by id, wait by polling, and turn an ended prediction into its scene.
 */
export interface Predictions {
  /** Creates the prediction; with `webhook`, the provider calls that URL once it has ended. */
  create(request: SceneRequest, options?: { webhook?: string }): Promise<PredictionState>;
  get(id: string, signal?: AbortSignal): Promise<PredictionState>;
  /**
   * The prediction made for this request since `since` whose id we never learnt (the process died between
   * the create and storing its answer), found among the account's recent predictions by its product input's
   * URL (pass the URL that create sent); the newest when several; null when there is none.
   */
  find(request: SceneRequest, since: Date): Promise<PredictionState | null>;
  /** Polls until the prediction ends; past the generator's deadline it is canceled (GENERATION_TIMEOUT). */
  wait(prediction: PredictionState, signal?: AbortSignal): Promise<PredictionState>;
  /** The scene of an ended prediction (its output copied into storage, then decoded), or its failure thrown. */
  scene(prediction: PredictionState, signal?: AbortSignal): Promise<RgbaImage>;
  /**
   * The secret the provider signs its webhooks with (`whsec_…`): configured, or read from the provider once
   * and kept; `fresh` reads it again (at most every few seconds), for a secret the provider has rotated.
   */
  webhookSecret(options?: { fresh?: boolean }): Promise<string>;
}

export interface ImageGenerator {
  readonly name: "local" | "replicate";
  /** Present for providers whose scenes are predictions (Replicate); the local compositor has none. */
  readonly predictions?: Predictions;
  /**
   * The local compositor's mark: its scenes are pure CPU work, made inside the heavy-work task
   * (HEAVY_TASKS.photoFinish, on a worker thread on Node) rather than by calling generateScene here.
   */
  readonly heavyWork?: true;
  generateScene(request: SceneRequest): Promise<RgbaImage>;
}

export interface Services {
  config: Config;
  db: Db;
  rateLimiter: RateLimiter;
  queue: Queue;
  storage: Storage;
  fetcher: SafeFetcher;
  clock: Clock;
  log: Logger;
  tokens: TokenCipher;
  /** Keep background work alive past the response: ctx.waitUntil on Workers, a tracked set on Node. */
  defer(promise: Promise<unknown>): void;
  /** Fetch used for calls to the platforms' Graph API (the sandbox too). Defaults to global fetch. */
  platformFetch: typeof fetch;
  /** Timeout signals for those calls, shared by calls that start together (Node); absent, each call makes its own. */
  platformDeadline?: (ms: number) => AbortSignal;
  /** Area B's scene generator: Replicate when REPLICATE_API_TOKEN is set, else the local compositor. */
  generator: ImageGenerator;
  /** CPU-heavy image work, fairly shared between users (worker threads on Node; the isolate on Workers). */
  heavy: HeavyWork;
  /**
   * Says that webhook messages may have been written (the outbox rows of a state change just committed, a
   * test, a replay): the poller's sender looks at once; with QStash the new messages are queued. Optional, so
   * services built for one purpose (a thread, a tool) may leave it out; the sweep and the sender's own poll
   * find every message anyway.
   */
  kickWebhooks?: () => void;
  /** Verified API keys for a few seconds (Node); absent on Workers, whose services live for one request. */
  apiKeyCache?: ApiKeyCache;
  /**
   * What may be decoded, and what whole (src/images/limits.ts): Node sets NODE_DECODE_LIMITS, the edge
   * EDGE_DECODE_LIMITS; absent means DEFAULT_DECODE_LIMITS. Passed to every image's sniff and decode.
   */
  imageLimits?: DecodeLimits;
  /**
   * This request's inline images, decoded as its body streamed in (src/http/inline-images.ts): set on a
   * per-request copy of the services by the routes that read bodies that way, absent everywhere else.
   */
  inlineImages?: InlineImages;
}
