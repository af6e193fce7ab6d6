/**
 * A test-only Graph API on 127.0.0.1: scripted answers per method and path, every request recorded with its
 * parameters (query and form body merged, as Graph reads them). Answers can be a JSON body with a status,
 * or a network fault: hang past the client's timeout, or cut the connection before or after the headers.
 * `GRAPH_ERROR_BODIES` holds real error bodies of each class, as the platform sends them.
 *
 * @example
 * const fake = await startGraphFake();
 * fake.on("POST", /\/feed$/, () => ({ status: 200, body: { id: "1_2" } }));
 * // point an adapter at fake.baseUrl; afterwards: fake.requests, await fake.close()
 * serveGraphOAuth(fake, { appId: "1", appSecret: "s", pages }); // the login dialog and token exchange too
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeRequest {
  method: string;
  path: string;
  params: Record<string, string>;
}

export type FakeAnswer = { status: number; body: unknown; headers?: Record<string, string> } | { fault: "hang" | "destroy" | "cut-after-headers" };

type Responder = (req: FakeRequest) => FakeAnswer | Promise<FakeAnswer>;

export interface GraphFake {
  baseUrl: string;
  requests: FakeRequest[];
  /** Answer every matching request (the last registered match wins). */
  on(method: string, path: RegExp, responder: Responder): void;
  /** Answer the next matching request only, before any `on` handler. */
  once(method: string, path: RegExp, responder: Responder): void;
  reset(): void;
  close(): Promise<void>;
}

export async function startGraphFake(): Promise<GraphFake> {
  let handlers: Array<{ method: string; path: RegExp; responder: Responder; once: boolean }> = [];
  const requests: FakeRequest[] = [];
  const hanging = new Set<ServerResponse>();

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://fake");
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const params: Record<string, string> = Object.fromEntries(url.searchParams);
    if (raw) for (const [k, v] of new URLSearchParams(raw)) params[k] = v;
    const request = { method: req.method ?? "GET", path: url.pathname, params };
    requests.push(request);

    const matching = handlers.filter((h) => h.method === request.method && h.path.test(request.path));
    const chosen = matching.find((h) => h.once) ?? matching.at(-1);
    if (chosen?.once) handlers = handlers.filter((h) => h !== chosen);
    const answer: FakeAnswer = chosen
      ? await chosen.responder(request)
      : { status: 400, body: { error: { message: "Unknown path components", type: "OAuthException", code: 2500, fbtrace_id: "Afake" } } };

    if ("fault" in answer) {
      if (answer.fault === "hang") return void hanging.add(res);
      if (answer.fault === "destroy") return void req.socket.destroy();
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"id":');
      return void setTimeout(() => req.socket.destroy(), 5);
    }
    res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    on: (method, path, responder) => void handlers.push({ method, path, responder, once: false }),
    once: (method, path, responder) => void handlers.push({ method, path, responder, once: true }),
    reset() {
      handlers = [];
      requests.length = 0;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface FakeGraphPage {
  id: string;
  name: string;
  /** Omitted for a page the user did not grant access to (Graph then sends no page token). */
  access_token?: string;
  instagram_business_account?: { id: string; username?: string; name?: string };
}

/**
 * The OAuth side of the platform on the fake: the login dialog (consents at once: redirects to
 * `redirect_uri` with a code and the `state`), the code exchange and the long-lived token exchange (both
 * check the app id and secret; the code must come with its `redirect_uri`), and `me/accounts` for the
 * long-lived token, two pages per answer linked by `paging.next`; `me/permissions` grants the publishing
 * permissions except `declined`.
 */
export function serveGraphOAuth(
  fake: GraphFake,
  options: { appId: string; appSecret: string; pages: FakeGraphPage[]; declined?: string[] },
): { shortToken: string; longToken: string } {
  const shortToken = "EAAshort0000fake";
  const longToken = "EAAlong0000fake";
  const codes = new Map<string, string>();
  const oauthError = (code: number, message: string) => ({ status: 400, body: body(code, message) });
  fake.on("GET", /^\/v\d+\.\d+\/dialog\/oauth$/, ({ params }) => {
    const code = `fake-code-${codes.size + 1}`;
    codes.set(code, params.redirect_uri ?? "");
    const back = new URL(params.redirect_uri ?? "");
    back.searchParams.set("code", code);
    back.searchParams.set("state", params.state ?? "");
    return { status: 302, body: null, headers: { location: back.toString() } };
  });
  fake.on("GET", /^\/v\d+\.\d+\/oauth\/access_token$/, ({ params }) => {
    if (params.client_id !== options.appId) return oauthError(101, "Error validating application. Invalid application ID.");
    if (params.client_secret !== options.appSecret) return oauthError(1, "Error validating client secret.");
    if (params.grant_type === "fb_exchange_token") {
      if (params.fb_exchange_token !== shortToken) return oauthError(190, "Invalid OAuth access token.");
      return { status: 200, body: { access_token: longToken, token_type: "bearer", expires_in: 5183944 } };
    }
    const redirect = params.code ? codes.get(params.code) : undefined;
    if (redirect === undefined) return oauthError(100, "This authorization code has expired or has been used.");
    codes.delete(params.code!);
    if (redirect !== params.redirect_uri)
      return oauthError(
        100,
        "Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request",
      );
    return { status: 200, body: { access_token: shortToken, token_type: "bearer", expires_in: 3600 } };
  });
  fake.on("GET", /^\/v\d+\.\d+\/me\/permissions$/, ({ params }) => {
    if (params.access_token !== longToken) return oauthError(190, "Invalid OAuth access token.");
    const all = [
      "public_profile",
      "pages_show_list",
      "pages_read_engagement",
      "pages_manage_posts",
      "business_management",
      "instagram_basic",
      "instagram_content_publish",
    ];
    return { status: 200, body: { data: all.map((permission) => ({ permission, status: options.declined?.includes(permission) ? "declined" : "granted" })) } };
  });
  fake.on("GET", /^\/v\d+\.\d+\/me\/accounts$/, ({ path, params }) => {
    if (params.access_token !== longToken) return oauthError(190, "Invalid OAuth access token.");
    const after = Number(params.after ?? 0);
    const next = new URL(`${fake.baseUrl}${path}`);
    next.search = new URLSearchParams({ ...params, after: String(after + 2) }).toString();
    const more = after + 2 < options.pages.length;
    return { status: 200, body: { data: options.pages.slice(after, after + 2), paging: more ? { next: next.toString() } : {} } };
  });
  return { shortToken, longToken };
}

const body = (code: number, message: string, extra: Record<string, unknown> = {}) => ({
  error: { message, type: "OAuthException", code, ...extra, fbtrace_id: "AbCdEfGhIjKlMnOp" },
});

/** Real Graph error bodies by the class the engine must see, with the HTTP status Meta answers them with. */
export const GRAPH_ERROR_BODIES: Record<"auth" | "rate_limit" | "transient" | "invalid", Array<{ name: string; status: number; body: unknown }>> = {
  auth: [
    {
      name: "190 expired (463)",
      status: 400,
      body: body(190, "Error validating access token: Session has expired on Friday, 01-May-26 10:00:00 PDT.", { error_subcode: 463 }),
    },
    {
      name: "190 invalid (467)",
      status: 400,
      body: body(190, "Error validating access token: The user has not authorized application.", { error_subcode: 467 }),
    },
    {
      name: "190 password changed (460)",
      status: 400,
      body: body(190, "Error validating access token: The session has been invalidated because the user changed their password.", { error_subcode: 460 }),
    },
    { name: "102 session", status: 400, body: body(102, "Session key invalid or no longer valid") },
    { name: "10 permission", status: 403, body: body(10, "(#10) Application does not have permission for this action") },
    { name: "200 page as itself", status: 403, body: body(200, "(#200) Unpublished posts must be posted to a page as the page itself.") },
    { name: "283 permission", status: 403, body: body(283, "(#283) Requires extended permission: pages_manage_posts") },
  ],
  rate_limit: [
    { name: "4 app limit", status: 403, body: body(4, "(#4) Application request limit reached", { is_transient: true }) },
    { name: "17 user limit", status: 403, body: body(17, "(#17) User request limit reached") },
    { name: "32 page limit", status: 403, body: body(32, "(#32) Page request limit reached") },
    { name: "613 custom", status: 400, body: body(613, "Calls to this api have exceeded the rate limit.") },
    { name: "80001 BUC pages", status: 400, body: body(80001, "There have been too many calls to this Page account. Wait a bit and try again.") },
    { name: "9 / 2207042 IG publish cap", status: 400, body: body(9, "Application request limit reached", { error_subcode: 2207042, is_transient: false }) },
    {
      name: "368 posting too fast",
      status: 400,
      body: body(368, "The action attempted has been deemed abusive or is otherwise disallowed", { error_subcode: 1390008 }),
    },
  ],
  transient: [
    { name: "1 unknown", status: 500, body: body(1, "An unknown error occurred", { is_transient: true }) },
    { name: "2 service", status: 503, body: body(2, "An unexpected error has occurred. Please retry your request later.", { is_transient: true }) },
    {
      name: "-1 / 2207001 IG server",
      status: 500,
      body: body(-1, "An unexpected error has occurred. Please retry your request later.", { error_subcode: 2207001, is_transient: true }),
    },
    { name: "9007 / 2207027 not ready", status: 400, body: body(9007, "Media ID is not available", { error_subcode: 2207027, is_transient: false }) },
    { name: "is_transient flag", status: 400, body: body(131, "Temporary problem", { is_transient: true }) },
  ],
  invalid: [
    { name: "100 invalid parameter", status: 400, body: body(100, "(#100) Invalid parameter") },
    { name: "100 / 2207023 unknown media type", status: 400, body: body(100, "The media type is unknown", { error_subcode: 2207023 }) },
    {
      name: "9004 / 2207052 media not fetchable",
      status: 400,
      body: body(9004, "Only photo or video can be accepted as media type.", { error_subcode: 2207052 }),
    },
    { name: "324 missing image file", status: 400, body: body(324, "(#324) Missing or invalid image file") },
    { name: "36003 / 2207009 aspect ratio", status: 400, body: body(36003, "The aspect ratio is not supported.", { error_subcode: 2207009 }) },
    { name: "506 duplicate", status: 400, body: body(506, "Duplicate status message") },
    { name: "4 / 2207051 spam restriction", status: 400, body: body(4, "Action is blocked", { error_subcode: 2207051 }) },
  ],
};
