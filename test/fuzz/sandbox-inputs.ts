/**
 * The `sandbox-inputs` fuzz property's world and check (the property itself is in properties.ts): one app with
 * the platform sandbox on (PGlite in memory, built on the first case of a worker and kept), a user with an API
 * key, a hub session, connected page and photo accounts, a consent's code and user token, and a stored image.
 * Each case is one request to a sandbox route (the consent dialog, the token exchange, the Graph edges and
 * nodes, the control routes) made of those real values mixed with random names, values, path segments,
 * bodies, content types and cookies, sent through `app.request()`. It must be answered within 7 s, with a
 * status below 500 and a body that can be read. Most cases start from a well-formed request for their route
 * (the parameters a client would send) with the fuzzer's on top, so they get past the token and session
 * checks to the handlers behind them.
 *
 * Faults are left out on purpose: a fault injected through POST /sandbox/faults makes the next publish answer
 * 5xx, a delay or a cut-off body, which is the sandbox's job. That route is fuzzed with a key whose user has no
 * accounts, so it only ever validates.
 */
import sharp from "sharp";
import { and, eq } from "drizzle-orm";
import { socialAccounts } from "../../db/schema";
import { buildNodeServices } from "../../functions/node/services";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config";
import { ApiError } from "../../src/http/errors";
import { createApiKey, createUser } from "../../src/http/api-keys";
import { createSession, loadSession, SESSION_COOKIE } from "../../src/hub/session";
import { FuzzFailure } from "./properties";

/** One case: indices pick from the pools below (taken modulo their length), strings are the fuzzer's own. */
export interface SandboxCase {
  route: number;
  method: number;
  segments: string[];
  params: Array<[number | string, number | string]>;
  body: number;
  raw: string;
  json: unknown;
  session: number;
  auth: number;
}

const DEADLINE_MS = 7_000;
const BOOT_WAIT_MS = 1_000;

const NAMES = [
  "access_token",
  "message",
  "url",
  "caption",
  "published",
  "image_url",
  "creation_id",
  "attached_media[0]",
  "attached_media[1]",
  "fields",
  "limit",
  "since",
  "client_id",
  "client_secret",
  "redirect_uri",
  "code",
  "grant_type",
  "fb_exchange_token",
  "state",
  "decision",
  "page",
  "_csrf",
  "scope",
  "response_type",
  "platform",
  "name",
  "platformAccountId",
  "accountId",
  "kind",
  "times",
];
const _EDGES = ["feed", "photos", "media", "media_publish", "content_publishing_limit", "access_token", "accounts", "permissions"];
const SEGMENTS = ["%00", "%E0%A4", "%ED%A0%80", "%", "%ZZ", "..", ".", "%2F", "v23.0", "v1", "me", "oauth", "4242", "4343", "1780000000000001"];
const CONTENT_TYPES = [
  "application/json",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "multipart/form-data",
  "text/plain",
  "",
  "application/json; charset=utf-16",
  "application/x-www-form-urlencoded; charset=latin1",
];

interface World {
  app: ReturnType<typeof createApp>;
  key: string;
  faultKey: string;
  cookie: string;
  values: string[];
  base: string;
  /** A photo container made at set-up, for media_publish and node reads. */
  container: string;
}

let world: Promise<World> | undefined;

async function buildWorld(): Promise<World> {
  const config = parseConfig({ PLATFORM_SANDBOX: "on", LOG_LEVEL: "silent", RATE_LIMIT_SOCIAL_WRITE: "1000000", RATE_LIMIT_SOCIAL_READ: "1000000" });
  const refusing = {
    fetchBytes: () => Promise.reject(new ApiError("INVALID_IMAGE_URL", "The fuzzer fetches nothing.")),
    postWebhook: () => Promise.reject(new Error("The fuzzer sends no webhooks.")),
  };
  const noHeavy = { run: () => Promise.reject(new Error("no heavy work in the sandbox")), load: () => ({ running: 0, waiting: 0 }) };
  const { services } = await buildNodeServices(config, { inMemory: true, overrides: { fetcher: refusing, heavy: noHeavy as never } });
  const app = createApp(services);
  const { userId } = await createUser(services.db, "sandbox-fuzz@example.test");
  const { key } = await createApiKey(services.db, userId);
  const { key: faultKey } = await createApiKey(services.db, (await createUser(services.db, "sandbox-fuzz-faults@example.test")).userId);
  const tokens: string[] = [];
  for (const [platform, id] of [
    ["pageplatform", "4242"],
    ["photoplatform", "4343"],
  ] as const) {
    const res = await app.request("/sandbox/accounts", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ platform, name: "Fuzz", platformAccountId: id }),
    });
    if (res.status !== 201) throw new Error(`sandbox fuzz set-up: connecting ${platform} answered ${res.status}`);
    const [row] = await services.db
      .select()
      .from(socialAccounts)
      .where(and(eq(socialAccounts.userId, userId), eq(socialAccounts.id, `${platform}:${id}`)));
    tokens.push(await services.tokens.decrypt(row!.tokenCiphertext));
  }
  const { cookie } = await createSession(services, userId);
  const csrf = (await loadSession(services, cookie))!.csrfToken;
  const base = services.config.publicBaseUrl;
  const redirect = `${base}/hub/accounts/callback`;
  const secret = services.config.graph.appSecret!;
  const consent = await app.request("/sandbox/v23.0/dialog/oauth", {
    method: "POST",
    headers: { cookie: `${SESSION_COOKIE}=${cookie}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      client_id: "sandbox-app",
      redirect_uri: redirect,
      state: "s",
      page: "1010000000000001",
      decision: "allow",
      _csrf: csrf,
    }).toString(),
  });
  const code = new URL(consent.headers.get("location") ?? `${base}/`).searchParams.get("code");
  if (!code) throw new Error(`sandbox fuzz set-up: the consent answered ${consent.status}`);
  // This code is used up here, for the user token; the fuzzer gets a fresh one.
  const exchanged = await app.request(
    `/sandbox/graph/v23.0/oauth/access_token?${new URLSearchParams({ client_id: "sandbox-app", client_secret: secret, redirect_uri: redirect, code })}`,
  );
  const userToken = ((await exchanged.json()) as { access_token?: string }).access_token;
  if (!userToken) throw new Error(`sandbox fuzz set-up: the exchange answered ${exchanged.status}`);
  const again = await app.request("/sandbox/v23.0/dialog/oauth", {
    method: "POST",
    headers: { cookie: `${SESSION_COOKIE}=${cookie}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      client_id: "sandbox-app",
      redirect_uri: redirect,
      state: "s",
      page: "1010000000000002",
      decision: "allow",
      _csrf: csrf,
    }).toString(),
  });
  const freshCode = new URL(again.headers.get("location") ?? `${base}/`).searchParams.get("code") ?? "";
  const jpeg = await sharp({ create: { width: 16, height: 16, channels: 3, background: "#c33" } })
    .jpeg()
    .toBuffer();
  const image = await services.storage.put("media/sandbox-fuzz.jpg", new Uint8Array(jpeg), "image/jpeg");
  const made = await app.request("/sandbox/graph/v23.0/4343/media", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ access_token: tokens[1]!, image_url: image, caption: "fuzz" }).toString(),
  });
  const container = ((await made.json()) as { id?: string }).id;
  if (!container) throw new Error(`sandbox fuzz set-up: the container answered ${made.status}`);
  // The first ten in this order are read by name in routesFor.
  const values = [
    ...tokens,
    userToken,
    freshCode,
    secret,
    csrf,
    "sandbox-app",
    redirect,
    `${redirect}?x=1`,
    image,
    code,
    `${base}/files/media/none.jpg`,
    `${base}/files/../api`,
    "https://example.com/a.jpg",
    "http://127.0.0.1/x.jpg",
    "fb_exchange_token",
    "allow",
    "deny",
    "1010000000000001",
    "1010000000000003",
    '{"media_fbid":"1"}',
    '{"media_fbid":"1780000000000001"}',
    "false",
    "0",
    "true",
    "pageplatform",
    "photoplatform",
    "pageplatform:4242",
    "photoplatform:4343",
    "transient",
    "ambiguous",
    "1",
    "-1",
    "1e400",
    "",
    " ",
    "\u0000",
    "a\u0001b",
    "\ud800",
    "\udc00x",
    "\u{1F600}",
    "x".repeat(70_001),
    "%00",
    "null",
    "[]",
    "{}",
  ];
  return { app, key, faultKey, cookie, values, base, container };
}

const pick = <T>(list: readonly T[], n: number): T => list[Math.abs(n) % list.length]!;

/** A path segment as a client would send it: percent-encoded (lone surrogates as their replacement), or one of the odd raw ones. */
function segment(input: SandboxCase, i: number, fallback: string): string {
  const given = input.segments[i];
  if (given === undefined || given.length % 3 !== 0) return fallback;
  if (given.length % 2 === 0) return pick(SEGMENTS, given.length + i);
  return encodeURIComponent(given.toWellFormed()) || "%20";
}

/** Header values must be Latin-1; the fuzzer's own are cut down to printable ASCII. */
const ascii = (s: string) => s.replace(/[^\x20-\x7e]/g, "").slice(0, 200);

interface Route {
  path: string;
  methods: string[];
  /** The parameters a well-behaved client sends here (the fuzzer's own are added to them, or sent alone). */
  params: Record<string, string>;
  control?: boolean;
}

function routesFor(w: World, input: SandboxCase): Route[] {
  const v = segment(input, 0, "v23.0");
  const [page, photo, user, code, secret, csrf, , redirect, , image] = w.values;
  const pageEdge = segment(input, 2, pick(["feed", "photos", "feed"], input.method >> 1));
  const photoEdge = segment(input, 2, pick(["media", "media_publish", "content_publishing_limit"], input.method >> 1));
  return [
    {
      path: `/sandbox/${v}/dialog/oauth`,
      methods: ["GET", "POST"],
      params: {
        client_id: "sandbox-app",
        redirect_uri: redirect!,
        state: "s",
        scope: "pages_show_list",
        page: "1010000000000002",
        decision: "allow",
        _csrf: csrf!,
      },
    },
    {
      path: `/sandbox/graph/${v}/oauth/access_token`,
      methods: ["GET", "POST"],
      params: { client_id: "sandbox-app", client_secret: secret!, redirect_uri: redirect!, code: code! },
    },
    {
      path: `/sandbox/graph/${v}/oauth/access_token`,
      methods: ["GET"],
      params: { grant_type: "fb_exchange_token", client_id: "sandbox-app", client_secret: secret!, fb_exchange_token: user! },
    },
    { path: `/sandbox/graph/${v}/me/accounts`, methods: ["GET"], params: { access_token: user!, fields: "id,name,access_token" } },
    { path: `/sandbox/graph/${v}/me/permissions`, methods: ["GET"], params: { access_token: user! } },
    {
      path: `/sandbox/graph/${v}/${segment(input, 1, "4242")}/${pageEdge}`,
      methods: ["POST", "GET"],
      params: { access_token: page!, message: "Sale today", url: image!, published: "false", caption: "c" },
    },
    {
      path: `/sandbox/graph/${v}/${segment(input, 1, "4343")}/${photoEdge}`,
      methods: ["POST", "GET"],
      params: { access_token: photo!, image_url: image!, caption: "c", creation_id: w.container },
    },
    { path: `/sandbox/graph/${v}/${segment(input, 1, w.container)}`, methods: ["GET", "POST"], params: { access_token: photo!, fields: "status_code" } },
    { path: "/sandbox/accounts", methods: ["POST", "GET"], params: { platform: "pageplatform", name: "Shop", platformAccountId: "4242" }, control: true },
    { path: "/sandbox/posts", methods: ["GET", "POST"], params: { accountId: "pageplatform:4242" }, control: true },
    { path: "/sandbox/faults", methods: ["POST"], params: { accountId: "pageplatform:4242", kind: "transient", times: "1" }, control: true },
    { path: `/sandbox/${segment(input, 1, "x")}/${segment(input, 2, "y")}`, methods: ["GET", "POST"], params: {} },
  ];
}

function requestFor(w: World, input: SandboxCase): { url: string; init: RequestInit } {
  const routes = routesFor(w, input);
  const route = pick(routes, input.route);
  const method = pick(route.methods, input.method);
  const fuzzed = input.params.map(
    ([name, value]) => [typeof name === "number" ? pick(NAMES, name) : name, typeof value === "number" ? pick(w.values, value) : value] as const,
  );
  // Mostly a well-behaved request with the fuzzer's parameters on top; sometimes the fuzzer's alone.
  const base = Math.floor(Math.abs(input.route) / routes.length) % 4 === 0 ? [] : Object.entries(route.params);
  const params = [...base.filter(([k]) => !fuzzed.some(([f]) => f === k)), ...fuzzed];

  const headers: Record<string, string> = {};
  const session = Math.abs(input.session) % 4;
  if (session === 1 || session === 2) headers.cookie = `${SESSION_COOKIE}=${w.cookie}`;
  if (session === 3) headers.cookie = `${SESSION_COOKIE}=${ascii(input.raw).replace(/[;,\s]/g, "")}`;
  if (Math.abs(input.session) % 5 === 4) headers.origin = input.session % 2 ? w.base : "https://elsewhere.example";
  const key = route.path === "/sandbox/faults" ? w.faultKey : w.key;
  const auths = [
    `Bearer ${key}`,
    `Bearer ${key}`,
    null,
    `Bearer ${ascii(input.raw)}`,
    `Bearer ${pick(w.values, input.method)}`,
    `OAuth ${pick(w.values, input.route)}`,
  ];
  const auth = route.control ? auths[Math.abs(input.auth) % auths.length]! : (auths.slice(2)[Math.abs(input.auth) % 4] ?? null);
  if (auth !== null) headers.authorization = ascii(auth);

  // Body kinds: 0 form, 1 JSON of the parameters, 2 any JSON, 3 multipart, 4 raw text of any type, 5 none, 6 none with a raw query.
  let bodyKind = method === "GET" ? (Math.abs(input.body) % 5 === 0 ? 6 : 5) : Math.abs(input.body) % 7;
  if (route.control && method === "POST" && Math.abs(input.body) % 3 !== 0) bodyKind = 1;
  const query = new URLSearchParams(bodyKind >= 4 ? params.map(([k, x]) => [k, x]) : []).toString();
  const rawQuery = bodyKind === 6 ? input.raw.toWellFormed().replace(/#/g, "") : "";
  const url = `${route.path}?${[query, rawQuery].filter(Boolean).join("&")}`;
  let body: BodyInit | undefined;
  if (bodyKind === 0) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(params.map(([k, x]) => [k, x])).toString();
  } else if (bodyKind === 1) {
    headers["content-type"] = "application/json";
    const extra = input.json && typeof input.json === "object" && !Array.isArray(input.json) && Math.abs(input.body) % 2 ? input.json : {};
    const numeric = (k: string, x: string) => (k === "times" && /^-?\d+$/.test(x) ? Number(x) : x);
    body = JSON.stringify({ ...extra, ...Object.fromEntries(params.map(([k, x]) => [k, numeric(k, x)])) });
  } else if (bodyKind === 2) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(input.json) ?? "";
  } else if (bodyKind === 3) {
    const form = new FormData();
    for (const [k, x] of params) form.append(k, x);
    body = form;
  } else if (bodyKind === 4) {
    const type = pick(CONTENT_TYPES, input.body);
    if (type) headers["content-type"] = type;
    body = input.raw;
  }
  return { url, init: { method, headers, body } };
}

/**
 * Sends the case's request; a 5xx, an unreadable body or no whole answer within DEADLINE_MS is a failure.
 * While the worker's app is still starting (PGlite and its migrations, seconds on a busy machine), a case waits
 * BOOT_WAIT_MS for it and then passes untried, so that the start-up never counts as one case's hang (the
 * runner's bound, 10 s, is above both waits together); a failed start-up fails.
 */
export async function checkSandboxCase(input: SandboxCase): Promise<void> {
  world ??= buildWorld();
  const w = await within(world, BOOT_WAIT_MS, () => null);
  if (!w) return;
  const { url, init } = requestFor(w, input);
  const what = `${init.method} ${url.slice(0, 160)}`;
  let request: Request;
  try {
    request = new Request(`http://127.0.0.1:8787${url}`, init);
  } catch {
    return; // not a request any client could send
  }
  const late = () => {
    throw new FuzzFailure(`${what}: no whole answer within ${DEADLINE_MS} ms`);
  };
  const answered = async () => {
    const res = await w.app.request(request);
    try {
      return { status: res.status, text: await res.text() };
    } catch (err) {
      throw new FuzzFailure(`${what}: the body could not be read: ${String(err)}`);
    }
  };
  const { status, text } = await within(answered(), DEADLINE_MS, late);
  if (status >= 500) throw new FuzzFailure(`${what} answered ${status}: ${text.slice(0, 300)}`);
}

/** `promise`, or what `otherwise` gives once `ms` have passed first. */
async function within<T, U>(promise: Promise<T>, ms: number, otherwise: () => U): Promise<T | U> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<U>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(otherwise());
      } catch (err) {
        reject(err);
      }
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
