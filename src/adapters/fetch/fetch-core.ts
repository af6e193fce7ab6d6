/**
 * The part of the safe fetch both runtimes share: URL checks, no redirects, status and type checks, a
 * streaming size cap and one deadline covering headers and body. Each twin supplies only how to send the
 * request (Workers fetch, or undici with an address-checking DNS lookup).
 */
import { concat } from "../../lib/encoding";
import { ApiError } from "../../lib/errors";
import type { FetchedImage, SafeFetcher, WebhookAnswer, WebhookRequest } from "../../services";
import { MAX_IMAGE_BYTES } from "../../images/sniff";
import { allowedOrigins, checkImageUrl, checkWebhookUrl, type TestAllowance } from "./url-policy";

export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/**
 * How a runtime sends a webhook POST, without following redirects: the answer's status and Retry-After, its
 * body read up to `maxAnswerBytes` and dropped. Rejects on a network failure or when `signal` aborts.
 */
export type WebhookPost = (
  url: string,
  init: { headers: Record<string, string>; body: string; signal: AbortSignal; maxAnswerBytes: number },
) => Promise<WebhookAnswer>;

export interface SafeFetchOptions {
  /** Default cap when the caller gives none. Default 10 MB. */
  maxBytes?: number;
  /** Default deadline for headers and body together. Default 10 s. */
  timeoutMs?: number;
  /** Test-only allowance; see TestAllowance. */
  testAllow?: TestAllowance;
  /** Webhook endpoints on loopback addresses are allowed (WEBHOOK_ALLOW_LOOPBACK). */
  allowLoopbackWebhooks?: boolean;
  /** Sends webhook POSTs; by default through `send` (fetch). */
  postWebhook?: WebhookPost;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** Content types that can carry an image whose real format we then sniff from the bytes. */
function acceptableType(contentType: string | null): boolean {
  if (!contentType) return true;
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  return type === "" || type.startsWith("image/") || type === "application/octet-stream" || type === "binary/octet-stream";
}

/**
 * Builds a SafeFetcher around a runtime's `send`.
 *
 * @example
 * const fetcher = createSafeFetcher((url, init) => fetch(url, init), { timeoutMs: 5000 });
 */
export function createSafeFetcher(send: FetchLike, options: SafeFetchOptions = {}): SafeFetcher {
  const allowed = allowedOrigins(options.testAllow);
  return {
    async fetchBytes(rawUrl, call = {}) {
      const url = checkImageUrl(rawUrl, allowed);
      const maxBytes = call.maxBytes ?? options.maxBytes ?? MAX_IMAGE_BYTES;
      const timeoutMs = call.timeoutMs ?? options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const controller = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, timeoutMs);
      try {
        return await fetchChecked(send, url, maxBytes, controller);
      } catch (err) {
        if (timedOut) throw new ApiError("INVALID_IMAGE_URL", `The image URL did not deliver the image within ${formatSeconds(timeoutMs)}.`);
        throw toApiError(err);
      } finally {
        clearTimeout(timer);
      }
    },
    postWebhook: (request) => postWebhook(options.postWebhook ?? fetchPost(send), request, options.allowLoopbackWebhooks ?? false),
  };
}

/** A receiver's answer body is read (so the connection can be reused) up to this much, then dropped. */
const WEBHOOK_ANSWER_BYTES = 64 * 1024;

/** A webhook POST through fetch (`redirect: "manual"`: a redirect is its 3xx, or 302 when the runtime hides it). */
function fetchPost(send: FetchLike): WebhookPost {
  return async (url, init) => {
    const response = await send(url, {
      method: "POST",
      redirect: "manual",
      signal: init.signal,
      headers: init.headers,
      body: init.body,
    });
    const status = response.type === "opaqueredirect" ? 302 : response.status;
    const retryAfter = response.headers.get("retry-after");
    await readCapped(response, init.maxAnswerBytes, () => new Error("answer too large")).catch(() => undefined);
    return { status, retryAfter };
  };
}

async function postWebhook(post: WebhookPost, request: WebhookRequest, allowLoopback: boolean): Promise<WebhookAnswer> {
  let url: URL;
  try {
    url = checkWebhookUrl(request.url, allowLoopback);
  } catch (err) {
    throw new Error(err instanceof Error ? err.message : "the URL is not allowed");
  }
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, request.timeoutMs);
  try {
    return await post(url.href, {
      headers: { "content-type": "application/json", "user-agent": "shopkit-webhooks/1", ...request.headers },
      body: request.body,
      signal: controller.signal,
      maxAnswerBytes: WEBHOOK_ANSWER_BYTES,
    });
  } catch (err) {
    if (timedOut) throw new Error(`no answer within ${formatSeconds(request.timeoutMs)}`);
    const cause = toApiError(err);
    throw new Error(cause.message.replace("The image URL could not be fetched: ", "").replace(/^The image URL's host/, "the host"));
  } finally {
    clearTimeout(timer);
  }
}

async function fetchChecked(send: FetchLike, url: URL, maxBytes: number, controller: AbortController): Promise<FetchedImage> {
  const response = await send(url.href, {
    method: "GET",
    redirect: "manual",
    signal: controller.signal,
    headers: { accept: "image/jpeg,image/png,image/webp;q=0.9,*/*;q=0.1", "user-agent": "shopkit-image-fetch/1" },
  });
  const status = response.status;
  if (response.type === "opaqueredirect" || (status >= 300 && status < 400)) {
    await discard(response);
    throw new ApiError(
      "INVALID_IMAGE_URL",
      `The image URL answered with a redirect${status ? ` (HTTP ${status})` : ""}; redirects are not followed. Give the final URL of the image.`,
    );
  }
  if (status < 200 || status > 299) {
    await discard(response);
    throw new ApiError("INVALID_IMAGE_URL", `The image URL answered HTTP ${status}; it must answer 200 with the image.`);
  }
  const contentType = response.headers.get("content-type");
  if (!acceptableType(contentType)) {
    await discard(response);
    throw new ApiError("INVALID_IMAGE_URL", `The image URL answered with content type ${contentType!.split(";")[0]!.trim().slice(0, 60)}, not an image.`);
  }
  const declared = Number(response.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    controller.abort();
    await discard(response);
    throw tooLarge(maxBytes);
  }
  const bytes = await readCapped(response, maxBytes, () => tooLarge(maxBytes), controller);
  return { bytes, contentType };
}

/**
 * Reads a body (a fetch's response, or a request's), refusing it (the error `tooLarge` makes) as soon as it
 * passes `maxBytes`: a missing or lying Content-Length is no help, so the count is kept while streaming.
 * `controller`, when given, aborts the fetch.
 *
 * @example
 * const bytes = await readCapped(response, 40 * 1024 * 1024, () => new Error("too large"));
 */
export async function readCapped(
  response: Pick<Response, "headers" | "body">,
  maxBytes: number,
  tooLarge: () => Error,
  controller?: AbortController,
): Promise<Uint8Array> {
  if (Number(response.headers.get("content-length") ?? 0) > maxBytes) {
    controller?.abort();
    await discard(response);
    throw tooLarge();
  }
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      controller?.abort();
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  return chunks.length === 0 ? new Uint8Array(0) : concat(chunks);
}

async function discard(response: Pick<Response, "body">): Promise<void> {
  await response.body?.cancel().catch(() => undefined);
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError("PAYLOAD_TOO_LARGE", `The image at the URL is larger than ${formatSize(maxBytes)}.`);
}

/** Keeps our own ApiErrors (also when a runtime wraps them as `cause`), and words network failures. */
function toApiError(err: unknown): ApiError {
  for (let e: unknown = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ApiError) return e;
  }
  const code = networkCode(err);
  const reason =
    code === "ENOTFOUND" || code === "EAI_AGAIN"
      ? "its host name could not be resolved"
      : code === "ECONNREFUSED"
        ? "the server refused the connection"
        : code === "ECONNRESET" || code === "UND_ERR_SOCKET"
          ? "the connection was closed unexpectedly"
          : code === "UND_ERR_CONNECT_TIMEOUT"
            ? "connecting to the server timed out"
            : code && /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/i.test(code)
              ? "its TLS certificate is not valid"
              : "the request failed";
  return new ApiError("INVALID_IMAGE_URL", `The image URL could not be fetched: ${reason}.`, { cause: err });
}

function networkCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return undefined;
}

function formatSize(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MB` : `${bytes} bytes`;
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} seconds` : `${ms} ms`;
}
