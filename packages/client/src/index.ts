/**
 * The typed client of the Shopkit API. The types are generated from the API's `/openapi.json`
 * (`src/generated/openapi.ts`); requests go through `openapi-fetch`, so each path, parameter, body and answer
 * is checked by the compiler, and every error answer is typed as the API's envelope
 * `{ error: { code, message, details?, requestId? } }`.
 *
 * What the client adds to plain `openapi-fetch`: the key in `Authorization`, an `Idempotency-Key` on every
 * post creation that has none (so a retried creation never posts twice), and bounded retries of 429 and 503
 * answers that honour `Retry-After`.
 *
 * @example
 * const api = createClient({ baseUrl: "http://127.0.0.1:8787", apiKey: process.env.SHOPKIT_API_KEY! });
 * const { data, error } = await api.POST("/api/qr-code/generate", { body: { type: "url", value: "https://example.com" } });
 * if (error) throw new Error(`${error.error.code}: ${error.error.message}`);
 * console.log(data.data.dataUri);
 */
import createFetchClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, paths } from "./generated/openapi.js";
import { type RetryOptions, retryingFetch } from "./retry.js";

export type { components, operations, paths, webhooks } from "./generated/openapi.js";
export { type RetryOptions, retryAfterMs } from "./retry.js";
export {
  type UntypedWebhookEvent,
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookEvent,
  type WebhookHeaders,
  WebhookVerificationError,
} from "./webhooks.js";

/** The body of every error answer. */
export type ApiError = components["schemas"]["Error"];

export interface ClientOptions {
  /** The API's origin, e.g. `https://api.example.com` or `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** An API key (`sk_…`) or an identity-provider ID token, sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Retries of 429 and 503 answers; `{ maxRetries: 0 }` turns them off. */
  retry?: RetryOptions;
  /** The `fetch` to send requests with; default `globalThis.fetch`. */
  fetch?: (request: Request) => Promise<Response>;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

/** The paths whose POST creates something that must exist once however often the request is sent. */
const IDEMPOTENT_CREATIONS = new Set<string>(["/api/v1/social/posts"] satisfies IdempotentCreation[]);
type IdempotentCreation = "/api/v1/social/posts";

/** An operation whose required `Idempotency-Key` header the client supplies, so the caller may leave it out. */
type KeySupplied<Op> = Op extends { parameters: { header: infer H extends { "Idempotency-Key": string } } }
  ? Omit<Op, "parameters"> & { parameters: Omit<Op["parameters"], "header"> & { header?: Omit<H, "Idempotency-Key"> & { "Idempotency-Key"?: string } } }
  : Op;

/** The document's paths as the client takes them: the API requires the key of a post creation; the client makes it. */
export type ClientPaths = { [P in keyof paths]: P extends IdempotentCreation ? Omit<paths[P], "post"> & { post: KeySupplied<paths[P]["post"]> } : paths[P] };

/** The client: `GET`, `POST`, `DELETE`, … of each documented path, typed from the document. */
export type ShopkitClient = Client<ClientPaths, "application/json">;

const idempotencyKeys: Middleware = {
  onRequest({ request, schemaPath }) {
    if (request.method === "POST" && IDEMPOTENT_CREATIONS.has(schemaPath) && !request.headers.has("Idempotency-Key")) {
      request.headers.set("Idempotency-Key", crypto.randomUUID());
    }
    return request;
  },
};

/**
 * A client for one deployment and one key.
 *
 * @example
 * const api = createClient({ baseUrl, apiKey });
 * const { data } = await api.GET("/api/v1/social/accounts");
 */
export function createClient(options: ClientOptions): ShopkitClient {
  const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createFetchClient<ClientPaths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    headers: { ...options.headers, ...(options.apiKey ? { Authorization: `Bearer ${options.apiKey}` } : {}) },
    fetch: retryingFetch(send, options.retry),
  });
  client.use(idempotencyKeys);
  return client;
}
