/**
 * Raw Graph API calls shared by both platform clients: form-encoded POSTs and query GETs with
 * `access_token`, a timeout per call, and every failure turned into a classified `PlatformError`.
 *
 * The one distinction that matters for "never post twice": a call that *publishes* and fails without a
 * definite answer (timeout, connection cut after the request went out, a gateway 5xx with no Graph body) is
 * `ambiguous`; the same failure on a read or on an invisible step is just `transient`.
 *
 * @example
 * const g: GraphTarget = { baseUrl, version: "v23.0", fetch, token, timeoutMs: 15_000 };
 * const { id } = await graphPost<{ id: string }>(g, `${pageId}/feed`, { message }, { publishes: true });
 */
import { PlatformError, classifyGraphError, describeGraphError, retryHintMs, type GraphErrorBody } from "./errors";

export interface GraphTarget {
  /** e.g. https://graph.facebook.com or http://127.0.0.1:8787/sandbox/graph (no trailing slash). */
  baseUrl: string;
  version: string;
  fetch: typeof fetch;
  token: string;
  timeoutMs: number;
  /** A signal that aborts after `ms` (Services.platformDeadline); without it each call makes its own. */
  deadline?: (ms: number) => AbortSignal;
}

export type GraphParams = Record<string, string | number | boolean | undefined>;

export async function graphGet<T>(g: GraphTarget, path: string, params: GraphParams = {}): Promise<T> {
  return send<T>(g, "GET", path, params, false);
}

/** `publishes`: true for the call that makes content visible; its unanswered failures are ambiguous. */
export async function graphPost<T>(g: GraphTarget, path: string, params: GraphParams, options: { publishes: boolean }): Promise<T> {
  return send<T>(g, "POST", path, params, options.publishes);
}

async function send<T>(g: GraphTarget, method: "GET" | "POST", path: string, params: GraphParams, publishes: boolean): Promise<T> {
  const deadline = g.deadline ? { signal: g.deadline(g.timeoutMs), clear() {} } : timeout(g.timeoutMs);
  try {
    return await exchange<T>(g, method, path, params, publishes, deadline.signal);
  } finally {
    deadline.clear();
  }
}

/**
 * A signal that aborts with a TimeoutError after `ms`, as `AbortSignal.timeout` does, and whose timer is
 * cleared once the call is over: `AbortSignal.timeout` leaves its timer until it fires or the signal is
 * collected, 15 s of timers for every call (a delivery makes one or more), and costs twice as much to set.
 */
function timeout(ms: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")), ms);
  (timer as { unref?: () => void }).unref?.();
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

async function exchange<T>(g: GraphTarget, method: "GET" | "POST", path: string, params: GraphParams, publishes: boolean, signal: AbortSignal): Promise<T> {
  const url = new URL(`${g.baseUrl}/${g.version}/${path.replace(/^\/+/, "")}`);
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined) form.set(key, String(value));
  form.set("access_token", g.token);
  const init: RequestInit = { method, signal };
  if (method === "GET") url.search = form.toString();
  else {
    init.body = form.toString();
    init.headers = { "content-type": "application/x-www-form-urlencoded" };
  }
  const where = `${method} /${path.split("?")[0]}`;

  let res: Response;
  try {
    res = await g.fetch(url.toString(), init);
  } catch (err) {
    throw networkFailure(where, err, publishes && !neverSent(err));
  }
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    // The status line arrived, the body did not: the platform may well have acted on the request.
    throw networkFailure(where, err, publishes);
  }
  const body = parseJson(text);
  const isObject = body !== null && typeof body === "object";
  const error = isObject ? ((body as { error?: GraphErrorBody }).error ?? undefined) : undefined;
  if (res.ok && isObject && !error) return body as T;

  // A gateway error, or a success we cannot read, says nothing definite about whether the post went out.
  if (!error && publishes && (res.ok || res.status >= 500)) {
    throw new PlatformError("ambiguous", `${where}: HTTP ${res.status} without a readable Graph answer; the publish may have happened.`, {
      status: res.status,
    });
  }
  const kind = res.ok ? "transient" : classifyGraphError(res.status, error);
  throw new PlatformError(kind, `${where}: ${res.ok ? "unreadable success body" : describeGraphError(res.status, error)}`, {
    status: res.status,
    code: error?.code,
    subcode: error?.error_subcode,
    fbtraceId: error?.fbtrace_id,
    retryAfterMs: retryHintMs(res.headers),
  });
}

function networkFailure(where: string, err: unknown, maybeSent: boolean): PlatformError {
  const reason = describeNetworkError(err);
  return maybeSent
    ? new PlatformError("ambiguous", `${where}: no answer (${reason}); the publish may have happened.`)
    : new PlatformError("transient", `${where}: ${reason}`);
}

/** Connection-level failures that happen before a single byte of the request leaves this process. */
const NOT_SENT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "CERT_HAS_EXPIRED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

function neverSent(err: unknown): boolean {
  const cause = (err as { cause?: { code?: string; errors?: Array<{ code?: string }> } })?.cause;
  const codes = [cause?.code, ...(cause?.errors ?? []).map((e) => e.code)].filter(Boolean) as string[];
  return codes.length > 0 && codes.every((c) => NOT_SENT_CODES.has(c));
}

function describeNetworkError(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return "timed out";
  return [e?.message, e?.cause?.code ?? e?.cause?.message].filter(Boolean).join(": ") || String(err);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
