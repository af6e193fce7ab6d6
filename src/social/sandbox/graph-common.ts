/**
 * Shared plumbing of the sandbox Graph routes: parameters from the query and a form or JSON body (Graph
 * takes either), the access-token check, faults, and the "lost answer" of an ambiguous fault.
 */
import type { Context } from "hono";
import type { AppEnv } from "../../http/env";
import { GRAPH_ERRORS, faultError, graphError, type FaultKind } from "./graph-errors";
import { linkedPhotoAccount } from "./pages";
import * as store from "./store";

export type Params = Record<string, string | undefined>;

export interface Caller {
  /** Whose sandbox the token speaks in. */
  owner: string;
  accountId: string;
  platform: "pageplatform" | "photoplatform";
}

/**
 * How a call from this process is answered (functions/node/sandbox-fetch.ts passes it as the app's env): the JSON
 * text and status as a light response, which the Graph client reads as it reads a web `Response`.
 */
export type InProcessAnswer = (json: string, status: number) => Response;

/** The in-process caller's way to answer, or null for a call over HTTP. */
export function inProcessAnswer(c: Context<AppEnv>): InProcessAnswer | null {
  const answer = (c.env as { inProcessAnswer?: unknown } | undefined)?.inProcessAnswer;
  return typeof answer === "function" ? (answer as InProcessAnswer) : null;
}

/** How long a `slow` fault holds a publish: long enough to widen a crash window, short of any timeout. */
export const SLOW_MS = 1500;

/**
 * The request's parameters (query, and a form or JSON body), read once per request: the input check and the
 * route both ask. Callers must not change the object.
 */
export function readParams(c: Context<AppEnv>): Promise<Params> {
  let params = paramsOf.get(c.req);
  if (!params) paramsOf.set(c.req, (params = parseParams(c)));
  return params;
}

const paramsOf = new WeakMap<object, Promise<Params>>();

async function parseParams(c: Context<AppEnv>): Promise<Params> {
  const params: Params = { ...c.req.query() };
  if (c.req.method !== "POST") return params;
  const type = c.req.header("content-type") ?? "";
  if (type.includes("application/json")) {
    const body = (await c.req.json().catch(() => ({}))) as Record<string, unknown>;
    for (const [k, v] of Object.entries(body ?? {})) params[k] = typeof v === "string" ? v : JSON.stringify(v);
  } else if (type.includes("application/x-www-form-urlencoded")) {
    // What the Graph client sends: read as text, not through parseBody (which builds a web Response and its
    // stream to run formData() on it, for every publish). A repeated name keeps its last value, as there.
    const body = await c.req.text().catch(() => "");
    for (const [k, v] of new URLSearchParams(body)) params[k] = v;
  } else {
    const body = await c.req.parseBody().catch(() => ({}));
    for (const [k, v] of Object.entries(body)) if (typeof v === "string") params[k] = v;
  }
  return params;
}

/** Longest parameter the sandbox takes (a page caption is at most 63,206 characters; URLs and ids far less). */
const MAX_PARAM_CHARS = 70_000;
const MAX_SEGMENT_CHARS = 200;

/**
 * Why the request cannot be stored or looked up, or null: NUL (Postgres text cannot hold it) and other
 * control characters in the path or any parameter name or value, a lone UTF-16 surrogate (a JSON body's
 * "\ud800"; PostgreSQL's text and JSON cannot hold it), and lengths past what the platform takes. Graph
 * answers such requests with its invalid-parameter error, so the sandbox does too, never a 500.
 */
export function hostileInput(c: Context<AppEnv>, params: Params): string | null {
  const bad = (s: string) => /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(s) || !s.isWellFormed();
  for (const segment of c.req.path.split("/")) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return "path";
    }
    if (bad(decoded) || decoded.length > MAX_SEGMENT_CHARS) return "path";
  }
  for (const [name, value] of Object.entries(params)) {
    if (bad(name) || name.length > MAX_SEGMENT_CHARS) return "parameter name";
    if (value !== undefined && (bad(value) || value.length > MAX_PARAM_CHARS)) return name;
  }
  return null;
}

/** The token's account, or the Graph error to answer: 190 for an unknown token, 200 for someone else's object. */
export async function authorize(c: Context<AppEnv>, params: Params, objectAccountId: string | null): Promise<Caller | Response> {
  const bearer = /^(?:Bearer|OAuth)\s+(\S+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
  const token = params.access_token ?? bearer;
  const platform = token ? store.platformOfToken(token) : null;
  const account = token && platform ? await store.tokenAccount(c.get("services").db, token) : null;
  if (!token || !platform || !account) return graphError(c, GRAPH_ERRORS.badToken);
  const { owner, platformAccountId: accountId } = account;
  // A page's token also speaks for the photoplatform account linked to that page, as on the platform.
  if (objectAccountId !== null && platform === "pageplatform" && objectAccountId === linkedPhotoAccount(accountId)) {
    return { owner, accountId: objectAccountId, platform: "photoplatform" };
  }
  if (objectAccountId !== null && objectAccountId !== accountId) return graphError(c, GRAPH_ERRORS.noPermission);
  return { owner, accountId, platform: platform as Caller["platform"] };
}

/** The caller's account as the store names it. */
export function callerAccount(caller: Caller): store.SandboxAccount {
  return { owner: caller.owner, platformAccountId: caller.accountId };
}

/**
 * Consumes the account's next fault, if any: an error to answer now, a delay (`slow`), or a publish whose
 * answer must be lost after it is committed (`ambiguous`).
 */
export async function applyFault(c: Context<AppEnv>, caller: Caller): Promise<{ response?: Response; loseAnswer: boolean }> {
  const kind = await store.takeFault(c.get("services").db, { owner: caller.owner, platformAccountId: caller.accountId });
  return kind ? faultOutcome(c, caller, kind) : { loseAnswer: false };
}

/** What a fault taken from the account does: an error to answer now, a delay (`slow`), or a lost answer (`ambiguous`). */
export async function faultOutcome(c: Context<AppEnv>, caller: Caller, kind: FaultKind): Promise<{ response?: Response; loseAnswer: boolean }> {
  c.get("services").log.info("sandbox fault", { accountId: caller.accountId, kind });
  if (kind === "slow") {
    await new Promise((r) => setTimeout(r, SLOW_MS));
    return { loseAnswer: false };
  }
  if (kind === "ambiguous") return { loseAnswer: true };
  return { response: graphError(c, faultError(kind, caller.platform)), loseAnswer: false };
}

/** Status line sent, body cut off: the client cannot tell what happened, exactly like a reset after commit. */
export function lostAnswer(): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"id":'));
    },
    pull(controller) {
      controller.error(new Error("sandbox ambiguous fault: connection dropped after the publish was committed"));
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "application/json; charset=UTF-8" } });
}

/** Graph's timestamp format: 2026-05-01T10:00:00+0000. */
export function graphTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "+0000");
}
