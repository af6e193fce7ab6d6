/**
 * `npm run smoke -- <base-url> [--key KEY] [--media-base URL]`: what a deployer checks against the deployed
 * Worker, from outside, with an API key (`--key` or SMOKE_API_KEY). Each check prints ok or FAIL with its
 * time; the exit code is 1 when one failed. It publishes nothing: the only thing it leaves behind is one
 * small image in the bucket (a media upload).
 *
 * Checks: /health answers ok with every dependency up; / names the service; an unauthenticated and a wrong-key
 * call answer 401; a QR code generated and decoded back; that PNG uploaded as media by base64 and its stored
 * URL fetched without credentials (under --media-base, S3_PUBLIC_BASE_URL, when given); the photo catalogues;
 * the social accounts and posts lists; /sandbox/… answers 404; the QStash callback refuses an unsigned request
 * (401 with QStash, 404 without).
 *
 * @example
 * npm run smoke -- https://shopkit-api.example.workers.dev --key sk_…
 */
import { parseArgs } from "node:util";
import { PUBLISH_CALLBACK_PATH } from "../src/adapters/queue/qstash";

const TIMEOUT_MS = 30_000;

interface Reply {
  status: number;
  headers: Headers;
  json?: any;
  text: string;
}

type Outcome = string | undefined;

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { key: { type: "string" }, "media-base": { type: "string" }, help: { type: "boolean", short: "h" } },
  });
  const baseArg = positionals[0] ?? process.env.SMOKE_BASE_URL;
  const key = values.key ?? process.env.SMOKE_API_KEY;
  if (values.help || !baseArg || !key) {
    console.error("usage: npm run smoke -- <base-url> [--key KEY] [--media-base S3_PUBLIC_BASE_URL]   (or SMOKE_BASE_URL, SMOKE_API_KEY)");
    return values.help ? 0 : 2;
  }
  const base = new URL(baseArg).origin;
  const mediaBase = values["media-base"]?.replace(/\/+$/, "");
  const auth = { authorization: `Bearer ${key}` };

  const call = async (method: string, path: string, init: { headers?: Record<string, string>; body?: unknown } = {}): Promise<Reply> => {
    const res = await fetch(path.startsWith("http") ? path : `${base}${path}`, {
      method,
      headers: { ...init.headers, ...(init.body === undefined ? {} : { "content-type": "application/json" }) },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      redirect: "manual",
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: res.status, headers: res.headers, json, text };
  };
  const expectStatus = (what: string, reply: Reply, status: number) => {
    if (reply.status !== status) throw new Error(`${what} answered ${reply.status}, expected ${status}: ${reply.text.slice(0, 300)}`);
  };

  /** The message of the plain 404 an unknown path answers: a closed route must answer exactly that. */
  let plain404: string | undefined;
  const notFound = async () => (plain404 ??= (await call("GET", `/no-such-path-${crypto.randomUUID()}`)).json?.error?.message ?? "(no message)");

  let queueKind: string | undefined;
  let qrPng: string | undefined;
  const checks: Array<[string, () => Promise<Outcome>]> = [
    [
      "GET /health: ok, every dependency up",
      async () => {
        const r = await call("GET", "/health");
        const checks = (r.json?.data?.checks ?? {}) as Record<string, { kind: string; status: string; error?: string }>;
        queueKind = checks.queue?.kind;
        const summary = Object.entries(checks)
          .map(([name, c]) => `${name} ${c.kind} ${c.status}${c.error ? ` (${c.error})` : ""}`)
          .join(", ");
        if (r.status !== 200 || r.json?.data?.status !== "ok") throw new Error(`answered ${r.status}: ${summary || r.text.slice(0, 300)}`);
        return summary;
      },
    ],
    [
      "GET /: names the service",
      async () => {
        const r = await call("GET", "/");
        expectStatus("GET /", r, 200);
        if (typeof r.json?.data?.name !== "string") throw new Error(`no service name in ${r.text.slice(0, 200)}`);
        return `${r.json.data.name} ${r.json.data.version ?? ""}`.trim();
      },
    ],
    [
      "the API refuses a request without a key, and a wrong key (401)",
      async () => {
        const none = await call("GET", "/api/v1/social/posts");
        expectStatus("without a key", none, 401);
        const wrong = await call("GET", "/api/v1/social/posts", { headers: { authorization: "Bearer sk_not_a_key_of_this_service" } });
        expectStatus("with a wrong key", wrong, 401);
        return none.json?.error?.code;
      },
    ],
    [
      "POST /api/qr-code/generate, then /decode reads it back",
      async () => {
        const text = `shopkit smoke ${new Date().toISOString()}`;
        const made = await call("POST", "/api/qr-code/generate", { headers: auth, body: { type: "text", value: text, size: 400 } });
        expectStatus("generate", made, 200);
        qrPng = made.json?.data?.qrCodeDataUrl;
        if (!qrPng?.startsWith("data:image/png;base64,")) throw new Error(`no PNG data URI in ${made.text.slice(0, 200)}`);
        const read = await call("POST", "/api/qr-code/decode", { headers: auth, body: { base64: qrPng } });
        expectStatus("decode", read, 200);
        if (read.json?.data?.decodedText !== text) throw new Error(`decoded "${read.json?.data?.decodedText}", expected "${text}"`);
      },
    ],
    [
      "POST /api/v1/social/media (base64), its stored URL publicly fetchable",
      async () => {
        if (!qrPng) throw new Error("no image to upload (the QR check failed)");
        const stored = await call("POST", "/api/v1/social/media", { headers: auth, body: { base64: qrPng } });
        expectStatus("upload", stored, 201);
        const url = stored.json?.data?.url as string | undefined;
        if (!url) throw new Error(`no url in ${stored.text.slice(0, 200)}`);
        if (mediaBase && !url.startsWith(`${mediaBase}/`)) throw new Error(`stored at ${url}, not under --media-base ${mediaBase}`);
        const image = await fetch(url, { redirect: "manual", signal: AbortSignal.timeout(TIMEOUT_MS) });
        const bytes = new Uint8Array(await image.arrayBuffer());
        if (image.status !== 200) throw new Error(`GET ${url} without credentials answered ${image.status}`);
        if (!(bytes[0] === 0xff && bytes[1] === 0xd8)) throw new Error(`GET ${url} is not a JPEG (${image.headers.get("content-type")})`);
        return `${url} (${bytes.length} bytes, ${image.headers.get("content-type")})`;
      },
    ],
    [
      "the photo catalogues: GET /api/image/product-photography-prompts and /image-model-options",
      async () => {
        const templates = await call("GET", "/api/image/product-photography-prompts");
        expectStatus("templates", templates, 200);
        const models = await call("GET", "/api/image/image-model-options");
        expectStatus("models", models, 200);
        if (!templates.json?.data?.length || !models.json?.data?.length) throw new Error("an empty catalogue");
        return `${templates.json.data.length} templates, ${models.json.data.length} models`;
      },
    ],
    [
      "GET /api/v1/social/accounts and /posts answer",
      async () => {
        const accounts = await call("GET", "/api/v1/social/accounts", { headers: auth });
        expectStatus("accounts", accounts, 200);
        const posts = await call("GET", "/api/v1/social/posts?limit=1", { headers: auth });
        expectStatus("posts", posts, 200);
        if (!Array.isArray(posts.json?.data?.items)) throw new Error(`no items in ${posts.text.slice(0, 200)}`);
        return `${accounts.json?.data?.accounts?.length ?? "?"} connected accounts`;
      },
    ],
    [
      "closed by default: /sandbox/… answers 404",
      async () => {
        const plain = await notFound();
        for (const path of ["/sandbox/posts?accountId=pageplatform:1", "/sandbox/v23.0/dialog/oauth?client_id=x&redirect_uri=x&state=x"]) {
          const r = await call("GET", path, { headers: auth });
          if (r.status !== 404 || r.json?.error?.message !== plain)
            throw new Error(`GET ${path} answered ${r.status}, expected the plain 404 of an unknown path: ${r.text.slice(0, 200)}`);
        }
      },
    ],
    [
      `closed by default: POST ${PUBLISH_CALLBACK_PATH} unsigned is refused`,
      async () => {
        const r = await call("POST", PUBLISH_CALLBACK_PATH, { body: { deliveryId: "smoke" } });
        // With QStash the route exists and wants a signature; without it, the route does not exist.
        const expected = queueKind === "qstash" ? [401] : queueKind === "poller" ? [404] : [401, 404];
        if (!expected.includes(r.status))
          throw new Error(`answered ${r.status}, expected ${expected.join(" or ")} (queue: ${queueKind ?? "unknown"}): ${r.text.slice(0, 200)}`);
        if (r.status === 404 && r.json?.error?.message !== (await notFound()))
          throw new Error(`answered a 404 that is not the plain one of an unknown path: ${r.text.slice(0, 200)}`);
        return `${r.status} (queue: ${queueKind ?? "unknown"})`;
      },
    ],
  ];

  console.log(`smoke: ${base} with key ${key.slice(0, 11)}…`);
  let failed = 0;
  for (const [name, check] of checks) {
    const started = Date.now();
    let line: string;
    try {
      const detail = await check();
      line = `ok   ${`${Date.now() - started} ms`.padStart(8)}  ${name}${detail ? `: ${detail}` : ""}`;
    } catch (err) {
      failed++;
      const cause = (err as { cause?: unknown }).cause;
      line = `FAIL ${`${Date.now() - started} ms`.padStart(8)}  ${name}: ${err instanceof Error ? err.message : String(err)}${cause ? ` (${String(cause)})` : ""}`;
    }
    console.log(line);
  }
  console.log(failed ? `smoke: ${failed} of ${checks.length} checks failed` : `smoke: all ${checks.length} checks passed`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`smoke failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
