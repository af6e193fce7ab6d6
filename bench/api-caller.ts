/**
 * JSON calls to a benchmark's server with its API key: answers the body's `data`, and throws on a status of
 * 300 or more, naming the call and the answer.
 *
 * @example
 * const call = caller(server);
 * const post = await call("POST", "/api/v1/social/posts", body, { "idempotency-key": crypto.randomUUID() });
 */
import type { ServerProcess } from "../test/helpers/server-process";

export function caller(server: ServerProcess) {
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (res.status === 204 ? { data: null } : await res.json()) as { data: any };
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
}
