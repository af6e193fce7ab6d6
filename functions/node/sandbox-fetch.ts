/**
 * The platform sandbox's Graph calls answered by this process's own app, without a socket: with
 * PLATFORM_SANDBOX=on and no GRAPH_API_BASE_URL, the Graph base is `${PUBLIC_BASE_URL}/sandbox/graph`, served
 * by the same app (and the same database) whichever process a socket would have reached. What is saved is the
 * HTTP client and server on both ends, a large share of a publish's CPU (docs/performance.md). The call's
 * timeout signal still bounds the wait. Every other URL goes to `fallback`.
 *
 * The request is an `InProcessRequest` when the call gives a URL and a string body (or none), as the Graph
 * client does: the method, URL, headers and body text Hono and the sandbox's routes read, with the web
 * `Request` (undici's, which makes a stream of the body for the route to read back) built only if something
 * asks for more, since building it for every call costs a publish noticeable CPU. The Graph routes' JSON
 * answers come back the same way, as an `InProcessResponse` (the app's env carries `inProcessAnswer`): undici's
 * `Response` would make a stream of the text for the client to read back at once. Both are `instanceof` the web
 * classes and build the real object if anything asks for more, so the Graph client cannot tell.
 *
 * @example
 * answerSandboxInProcess(services, () => app); // where the Graph base is this process's own sandbox
 */
import type { Hono } from "hono";
import type { AppEnv } from "../../src/http/env";
import type { Services } from "../../src/services";
import type { InProcessAnswer } from "../../src/social/sandbox/graph-common";

/**
 * With the sandbox on and no GRAPH_API_BASE_URL (the Graph base is this process's own /sandbox/graph), the
 * services' Graph calls go to the app `appFor` makes, in process; otherwise nothing changes (and no app is made).
 */
export function answerSandboxInProcess(services: Services, appFor: () => Hono<AppEnv>): void {
  const { config } = services;
  if (config.graph.sandbox && !config.graph.baseUrl)
    services.platformFetch = sandboxInProcess(appFor(), `${config.publicBaseUrl}/sandbox/`, services.platformFetch);
}

export function sandboxInProcess(app: Hono<AppEnv>, base: string, fallback: typeof fetch): typeof fetch {
  return (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!url.startsWith(base)) return fallback(input, init);
    const request = inProcessRequest(input, init) ?? new Request(input, withDeclaredLength(input, init));
    return new Promise<Response>((resolve, reject) => {
      const { signal } = request;
      if (signal.aborted) return reject(signal.reason);
      // Removed when the app has answered: the signal may be shared with other calls (functions/node/deadlines.ts).
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      Promise.resolve(app.fetch(request, IN_PROCESS_ENV))
        .then(resolve, reject)
        .finally(() => signal.removeEventListener("abort", onAbort));
    });
  };
}

/** The app's env for a call from this process: the Graph routes answer JSON through it (graph.ts). */
const IN_PROCESS_ENV: { inProcessAnswer: InProcessAnswer } = {
  inProcessAnswer: (json, status) => new InProcessResponse(json, status) as unknown as Response,
};

/**
 * What the Graph client reads of a response (status, ok, headers, and the body as text or JSON) held as given,
 * the JSON never made into a stream; anything else of `Response` comes from a web Response built from the same
 * parts on first use. `instanceof Response` holds.
 */
class InProcessResponse {
  #real: Response | null = null;
  #headers: Headers | null = null;

  constructor(
    private readonly bodyText: string,
    readonly status: number,
  ) {}

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  get headers(): Headers {
    return (this.#headers ??= new Headers({ "content-type": "application/json" }));
  }

  text(): Promise<string> {
    return Promise.resolve(this.bodyText);
  }

  json(): Promise<unknown> {
    return this.text().then((text) => JSON.parse(text));
  }

  /** The web Response with the same parts, made once. */
  real(): Response {
    return (this.#real ??= new Response(this.bodyText, { status: this.status, headers: this.headers }));
  }
}

delegateToReal(
  InProcessResponse,
  Response,
  ["body", "bodyUsed", "redirected", "statusText", "type", "url"],
  ["arrayBuffer", "blob", "bytes", "clone", "formData"],
);

/** A light request for a URL with a string body or none; null for anything else (a Request, a stream, a form). */
function inProcessRequest(input: RequestInfo | URL, init: RequestInit | undefined): Request | null {
  if (input instanceof Request) return null;
  const body = init?.body ?? null;
  if (body !== null && typeof body !== "string") return null;
  const headers = new Headers(init?.headers);
  if (body !== null) {
    if (!headers.has("content-type")) headers.set("content-type", "text/plain;charset=UTF-8");
    if (!headers.has("content-length")) headers.set("content-length", String(Buffer.byteLength(body)));
  }
  return new InProcessRequest(
    String(input),
    (init?.method ?? "GET").toUpperCase(),
    headers,
    init?.signal ?? new AbortController().signal,
    body,
  ) as unknown as Request;
}

/**
 * What Hono reads of a request (method, url, headers, signal, and the body as text, JSON or bytes) held as
 * given; anything else of `Request` (the body as a stream, formData, clone, …) comes from a web Request built
 * from the same parts on first use. `instanceof Request` holds.
 */
class InProcessRequest {
  #real: Request | null = null;

  constructor(
    readonly url: string,
    readonly method: string,
    readonly headers: Headers,
    readonly signal: AbortSignal,
    private readonly bodyText: string | null,
  ) {}

  text(): Promise<string> {
    return Promise.resolve(this.bodyText ?? "");
  }

  json(): Promise<unknown> {
    return this.text().then((text) => JSON.parse(text));
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = new TextEncoder().encode(this.bodyText ?? "");
    return Promise.resolve(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  }

  /** The web Request with the same parts, made once. */
  real(): Request {
    return (this.#real ??= new Request(this.url, { method: this.method, headers: this.headers, body: this.bodyText, signal: this.signal }));
  }
}

delegateToReal(
  InProcessRequest,
  Request,
  ["body", "bodyUsed", "cache", "credentials", "destination", "integrity", "keepalive", "mode", "redirect", "referrer", "referrerPolicy", "duplex"],
  ["blob", "bytes", "clone", "formData"],
);

/**
 * Gives a light class the rest of the web class it stands for: each of `getters` and `methods` that the web
 * class has (Node's undici may lack a newer one) is read from, or called on, the instance's `real()`; and the
 * web class's prototype is its prototype's, so `instanceof` holds.
 */
function delegateToReal(light: { prototype: { real(): object } }, web: { prototype: object }, getters: string[], methods: string[]): void {
  const has = (name: string) => name in web.prototype;
  for (const name of getters.filter(has)) {
    Object.defineProperty(light.prototype, name, {
      get(this: { real(): object }) {
        return (this.real() as Record<string, unknown>)[name];
      },
    });
  }
  for (const name of methods.filter(has)) {
    Object.defineProperty(light.prototype, name, {
      value(this: { real(): object }, ...args: unknown[]) {
        const real = this.real() as Record<string, (...a: unknown[]) => unknown>;
        return real[name]!.apply(real, args);
      },
    });
  }
  Object.setPrototypeOf(light.prototype, web.prototype);
}

/**
 * A string body with the Content-Length an HTTP client sends with it (undici's fetch does; `new Request` alone
 * does not). Without it the sandbox's body limit took the body for chunked and read it through a counting
 * stream into a new Request before the route read it again.
 */
function withDeclaredLength(input: RequestInfo | URL, init: RequestInit | undefined): RequestInit | undefined {
  if (typeof init?.body !== "string") return init;
  // Headers given in `init` replace a Request input's own, so start from those when `init` has none.
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  if (!headers.has("content-length")) headers.set("content-length", String(Buffer.byteLength(init.body)));
  return { ...init, headers };
}
