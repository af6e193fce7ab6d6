/**
 * The platform sandbox's Graph calls answered by this process's own app, without a socket: with
 * PLATFORM_SANDBOX=on and no GRAPH_API_BASE_URL, the Graph base is `${PUBLIC_BASE_URL}/sandbox/graph`, served
 * by the same app (and the same database) whichever process a socket would have reached. The request and
 * the response are the same web objects the HTTP path builds, so the Graph client cannot tell; what is saved
 * is the HTTP client and server on both ends (about a fifth of a publish's CPU on this machine). The call's
 * timeout signal still bounds the wait. Every other URL goes to `fallback`.
 *
 * @example
 * services.platformFetch = sandboxInProcess(app, `${config.publicBaseUrl}/sandbox/`, services.platformFetch);
 */
import type { Hono } from "hono";
import type { AppEnv } from "../../src/http/env";

export function sandboxInProcess(app: Hono<AppEnv>, base: string, fallback: typeof fetch): typeof fetch {
  return (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!url.startsWith(base)) return fallback(input, init);
    const request = new Request(input, withDeclaredLength(input, init));
    return new Promise<Response>((resolve, reject) => {
      const { signal } = request;
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      Promise.resolve(app.fetch(request)).then(resolve, reject);
    });
  };
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
