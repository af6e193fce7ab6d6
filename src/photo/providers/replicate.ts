/**
 * The Replicate image generator: creates a prediction with the real `replicate` client, polls it with its
 * own backoff, cancels it on timeout or abort, copies the output into our storage (Replicate deletes it after
 * an hour) and decodes it. Portable: no node:* imports, so it runs on Node and in workerd alike.
 *
 * What it avoids in replicate@1.4.0: `run()` (resolves to null on a prediction slower than its wait window),
 * `fileEncodingStrategy: "data-uri"` (serialises the client, token included, into the input) and the
 * client's own 429 retry (back to back, ignoring Retry-After; see replicate-fetch.ts).
 *
 * @example
 * const generator = ReplicateGenerator({ token: config.replicateApiToken, storage, log });
 * const scene = await generator.generateScene(request); // RgbaImage, any size; the caller fits it
 */
import Replicate, { type Prediction } from "replicate";
import { decode, type RgbaImage } from "../../images/codecs";
import { DEFAULT_DECODE_LIMITS, type DecodeLimits } from "../../images/limits";
import { readCapped } from "../../adapters/fetch/fetch-core";
import type { Logger, PredictionState, Predictions, Storage } from "../../services";
import { GenerationError, type ImageGenerator, type SceneRequest } from "../types";
import { GenerationClock, ReplicateFetch } from "./replicate-fetch";
import { errorText, failureError, isRefusal, outputUrl, predictionTarget, rawFormat, sceneInput } from "./replicate-input";

export interface ReplicateGeneratorOptions {
  /** Replicate API token; sent only as the Authorization header to `baseUrl`, never logged. */
  token: string;
  /** Default https://api.replicate.com/v1. */
  baseUrl?: string;
  /** Fetch for the API and for downloading outputs from Replicate's delivery domain. Default global fetch. */
  fetch?: typeof fetch;
  /** Where raw outputs are copied (`photo/raw/<prediction id>.<ext>`). */
  storage: Storage;
  log: Logger;
  /** Deadline of one whole generation, rate-limit waits included. Default 180 s. */
  timeoutMs?: number;
  /** Poll backoff: first wait and the cap it grows to (x1.5 per poll, ±20 % jitter). Default 1 s → 4 s. */
  pollIntervalMs?: { initial: number; max: number };
  /** Longest 429 Retry-After worth waiting for; longer gives up with UPSTREAM_RATE_LIMITED. Default 30 s. */
  maxRateLimitWaitMs?: number;
  /** Injected sleep (tests record the waits instead of waiting). Default setTimeout. */
  sleep?: (ms: number) => Promise<void>;
  /**
   * The deployment's decode limits: of them only which decoders read an output (every PNG through ours,
   * photon or not) applies; an output's size is the model's, capped by MAX_OUTPUT_BYTES, not the inputs'
   * pixel limits (a 4K output has more pixels than the edge takes as input).
   */
  imageLimits?: DecodeLimits;
  /** The webhook signing secret when configured (REPLICATE_WEBHOOK_SECRET); else read from the API and cached. */
  webhookSecret?: string;
}

/** Largest output we download; a 4096 px PNG is well under this. */
export const MAX_OUTPUT_BYTES = 40 * 1024 * 1024;
const DOWNLOAD_TIMEOUT_MS = 60_000;
const CANCEL_TIMEOUT_MS = 10_000;
const TERMINAL = new Set(["succeeded", "failed", "canceled", "aborted"]);

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Thrown internally when our deadline passes or the caller aborts; becomes GENERATION_TIMEOUT. */
class Expired extends Error {}

/**
 * @example
 * const generator = ReplicateGenerator({ token, storage, log, timeoutMs: 120_000 });
 */
export function ReplicateGenerator(options: ReplicateGeneratorOptions): ImageGenerator {
  const fetchImpl = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => fetch(input, init));
  const timeoutMs = options.timeoutMs ?? 180_000;
  const poll = options.pollIntervalMs ?? { initial: 1_000, max: 4_000 };
  const log = options.log;

  async function generateScene(request: SceneRequest): Promise<RgbaImage> {
    const target = predictionTarget(request.model.modelId);
    const controller = new AbortController();
    const onAbort = () => controller.abort(new Expired("aborted by the caller"));
    if (request.signal?.aborted) onAbort();
    request.signal?.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(() => controller.abort(new Expired("deadline")), timeoutMs);
    const clock = GenerationClock(options.sleep ?? realSleep, timeoutMs, controller.signal);
    const { fetch: apiFetch, stats } = ReplicateFetch({ fetch: fetchImpl, clock, log, maxRateLimitWaitMs: options.maxRateLimitWaitMs ?? 30_000 });
    // Strings only in the input, so the default strategy uploads nothing; never "data-uri" (it leaks the token).
    const client = new Replicate({ auth: options.token, baseUrl: options.baseUrl, fetch: apiFetch, fileEncodingStrategy: "default", useFileOutput: false });
    const context = { model: request.model.modelId, resolution: request.resolution, aspectRatio: request.aspectRatio };
    let prediction: Prediction | undefined;
    let polls = 0;
    try {
      prediction = await client.predictions.create({ ...target, input: sceneInput(request), signal: controller.signal });
      log.info("replicate prediction created", {
        ...context,
        predictionId: prediction.id,
        status: prediction.status,
        requests: stats.requests,
        rateLimited: stats.rateLimited,
      });
      const done = await awaitPrediction(client, prediction, clock, poll, controller.signal, (latest) => {
        prediction = latest;
        polls += 1;
      });
      const fields = {
        ...context,
        predictionId: done.id,
        status: done.status,
        polls,
        requests: stats.requests,
        elapsedMs: clock.elapsedMs(),
        predictTime: done.metrics?.predict_time,
      };
      if (done.status !== "succeeded") {
        log.warn("replicate prediction not succeeded", { ...fields, error: errorText(done.error) });
        if (done.status === "failed") throw failureError(done.error);
        // We cancel only on our way out, so a canceled or aborted prediction here was stopped by Replicate:
        // by our Cancel-After when our deadline is near, otherwise by someone else (the dashboard, an operator).
        if (clock.elapsedMs() >= timeoutMs * 0.9) throw timeoutError(false, timeoutMs);
        throw new GenerationError("GENERATION_FAILED", "The image model's provider stopped this prediction before it finished; try again.", true);
      }
      const url = outputUrl(done.output);
      if (!url) {
        log.warn("replicate prediction without output", fields);
        throw new GenerationError("GENERATION_FAILED", "The image model finished without an image; try again, or change the prompt.", true);
      }
      const image = await copyAndDecode(
        { fetch: fetchImpl, storage: options.storage, log, timeoutMs, limits: outputLimits(options.imageLimits) },
        done.id,
        url,
        request.signal,
      );
      // Models do not always honour aspect_ratio; the caller crops to size, but a big miss is worth knowing.
      const skew = Math.abs(image.width / image.height / (request.width / request.height) - 1);
      const level = skew > 0.02 ? "warn" : "info";
      log[level]("replicate prediction done", {
        ...fields,
        width: image.width,
        height: image.height,
        wanted: `${request.width}x${request.height}`,
        elapsedMs: clock.elapsedMs(),
      });
      return image;
    } catch (error) {
      // Whatever went wrong, a prediction still running would go on costing money: stop it.
      const canceled = prediction && !TERMINAL.has(prediction.status) ? await cancelQuietly(client, prediction.id, log) : false;
      const fields = {
        ...context,
        predictionId: prediction?.id,
        polls,
        requests: stats.requests,
        rateLimited: stats.rateLimited,
        canceled,
        elapsedMs: clock.elapsedMs(),
      };
      if (!(error instanceof GenerationError) && clock.expired()) {
        const byCaller = request.signal?.aborted === true;
        log.warn("replicate prediction stopped", { ...fields, reason: byCaller ? "caller aborted" : "deadline" });
        throw timeoutError(byCaller, timeoutMs);
      }
      throw classify(error, fields, log);
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener("abort", onAbort);
    }
  }

  const context = (request: SceneRequest) => ({ model: request.model.modelId, resolution: request.resolution, aspectRatio: request.aspectRatio });
  /** A client for one step, with its own deadline for rate-limit waits and retries. */
  const stepClient = (stepMs: number, signal: AbortSignal) => {
    const clock = GenerationClock(options.sleep ?? realSleep, stepMs, signal);
    const { fetch: apiFetch, stats } = ReplicateFetch({ fetch: fetchImpl, clock, log, maxRateLimitWaitMs: options.maxRateLimitWaitMs ?? 30_000 });
    const client = new Replicate({ auth: options.token, baseUrl: options.baseUrl, fetch: apiFetch, fileEncodingStrategy: "default", useFileOutput: false });
    return { client, clock, stats };
  };

  const predictions: Predictions = {
    async create(request, { webhook } = {}) {
      const target = predictionTarget(request.model.modelId);
      // The step's clock sets Cancel-After: Replicate stops the prediction at the generation's deadline.
      const { client, stats } = stepClient(timeoutMs, request.signal ?? new AbortController().signal);
      try {
        const created = await client.predictions.create({
          ...target,
          input: sceneInput(request),
          ...(webhook ? { webhook, webhook_events_filter: ["completed"] } : {}),
          signal: request.signal,
        });
        log.info("replicate prediction created", { ...context(request), predictionId: created.id, status: created.status, webhook: !!webhook });
        return stateOf(created);
      } catch (error) {
        throw classify(error, { ...context(request), requests: stats.requests, rateLimited: stats.rateLimited }, log);
      }
    },

    async get(id, signal) {
      const { client, stats } = stepClient(60_000, signal ?? new AbortController().signal);
      try {
        return stateOf(await client.predictions.get(id, { signal }));
      } catch (error) {
        throw classify(error, { predictionId: id, requests: stats.requests }, log);
      }
    },

    async find(request, since) {
      const { client, stats } = stepClient(60_000, request.signal ?? new AbortController().signal);
      // Replicate's clock and ours may differ a little.
      const from = since.getTime() - 60_000;
      try {
        let pages = 0;
        for await (const page of client.paginate(() => client.predictions.list())) {
          for (const p of page) {
            const images = (p.input as { image_input?: unknown } | undefined)?.image_input;
            if (Array.isArray(images) && images[0] === request.product.url && Date.parse(p.created_at) >= from) {
              log.info("replicate prediction found again", { ...context(request), predictionId: p.id, status: p.status });
              return stateOf(p);
            }
          }
          // Newest first: a page reaching back before `since` is the last one worth reading.
          const oldest = page.at(-1);
          if (!oldest || Date.parse(oldest.created_at) < from) return null;
          if (++pages >= MAX_LIST_PAGES) {
            log.warn("replicate prediction search stopped before reaching the create's time", { ...context(request), pages, since: since.toISOString() });
            return null;
          }
        }
        return null;
      } catch (error) {
        throw classify(error, { ...context(request), requests: stats.requests }, log);
      }
    },

    async wait(prediction, signal) {
      if (TERMINAL.has(prediction.status)) return prediction;
      const controller = new AbortController();
      const onAbort = () => controller.abort(new Expired("aborted by the caller"));
      if (signal?.aborted) onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      const timer = setTimeout(() => controller.abort(new Expired("deadline")), timeoutMs);
      const { client, clock } = stepClient(timeoutMs, controller.signal);
      let latest = prediction as Prediction | PredictionState;
      try {
        const done = await awaitPrediction(client, latest as Prediction, clock, poll, controller.signal, (p) => {
          latest = p;
        });
        return stateOf(done);
      } catch (error) {
        if (error instanceof GenerationError) throw error;
        if (clock.expired()) {
          // Our deadline, not the caller's going away: the prediction would go on costing money, so stop it.
          const byCaller = signal?.aborted === true;
          if (!byCaller) await cancelQuietly(client, prediction.id, log);
          log.warn("replicate prediction stopped", { predictionId: prediction.id, reason: byCaller ? "caller aborted" : "deadline" });
          throw timeoutError(byCaller, timeoutMs);
        }
        throw classify(error, { predictionId: prediction.id }, log);
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      }
    },

    async scene(prediction, signal) {
      if (prediction.status !== "succeeded") {
        log.warn("replicate prediction not succeeded", { predictionId: prediction.id, status: prediction.status, error: errorText(prediction.error) });
        if (prediction.status === "failed") throw failureError(prediction.error);
        if (prediction.status === "canceled" || prediction.status === "aborted") {
          // Cancel-After stops a prediction at the generation's deadline; someone else (the dashboard) otherwise.
          throw new GenerationError("GENERATION_TIMEOUT", "The image model did not finish in time, or its provider stopped it; try again.", true);
        }
        throw new GenerationError("GENERATION_FAILED", "The image model has not finished this scene.", true);
      }
      const url = outputUrl(prediction.output);
      if (!url) {
        log.warn("replicate prediction without output", { predictionId: prediction.id });
        throw new GenerationError("GENERATION_FAILED", "The image model finished without an image; try again, or change the prompt.", true);
      }
      return copyAndDecode(
        { fetch: fetchImpl, storage: options.storage, log, timeoutMs, limits: outputLimits(options.imageLimits) },
        prediction.id,
        url,
        signal,
      );
    },

    async webhookSecret({ fresh = false } = {}) {
      if (options.webhookSecret) return options.webhookSecret;
      const key = `${options.baseUrl ?? ""} ${options.token}`;
      let kept = secrets.get(key);
      if (!kept || (fresh && Date.now() - kept.at > SECRET_REFRESH_MS)) {
        const { client } = stepClient(30_000, new AbortController().signal);
        const secret = client.webhooks.default.secret.get().then((s) => s.key);
        const entry = { secret, at: Date.now() };
        secrets.set(key, entry);
        secret.catch(() => secrets.get(key) === entry && secrets.delete(key));
        kept = entry;
      }
      return kept.secret;
    },
  };

  return { name: "replicate", generateScene, predictions };
}

/**
 * Pages of the prediction list read to find a prediction whose create's answer was lost. Replicate lists an
 * account's predictions newest first, 100 a page, with no filter by input, so the search reaches a lost create
 * while at most this many hundred of the account's predictions were made after it, until the retry (a
 * synchronous request's retry comes after its 30 s hold, an async job's runner after its 60 s one).
 */
const MAX_LIST_PAGES = 10;

/** The webhook signing secret read from Replicate, per API root and token, for the life of the process or isolate. */
const secrets = new Map<string, { secret: Promise<string>; at: number }>();
/** A kept secret is read again, for a webhook it does not verify, at most this often. */
export const SECRET_REFRESH_MS = 10_000;

function stateOf(p: Prediction): PredictionState {
  return { id: p.id, status: p.status as PredictionState["status"], output: p.output, error: p.error };
}

function timeoutError(byCaller: boolean, timeoutMs: number): GenerationError {
  const message = byCaller
    ? "The image generation was stopped before the model finished."
    : `The image model did not finish within ${Math.round(timeoutMs / 1000)} s; try again, or pick a faster model or a lower resolution.`;
  return new GenerationError("GENERATION_TIMEOUT", message, true);
}

/** The deployment's choice of decoders for an output, without its pixel limits for inputs. */
function outputLimits(limits: DecodeLimits = DEFAULT_DECODE_LIMITS): DecodeLimits {
  return { ...DEFAULT_DECODE_LIMITS, streamedPngPixels: limits.streamedPngPixels, photon: limits.photon };
}

/** Best-effort cancel on a fresh signal (ours has fired by now); Cancel-After backs it up. */
async function cancelQuietly(client: Replicate, predictionId: string, log: Logger): Promise<boolean> {
  try {
    await client.predictions.cancel(predictionId, { signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS) });
    return true;
  } catch (error) {
    log.warn("replicate cancel failed", { predictionId, error: error instanceof Error ? error.name : "unknown" });
    return false;
  }
}

interface OutputDeps {
  fetch: typeof fetch;
  storage: ReplicateGeneratorOptions["storage"];
  log: Logger;
  /** Which decoders read the output (outputLimits). */
  limits: DecodeLimits;
  timeoutMs: number;
}

/** Downloads the output (capped, with a timeout), stores the raw bytes, then decodes them. */
async function copyAndDecode(
  { fetch: fetchImpl, storage, log, timeoutMs, limits }: OutputDeps,
  predictionId: string,
  url: string,
  callerSignal: AbortSignal | undefined,
): Promise<RgbaImage> {
  const signals = [AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS), ...(callerSignal ? [callerSignal] : [])];
  let bytes: Uint8Array;
  try {
    // No Authorization header: delivery URLs are public, and the token belongs to the API host only.
    const response = await fetchImpl(url, { signal: AbortSignal.any(signals) });
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      throw new GenerationError("UPSTREAM_UNAVAILABLE", "The generated image could not be downloaded from the model's provider; try again.", true);
    }
    bytes = await readCapped(
      response,
      MAX_OUTPUT_BYTES,
      () => new GenerationError("GENERATION_FAILED", `The generated image is larger than ${MAX_OUTPUT_BYTES / 1024 / 1024} MB; pick a lower resolution.`),
    );
  } catch (error) {
    if (error instanceof GenerationError) throw error;
    if (callerSignal?.aborted) throw timeoutError(true, timeoutMs);
    log.warn("replicate output download failed", { predictionId, error: error instanceof Error ? error.name : "unknown" });
    throw new GenerationError("UPSTREAM_UNAVAILABLE", "The generated image could not be downloaded from the model's provider; try again.", true);
  }
  const format = rawFormat(bytes);
  if (!format) throw new GenerationError("GENERATION_FAILED", "The image model returned something that is not a PNG, JPEG or WebP image; try again.", true);
  await storage.put(`photo/raw/${predictionId}.${format.ext}`, bytes, format.contentType);
  try {
    return decode(bytes, { limits });
  } catch (error) {
    log.warn("replicate output not decodable", { predictionId, bytes: bytes.length, error: error instanceof Error ? error.message : "unknown" });
    throw new GenerationError("GENERATION_FAILED", "The image model returned an image this service cannot read; try again, or pick a lower resolution.", true);
  }
}

/** Maps client and network errors; ApiError (non-2xx other than 429) carries the status. */
function classify(error: unknown, fields: Record<string, unknown>, log: Logger): GenerationError {
  if (error instanceof GenerationError) return error;
  const status = apiStatus(error);
  log.warn("replicate request failed", { ...fields, status, error: error instanceof Error ? error.name : "unknown" });
  if (status === 401 || status === 403) {
    return new GenerationError(
      "UPSTREAM_UNAVAILABLE",
      "The image model's provider refused this service's credentials; the operator has to fix the configuration.",
    );
  }
  if (status !== undefined && status >= 400 && status < 500) {
    const text = error instanceof Error ? error.message : "";
    if (isRefusal(text)) return failureError(text);
    return new GenerationError("GENERATION_FAILED", "The image model's provider rejected the request for this scene.");
  }
  return new GenerationError("UPSTREAM_UNAVAILABLE", "The image model's provider is unavailable; try again shortly.", true);
}

/** Polls (1 s growing by half to `poll.max`, jittered) until the prediction ends or the deadline passes. */
async function awaitPrediction(
  client: Replicate,
  created: Prediction,
  clock: ReturnType<typeof GenerationClock>,
  poll: { initial: number; max: number },
  signal: AbortSignal,
  onPoll: (latest: Prediction) => void,
): Promise<Prediction> {
  let prediction = created;
  let interval = poll.initial;
  while (!TERMINAL.has(prediction.status)) {
    if (clock.expired()) throw new Expired("deadline");
    await clock.sleep(Math.min(jitter(interval), clock.remainingMs()));
    if (clock.expired()) throw new Expired("deadline");
    interval = Math.min(interval * 1.5, poll.max);
    prediction = await client.predictions.get(prediction.id, { signal });
    onPoll(prediction);
  }
  return prediction;
}

/** The HTTP status of the client's ApiError (duck-typed: the package exports it as a type only). */
function apiStatus(error: unknown): number | undefined {
  const response = (error as { response?: unknown } | null)?.response;
  return response instanceof Response ? response.status : undefined;
}

const jitter = (ms: number) => Math.round(ms * (0.8 + Math.random() * 0.4));
