/**
 * The whole API in workerd, configured the way production is: the Worker built as deployed (`wrangler deploy
 * --dry-run`), given exactly wrangler.toml's [vars] and the secret names it lists (no PLATFORM_SANDBOX), with
 * every outside service a stand-in speaking its real protocol on loopback: PostgreSQL through the Neon
 * driver over the WebSocket bridge, Upstash Redis through the REST bridge, the QStash fake (signed
 * callbacks), the S3 fake, the Graph fake (OAuth and publishing) and the Replicate fake. Only two values are
 * not production's: PUBLIC_BASE_URL is Miniflare's address, so QStash calls back into this Worker, and the
 * local transports (NEON_WS_PROXY, REPLICATE_API_BASE). A public image URL is answered through Miniflare's
 * fetch mock, since the URL rules refuse loopback.
 *
 * Covered: accounts connected through the hub's OAuth flow; QR generate (GET, POST) and decode; media by
 * base64 and by URL, normalised; an immediate and a scheduled post, each delivered by a QStash callback to
 * the Worker; a duplicated and a replayed callback (no second publish); bad signatures (401); cancel; list
 * with filters; idempotent replay and conflict; 429 with Retry-After on Upstash; product photography on
 * Replicate with url output; the cron sweep re-queueing a delivery whose QStash message was lost.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { createFetchMock } from "miniflare";
import sharp from "sharp";
import { openNodeDb } from "../../db/node";
import type { DbHandle } from "../../db/client";
import { deliveries, posts } from "../../db/schema";
import { createApiKey, createUser } from "../../src/http/api-keys";
import { parseConfig } from "../../src/config";
import { createLoginLink } from "../../src/hub/login-links";
import { PUBLISH_CALLBACK_PATH } from "../../src/adapters/queue/qstash";
import { startLocalEdge, type LocalEdge } from "../../dev/edge-worker";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { serveGraphOAuth, startGraphFake, type GraphFake } from "../helpers/graph-fake";
import { startReplicateFake, type ReplicateFake } from "../helpers/replicate-fake";
import { freePort } from "../helpers/server-process";
import { listedSecrets } from "../helpers/wrangler-secrets";
import { productJpeg } from "../photo/fixtures";

const PAGE = "pageplatform:501";
const INSTA = "photoplatform:17841400000000501";
const APP = { appId: "app-e2e", appSecret: "app-secret-e2e" };
const IMAGE_HOST = "https://cdn.shopfront-images.com";

let edge: LocalEdge;
let scratch: ScratchDatabase;
let handle: DbHandle;
let graph: GraphFake;
let replicate: ReplicateFake;
let base: string;
let userId: string;
let key: string;
let bindings: Record<string, string>;
let largePng: Buffer;

beforeAll(async () => {
  const secrets = await listedSecrets();
  scratch = await createScratchDatabase();
  handle = await openNodeDb({ url: scratch.url, poolSize: 2 });
  ({ userId } = await createUser(handle.db, `e2e-${crypto.randomUUID()}@example.test`));
  key = (await createApiKey(handle.db, userId)).key;

  graph = await startGraphFake();
  serveGraphOAuth(graph, {
    ...APP,
    pages: [{ id: "501", name: "Shop One", access_token: "EAApage501secret", instagram_business_account: { id: "17841400000000501", username: "shop.one" } }],
  });
  servePublishing(graph);
  replicate = await startReplicateFake();

  // A product photo at a public address, answered by the fetch mock; the stand-ins on loopback pass.
  largePng = await sharp({ create: { width: 3000, height: 2000, channels: 3, background: { r: 200, g: 40, b: 90 } } })
    .png()
    .toBuffer();
  const fetchMock = createFetchMock();
  fetchMock.disableNetConnect();
  fetchMock.enableNetConnect(/^127\.0\.0\.1(:\d+)?$/);
  fetchMock
    .get(IMAGE_HOST)
    .intercept({ path: "/products/serum.png" })
    .reply(200, largePng, { headers: { "content-type": "image/png" } })
    .persist();

  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  edge = await startLocalEdge({
    databaseUrl: scratch.url,
    qstash: true,
    port,
    fetchMock,
    bindings: (standard, vars) => {
      const stand: Record<string, string> = {
        ...standard,
        GRAPH_API_BASE: graph.baseUrl,
        META_APP_ID: APP.appId,
        META_APP_SECRET: APP.appSecret,
        META_DIALOG_BASE: graph.baseUrl,
        REPLICATE_API_TOKEN: replicate.token,
      };
      const named = [...secrets.required, ...secrets.optional].filter((n) => stand[n] !== undefined && !n.startsWith("OIDC_"));
      return {
        ...vars,
        ...Object.fromEntries(named.map((n) => [n, stand[n]!])),
        PUBLIC_BASE_URL: base,
        // Local transports only: the Neon driver's plain ws:// proxy and Replicate's API root.
        NEON_WS_PROXY: standard.NEON_WS_PROXY!,
        REPLICATE_API_BASE: replicate.url,
      };
    },
  });
  bindings = edge.bindings;
}, 180_000);

afterAll(async () => {
  const steps: Array<() => unknown> = [() => edge?.dispose(), () => graph?.close(), () => replicate?.close(), () => handle?.close(), () => scratch?.drop()];
  for (const step of steps)
    await Promise.resolve()
      .then(() => step())
      .catch(() => {});
});

/** Graph's publishing endpoints for the page (feed, photos) and the Instagram account (container, publish). */
function servePublishing(fake: GraphFake) {
  let n = 0;
  fake.on("POST", /\/501\/feed$/, () => ({ status: 200, body: { id: `501_${++n}` } }));
  fake.on("POST", /\/501\/photos$/, () => ({ status: 200, body: { id: `p${++n}`, post_id: `501_${n}` } }));
  fake.on("GET", /\/501\/feed$/, () => ({ status: 200, body: { data: [] } }));
  fake.on("POST", /\/17841400000000501\/media$/, () => ({ status: 200, body: { id: `C${++n}` } }));
  fake.on("GET", /\/C\d+$/, () => ({ status: 200, body: { status_code: "FINISHED" } }));
  fake.on("GET", /content_publishing_limit$/, () => ({
    status: 200,
    body: { data: [{ quota_usage: 1, config: { quota_total: 50, quota_duration: 86400 } }] },
  }));
  fake.on("POST", /\/17841400000000501\/media_publish$/, () => ({ status: 200, body: { id: `M${++n}` } }));
}

/** Graph publishing calls (page posts and Instagram publishes) whose caption or message contains `text`. */
const published = (text: string) =>
  graph.requests.filter((r) => r.method === "POST" && /\/(feed|photos|media)$/.test(r.path) && (r.params.message ?? r.params.caption ?? "").includes(text));

/** An API call as the test user (or `as`); a post creation gets a fresh Idempotency-Key unless one is given. */
const api = async (method: string, path: string, init: { body?: unknown; headers?: Record<string, string>; as?: string } = {}) => {
  const creation: Record<string, string> =
    method === "POST" && path === "/api/v1/social/posts" && !init.headers?.["Idempotency-Key"] ? { "Idempotency-Key": crypto.randomUUID() } : {};
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${init.as ?? key}`,
      ...creation,
      ...(init.body === undefined ? {} : { "content-type": "application/json" }),
      ...init.headers,
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const type = res.headers.get("content-type") ?? "";
  return {
    status: res.status,
    headers: res.headers,
    json: type.includes("json") ? ((await res.json()) as any) : undefined,
    bytes: type.includes("json") ? undefined : Buffer.from(await res.arrayBuffer()),
  };
};

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

const postWhenPublished = (id: string) =>
  until(`post ${id} published`, async () => {
    const { json } = await api("GET", `/api/v1/social/posts/${id}`);
    return json.data.accounts.every((a: { status: string }) => a.status === "published") ? json.data : undefined;
  });

/** The QStash messages the fake holds for one delivery. */
const messagesFor = (deliveryId: string) => [...edge.qstash!.messages.values()].filter((m) => JSON.parse(m.body).deliveryId === deliveryId);

async function deliveryIdsOf(postId: string): Promise<string[]> {
  return (await handle.db.select({ id: deliveries.id }).from(deliveries).where(eq(deliveries.postId, postId))).map((r) => r.id);
}

describe("the hub in workerd against the platform's OAuth", () => {
  it("connects the page and its Instagram account; the API lists them", async () => {
    const jar = new Map<string, string>();
    const browse = async (url: string, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      if (jar.size) headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
      if (init.method === "POST") headers.set("origin", base);
      const res = await fetch(url.startsWith("http") ? url : `${base}${url}`, { ...init, headers, redirect: "manual" });
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(";");
        const at = pair!.indexOf("=");
        jar.set(pair!.slice(0, at).trim(), pair!.slice(at + 1));
      }
      return { res, html: await res.text() };
    };
    const form = (fields: Record<string, string>) => ({
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
    });

    const link = await createLoginLink({ db: handle.db, config: parseConfig({ PUBLIC_BASE_URL: base }), clock: { now: () => new Date() } }, userId);
    const token = new URL(link).searchParams.get("token")!;
    expect((await browse("/hub/login", form({ token }))).res.status).toBe(303);
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await browse("/hub/keys")).html)![1]!;
    const start = await browse("/hub/accounts/connect", form({ _csrf: csrf }));
    const dialog = new URL(start.res.headers.get("location")!);
    expect(dialog.origin).toBe(graph.baseUrl);
    const consented = await fetch(dialog, { redirect: "manual" });
    const back = await browse(consented.headers.get("location")!);
    expect([back.res.status, back.res.headers.get("location")]).toEqual([303, "/hub/accounts"]);
    const done = await browse("/hub/accounts");
    expect(done.res.status).toBe(200);
    expect(done.html).toContain("Connected: Shop One, @shop.one.");

    const { json } = await api("GET", "/api/v1/social/accounts");
    expect(json.data.accounts.map((a: { id: string }) => a.id).sort()).toEqual([PAGE, INSTA]);
    // Production is closed: no sandbox here.
    expect((await api("GET", "/sandbox/posts?accountId=pageplatform:501")).status).toBe(404);
  });
});

describe("area A in workerd", () => {
  it("generates by GET (PNG and base64) and POST and reads the code back", async () => {
    const b64 = await api("GET", `/api/qr-code/generate-base64/${key}/hello%20edge`);
    expect(b64.json.data.qrCodeDataUrl).toMatch(/^data:image\/png;base64,/);
    const read = await api("POST", "/api/qr-code/decode", { body: { base64: b64.json.data.qrCodeDataUrl } });
    expect(read.json).toEqual({ data: { decodedText: "hello edge" } });
    const png = await api("GET", `/api/qr-code/generate/${key}/${encodeURIComponent("https://example.com/e2e")}?size=300`);
    expect(png.status).toBe(200);
    expect(await sharp(png.bytes!).metadata()).toMatchObject({ format: "png", width: 300, height: 300 });
    const posted = await api("POST", "/api/qr-code/generate", { body: { type: "wifi", ssid: "Shop", password: "secret123", encryption: "WPA" } });
    expect(posted.status).toBe(200);
    expect(posted.json.data.qrCodeDataUrl).toMatch(/^data:image\/png;base64,/);
    const decoded = await api("POST", "/api/qr-code/decode", { body: { base64: `data:image/png;base64,${png.bytes!.toString("base64")}` } });
    expect(decoded.json).toEqual({ data: { decodedText: "https://example.com/e2e" } });
  });
});

let mediaId: string;

describe("area C in workerd, delivered through QStash", () => {
  it("uploads media by base64 and by URL, each normalised to the platforms' JPEG", async () => {
    const byBase64 = await api("POST", "/api/v1/social/media", { body: { base64: (await productJpeg(800, 800)).toString("base64") } });
    expect(byBase64.status, JSON.stringify(byBase64.json)).toBe(201);
    mediaId = byBase64.json.data.id;
    expect((await api("GET", `/api/v1/social/media/${mediaId}`)).json.data).toMatchObject({ id: mediaId, mimeType: "image/jpeg" });
    const byUrl = await api("POST", "/api/v1/social/media", { body: { url: `${IMAGE_HOST}/products/serum.png` } });
    expect(byUrl.status, JSON.stringify(byUrl.json)).toBe(201);
    expect(byUrl.json.data).toMatchObject({ mimeType: "image/jpeg" });
    const stored = await fetch(byUrl.json.data.url);
    expect(stored.headers.get("content-type")).toBe("image/jpeg");
    const meta = await sharp(Buffer.from(await stored.arrayBuffer())).metadata();
    expect(meta).toMatchObject({ format: "jpeg", width: 1440, height: 960 });
    // A loopback URL stays refused on the edge.
    const refused = await api("POST", "/api/v1/social/media", { body: { url: `${graph.baseUrl}/x.png` } });
    expect(refused.status).toBe(422);
  });

  it("publishes an immediate post to both accounts through a signed QStash callback", async () => {
    const created = await api("POST", "/api/v1/social/posts", {
      body: { accountIds: [PAGE, INSTA], caption: "E2E launch", hashtags: ["sale"], images: [{ mediaId }] },
      headers: { "Idempotency-Key": "e2e-launch" },
    });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    const post = await postWhenPublished(created.json.data.id);
    expect(post.accounts.map((a: { accountId: string }) => a.accountId).sort()).toEqual([PAGE, INSTA]);
    expect(published("E2E launch")).toHaveLength(2);
    for (const id of await deliveryIdsOf(post.id)) {
      const [message] = messagesFor(id);
      expect(message!.destination).toBe(`${base}${PUBLISH_CALLBACK_PATH}`);
      expect(message!.deliveries.at(-1)!.status).toBe(200);
    }
  });

  it("a duplicated and a replayed callback publish nothing twice", async () => {
    const { json } = await api("GET", "/api/v1/social/posts?limit=1");
    const ids = await deliveryIdsOf(json.data.items[0].id);
    for (const id of ids) {
      const [message] = messagesFor(id);
      expect(await edge.qstash!.redeliver(message!.messageId)).toBe(200); // QStash's at-least-once duplicate
      // A captured callback sent again: same body, a signature QStash made for it.
      const replay = await fetch(`${base}${PUBLISH_CALLBACK_PATH}`, {
        method: "POST",
        headers: { "content-type": "application/json", "upstash-signature": await edge.qstash!.sign(message!.body, message!.destination) },
        body: message!.body,
      });
      expect(replay.status).toBe(200);
      expect(((await replay.json()) as any).data.outcome).not.toBe("published");
    }
    expect(published("E2E launch")).toHaveLength(2);
  });

  it("refuses callbacks without a valid signature", async () => {
    const ids = await deliveryIdsOf((await api("GET", "/api/v1/social/posts?limit=1")).json.data.items[0].id);
    const body = JSON.stringify({ deliveryId: ids[0] });
    const url = `${base}${PUBLISH_CALLBACK_PATH}`;
    const send = (signature?: string) =>
      fetch(url, { method: "POST", headers: { "content-type": "application/json", ...(signature ? { "upstash-signature": signature } : {}) }, body });
    expect((await send()).status).toBe(401);
    expect((await send(await edge.qstash!.sign(body, url, "not-the-signing-key"))).status).toBe(401);
    expect((await send(await edge.qstash!.sign(body, "https://elsewhere.example.com/api/internal/deliveries/publish"))).status).toBe(401);
    expect((await send(await edge.qstash!.sign(JSON.stringify({ deliveryId: "other" }), url))).status).toBe(401); // body hash differs
  });

  it("publishes a scheduled post once its time comes, through a delayed QStash message", async () => {
    const at = new Date(Date.now() + 4000);
    const created = await api("POST", "/api/v1/social/posts", { body: { accountIds: PAGE, caption: "E2E scheduled", scheduledFor: at.toISOString() } });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    expect(created.json.data.status).toBe("scheduled");
    const [deliveryId] = await deliveryIdsOf(created.json.data.id);
    expect(messagesFor(deliveryId!)[0]!.notBefore).toBeGreaterThanOrEqual(Math.floor(at.getTime() / 1000) - 1);
    await postWhenPublished(created.json.data.id);
    expect(published("E2E scheduled")).toHaveLength(1);
    expect(messagesFor(deliveryId!)[0]!.deliveries[0]!.at).toBeGreaterThanOrEqual(at.getTime() - 1000);
  });

  it("cancels a scheduled post, refuses to cancel a published one, and lists with filters", async () => {
    const later = await api("POST", "/api/v1/social/posts", {
      body: { accountIds: [PAGE], caption: "E2E later", scheduledFor: new Date(Date.now() + 3600_000).toISOString() },
    });
    expect(later.status).toBe(201);
    const cancelled = await api("DELETE", `/api/v1/social/posts/${later.json.data.id}`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.json.data.status).toBe("cancelled");
    const [laterDelivery] = await deliveryIdsOf(later.json.data.id);
    expect(messagesFor(laterDelivery!).map((m) => m.state)).toEqual(["cancelled"]); // deleted from QStash too
    const launched = (await api("GET", "/api/v1/social/posts?status=published&limit=10")).json.data.items;
    expect(launched.map((p: { caption: string }) => p.caption).sort()).toEqual(["E2E launch", "E2E scheduled"]);
    expect((await api("DELETE", `/api/v1/social/posts/${launched[0].id}`)).status).toBe(409);
    const list = (await api("GET", "/api/v1/social/posts?status=cancelled")).json.data.items;
    expect(list.map((p: { id: string }) => p.id)).toEqual([later.json.data.id]);
    expect((await api("GET", "/api/v1/social/posts?status=sent")).status).toBe(422);
  });

  it("replays an idempotent creation and refuses the key with another body", async () => {
    const body = { accountIds: [PAGE, INSTA], caption: "E2E launch", hashtags: ["sale"], images: [{ mediaId }] };
    const replay = await api("POST", "/api/v1/social/posts", { body, headers: { "Idempotency-Key": "e2e-launch" } });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    const conflict = await api("POST", "/api/v1/social/posts", { body: { ...body, caption: "Something else" }, headers: { "Idempotency-Key": "e2e-launch" } });
    expect(conflict.status).toBe(409);
    expect(conflict.json.error.code).toMatch(/IDEMPOTENCY/);
    expect(published("E2E launch")).toHaveLength(2);
  });

  it("re-queues, from the cron sweep, a delivery whose QStash message was lost; it is published once", async () => {
    const created = await api("POST", "/api/v1/social/posts", {
      body: { accountIds: [PAGE], caption: "E2E lost message", scheduledFor: new Date(Date.now() + 3600_000).toISOString() },
    });
    const [deliveryId] = await deliveryIdsOf(created.json.data.id);
    const [message] = messagesFor(deliveryId!);
    // QStash loses it (deleted through its API), and the due time passes unnoticed.
    const lost = await fetch(`${edge.qstash!.url}/v2/messages/${message!.messageId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${bindings.QSTASH_TOKEN}` },
    });
    expect(lost.ok).toBe(true);
    const past = sql`now() - interval '3 minutes'`;
    await handle.db.update(posts).set({ scheduledFor: past }).where(eq(posts.id, created.json.data.id));
    await handle.db.update(deliveries).set({ nextAttemptAt: past, updatedAt: past }).where(eq(deliveries.id, deliveryId!));

    expect(await edge.scheduled()).toBe("ok");
    await postWhenPublished(created.json.data.id);
    expect(await edge.scheduled()).toBe("ok"); // a later sweep finds nothing to do
    await edge.qstash!.idle();
    expect(published("E2E lost message")).toHaveLength(1);
  });

  it("answers 429 with Retry-After from the Upstash limiter", async () => {
    const other = (await createApiKey(handle.db, (await createUser(handle.db, `e2e-limit-${crypto.randomUUID()}@example.test`)).userId)).key;
    const limit = Number(bindings.RATE_LIMIT_PHOTO);
    // A sliding window counts a request that straddles a minute boundary at a fraction, and a Redis call slower
    // than the limiter's timeout lets a request through, so the 429 may come a little after the limit; never before.
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof api>> | undefined;
    while (statuses.length < 2 * limit && last?.status !== 429) {
      last = await api("POST", "/api/image/product-photography", { as: other, body: {} });
      statuses.push(last.status);
    }
    expect(last!.status).toBe(429);
    expect(statuses.length).toBeGreaterThan(limit);
    expect(statuses.slice(0, -1).every((s) => s === 422)).toBe(true);
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(last!.json.error.code).toBe("RATE_LIMITED");
  });
});

describe("area B in workerd on Replicate", () => {
  it("lists the templates and the models with prices", async () => {
    const prompts = await api("GET", "/api/image/product-photography-prompts");
    expect(prompts.status).toBe(200);
    expect(JSON.stringify(prompts.json)).toContain("studio-plinth");
    const models = await api("GET", "/api/image/image-model-options");
    expect(models.status).toBe(200);
    expect(JSON.stringify(models.json)).toContain("pro");
  });

  it("runs a job asynchronously (Prefer: respond-async) and serves its result from the bucket", async () => {
    const product = `data:image/jpeg;base64,${(await productJpeg()).toString("base64")}`;
    const res = await fetch(`${base}/api/image/product-photography`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", prefer: "respond-async" },
      body: JSON.stringify({ productImages: [{ dataUrl: product }], scenePrompt: "on a marble counter", model: "standard", outputResult: "url" }),
    });
    expect(res.status).toBe(202);
    const location = res.headers.get("location")!;
    expect(location).toMatch(/^\/api\/image\/product-photography\/jobs\/[0-9a-f-]{36}$/);
    const done = await until("the async job", async () => {
      const { json } = await api("GET", location);
      return json.data.status === "succeeded" ? json.data : undefined;
    });
    expect(done.result.imageUrl.startsWith(bindings.S3_PUBLIC_BASE_URL!)).toBe(true);
    expect((await fetch(done.result.imageUrl)).headers.get("content-type")).toBe("image/png");
  });

  it("generates a product photo with url output into the bucket", async () => {
    const product = `data:image/jpeg;base64,${(await productJpeg()).toString("base64")}`;
    const res = await api("POST", "/api/image/product-photography", {
      body: {
        productImages: [{ dataUrl: product, label: "serum" }],
        promptId: "studio-plinth",
        model: "pro",
        resolution: "2K",
        aspectRatio: "4:5",
        overlayText: "New",
        outputResult: "url",
      },
    });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(replicate.requests.some((r) => r.path === "/v1/models/google/nano-banana-pro/predictions")).toBe(true);
    expect(res.json.data.imageUrl.startsWith(bindings.S3_PUBLIC_BASE_URL!)).toBe(true);
    const image = await fetch(res.json.data.imageUrl);
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(await sharp(Buffer.from(await image.arrayBuffer())).metadata()).toMatchObject({ width: 1229, height: 1536 });
  });
});
