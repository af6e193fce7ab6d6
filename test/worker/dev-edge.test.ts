/**
 * `npm run dev:edge` as a person runs it: the Worker in ONE workerd instance, started as a child process on a
 * temporary DATA_DIR and a free port.
 *
 * - The README's curl examples of areas A, B and C run in bash exactly as written (only BASE points at this
 *   server), from a directory holding `.data` (the DATA_DIR) and `docs`; every request's status is recorded
 *   by a curl wrapper, and what the examples made is checked (PNG files, a published post, a cancelled one,
 *   an async job, the usage ledger through `npm run admin`).
 * - No state leaks across requests: 200 mixed requests of five users, many in flight at once, and every
 *   answer belongs to its user. The users share sandbox account
 *   ids and Idempotency-Key strings on purpose; each writes captions carrying its own marker.
 * - Ctrl-C (SIGTERM) stops it in order: exit 0, admin.json removed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { access, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import sharp from "sharp";
import { ROOT } from "../../dev/edge-worker";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { openNodeDb } from "../../db/node";
import { createApiKey, createUser } from "../../src/http/api-keys";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";

const run = promisify(execFile);
let server: ServerProcess;
let workDir: string;
let scratch: ScratchDatabase;

beforeAll(async () => {
  // A scratch database rather than dev:edge's own per-DATA_DIR one, so it is dropped even if the start fails.
  scratch = await createScratchDatabase();
  server = await startServerProcess({ entry: "dev/edge.ts", env: { DATABASE_URL: scratch.url }, startTimeoutMs: 120_000 });
  workDir = await mkdtemp(join(tmpdir(), "readme-"));
  await symlink(server.dataDir, join(workDir, ".data"));
  await symlink(join(ROOT, "docs"), join(workDir, "docs"));
}, 150_000);

afterAll(async () => {
  const steps: Array<() => unknown> = [
    () => server?.dispose(),
    () => scratch?.drop(),
    () => (workDir ? rm(workDir, { recursive: true, force: true }) : undefined),
  ];
  for (const step of steps)
    await Promise.resolve()
      .then(() => step())
      .catch(() => {});
});

const admin = async (...args: string[]) =>
  (await run("npm", ["run", "-s", "admin", "--", ...args], { cwd: ROOT, env: { ...process.env, DATA_DIR: server.dataDir, DATABASE_URL: "" } })).stdout.trim();

const api = async (key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const type = res.headers.get("content-type") ?? "";
  return {
    status: res.status,
    headers: res.headers,
    type,
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
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The ```sh blocks under one `## ` heading of the README. */
function blocks(readme: string, heading: string): string[] {
  const start = readme.indexOf(`\n## ${heading}`);
  expect(start, `README section "${heading}"`).toBeGreaterThan(0);
  const section = readme.slice(start, readme.indexOf("\n## ", start + 1));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** What each README curl answers, in order (the respond-async POST sets its own -w and is checked by its poll). */
const EXPECTED: Array<[string, RegExp, number]> = [
  ["GET", /\/api\/qr-code\/generate\/sk_\w+\/https%3A%2F%2Fexample\.com\?size=300/, 200],
  ["GET", /\/api\/qr-code\/generate-base64\/sk_\w+\/hello%20world$/, 200],
  ["GET", /\/api\/qr-code\/generate-base64\/-\/hello%20world$/, 200],
  ["POST", /\/api\/qr-code\/generate$/, 200],
  ["POST", /\/api\/qr-code\/generate$/, 200],
  ["POST", /\/api\/qr-code\/generate$/, 200],
  ["POST", /\/api\/qr-code\/generate$/, 200],
  ["POST", /\/api\/qr-code\/decode$/, 200],
  ["GET", /\/api\/image\/product-photography-prompts$/, 200],
  ["GET", /\/api\/image\/image-model-options$/, 200],
  ["POST", /\/api\/image\/product-photography$/, 200],
  ["POST", /\/api\/image\/product-photography$/, 200],
  ["POST", /\/api\/image\/product-photography$/, 200],
  ["GET", /\/api\/image\/product-photography\/jobs\/[0-9a-f-]{36}$/, 200],
  ["GET", /\/api\/image\/credits\?limit=5$/, 200],
  ["POST", /\/api\/image\/product-photography$/, 402],
  ["GET", /\/api\/image\/gallery\?templateId=studio-white-sweep&limit=1$/, 200],
  ["GET", /\/api\/image\/gallery\/[0-9a-f-]{36}$/, 200],
  ["POST", /\/sandbox\/accounts$/, 201],
  ["POST", /\/sandbox\/accounts$/, 201],
  ["GET", /\/api\/v1\/social\/accounts$/, 200],
  ["POST", /\/api\/v1\/social\/media$/, 201],
  ["POST", /\/api\/v1\/social\/posts$/, 202],
  ["POST", /\/api\/v1\/social\/posts$/, 201],
  ["GET", /\/api\/v1\/social\/posts\/[0-9a-f-]{36}$/, 200],
  ["GET", /\/api\/v1\/social\/posts\?status=published&limit=10$/, 200],
  ["DELETE", /\/api\/v1\/social\/posts\/[0-9a-f-]{36}$/, 200],
  ["GET", /\/sandbox\/posts\?accountId=pageplatform:1001$/, 200],
  ["POST", /\/api\/v1\/social\/posts$/, 202],
  ["DELETE", /\/api\/image\/gallery\/[0-9a-f-]{36}$/, 200],
];

describe("the README against npm run dev:edge", () => {
  it("runs every curl example of areas A, B and C as written", { timeout: 180_000 }, async () => {
    const readme = await readFile(join(ROOT, "README.md"), "utf8");
    // The block that reads the first key from its file in DATA_DIR (.data unless DATA_DIR says otherwise).
    const start = blocks(readme, "Start").find((b) => /^KEY=\$\(cat "?(\$\{DATA_DIR:-\.data\}|\.data)\/dev-api-key"?\)$/m.test(b))!;
    expect(start).toContain("BASE=http://127.0.0.1:8787");
    const script = [
      "set -euo pipefail",
      // Records each request's status on stderr; a command that sets its own --write-out keeps it.
      `curl() { case " $* " in *" -w "*) command curl "$@" ;; *) command curl -w '%{stderr}@@ %{method} %{http_code} %{url_effective}\\n' "$@" ;; esac; }`,
      start.replace("BASE=http://127.0.0.1:8787", `BASE=${server.baseUrl}`),
      ...blocks(readme, "A. QR codes"),
      ...blocks(readme, "B. Product photography"),
      ...blocks(readme, "C. Social publishing"),
      'echo "@@ VARS $MEDIA $POST_ID $LATER_ID $JOB" >&2',
    ].join("\n");
    await writeFile(join(workDir, "readme.sh"), script);
    const { stdout, stderr } = await run("bash", ["readme.sh"], { cwd: workDir, maxBuffer: 64 * 1024 * 1024, timeout: 150_000 });

    const calls = [...stderr.matchAll(/^@@ (GET|POST|DELETE|PUT) (\d{3}) (\S+)$/gm)].map((m) => [m[1]!, Number(m[2]), m[3]!] as const);
    expect(calls.map(([method, status, url]) => `${method} ${status} ${url.replace(/sk_\w+/, "<key>")}`)).toHaveLength(EXPECTED.length);
    calls.forEach(([method, status, url], i) => {
      const [m, path, s] = EXPECTED[i]!;
      expect(`${method} ${url}`, `request ${i + 1}`).toMatch(new RegExp(`^${m} ${server.baseUrl.replace(/[.]/g, "\\.")}`));
      expect(url, `request ${i + 1}`).toMatch(path);
      expect(status, `request ${i + 1}: ${method} ${url}`).toBe(s);
    });
    const [media, postId, laterId, job] = /^@@ VARS (\S+) (\S+) (\S+) (\S+)$/m.exec(stderr)!.slice(1) as [string, string, string, string];

    // Area A: the PNG, every POST type, and the code read back.
    expect(await sharp(join(workDir, "qr.png")).metadata()).toMatchObject({ format: "png", width: 300, height: 300 });
    expect(stdout).toContain('{"data":{"decodedText":"https://example.com"}}');
    expect(stdout.match(/"qrCodeDataUrl":"data:image\/png;base64,/g)).toHaveLength(6);

    // Area B: the base64 photo decoded into a PNG; the batch with one product failed alone; the async job.
    expect(await sharp(join(workDir, "photo.png")).metadata()).toMatchObject({ format: "png", width: 1024, height: 1024 });
    expect(stdout).toMatch(/"label":"a","status":"succeeded"[^\]]*"label":"b","status":"failed","error":\{"code":"INVALID_IMAGE_URL"/);
    const KEY = server.apiKey;
    const done = await until("the async job", async () => {
      const res = await api(KEY, "GET", job);
      return res.json.data.status === "succeeded" ? res.json.data : undefined;
    });
    expect(done.result).toMatchObject({ width: 1229, height: 1536 });
    const image = await fetch(done.result.imageUrl);
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(done.result.imageUrl.startsWith(`${server.baseUrl}/files/photo/out/`)).toBe(true);
    expect(await sharp(Buffer.from(await image.arrayBuffer())).metadata()).toMatchObject({ width: 1229, height: 1536 });
    const usage = await admin("usage", "--email", "dev@localhost");
    expect(usage).toMatch(/^pro\s+2K\s+2\s/m);
    expect(usage).toMatch(/^standard\s+1K\s+2\s/m);

    // Area C: published on both accounts through QStash and the sandbox; the replay; the cancelled schedule.
    const post = await until("the post to be published", async () => {
      const res = await api(KEY, "GET", `/api/v1/social/posts/${postId}`);
      return res.json.data.accounts.every((a: { status: string }) => a.status === "published") ? res.json.data : undefined;
    });
    expect(post.accounts.map((a: { accountId: string }) => a.accountId).sort()).toEqual(["pageplatform:1001", "photoplatform:2002"]);
    const replay = await api(
      KEY,
      "POST",
      "/api/v1/social/posts",
      { accountIds: ["pageplatform:1001", "photoplatform:2002"], caption: "New in store", hashtags: ["sale"], images: [{ mediaId: media }] },
      { "Idempotency-Key": "launch-001" },
    );
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    expect(replay.json.data.id).toBe(postId);
    expect((await api(KEY, "GET", `/api/v1/social/posts/${laterId}`)).json.data.status).toBe("cancelled");
    // The gallery image's post publishes although its gallery item was deleted right after.
    const captions = await until("the gallery post to be published", async () => {
      const feed = await api(KEY, "GET", "/sandbox/posts?accountId=pageplatform:1001");
      const items = feed.json.data.items.map((i: { caption: string }) => i.caption).sort();
      return items.length === 2 ? items : undefined;
    });
    expect(captions).toEqual(["Diwali sale", "New in store\n\n#sale"]);
  });
});

describe("no state leaks across requests in one workerd instance", () => {
  const USERS = 5;
  const users: Array<{ marker: string; key: string; qrDataUrl: string; qrPng: Buffer; media: string[]; posts: string[] }> = [];
  let catalog: unknown;
  let image: string;

  beforeAll(async () => {
    image = (await readFile(join(ROOT, "docs/photo/logo.png"))).toString("base64");
    // Straight into dev:edge's database (the README test already runs `npm run admin` beside the server).
    const keys: string[] = [];
    const db = await openNodeDb({ url: scratch.url, poolSize: 1, migrate: false });
    try {
      for (let i = 0; i < USERS; i++)
        keys.push((await createApiKey(db.db, (await createUser(db.db, `leak-${i}-${crypto.randomUUID().slice(0, 8)}@example.test`)).userId)).key);
    } finally {
      await db.close();
    }
    for (const [i, key] of keys.entries()) {
      expect(key).toMatch(/^sk_\w{38}$/);
      const marker = `u${i}-${crypto.randomUUID().slice(0, 6)}`;
      for (const [platform, id] of [
        ["pageplatform", "1001"],
        ["photoplatform", "2002"],
      ]) {
        expect((await api(key, "POST", "/sandbox/accounts", { platform, name: `Shop ${marker}`, platformAccountId: id })).status).toBe(201);
      }
      const qr = await api(key, "POST", "/api/qr-code/generate", { type: "text", value: marker });
      const png = await api(key, "GET", `/api/qr-code/generate/${key}/${marker}`);
      users.push({ marker, key, qrDataUrl: qr.json.data.qrCodeDataUrl, qrPng: png.bytes!, media: [], posts: [] });
    }
    catalog = (await api(users[0]!.key, "GET", "/api/image/image-model-options")).json;
  }, 120_000);

  it("answers 200 mixed requests of five users, many at once, each with its own user's data only", { timeout: 180_000 }, async () => {
    const problems: string[] = [];
    const task = (u: (typeof users)[number], kind: string, n: number) => async () => {
      const wrong = (what: string) => problems.push(`${u.marker} ${kind} ${n}: ${what}`);
      switch (kind) {
        case "qr-post": {
          const res = await api(u.key, "POST", "/api/qr-code/generate", { type: "text", value: u.marker });
          if (res.json?.data?.qrCodeDataUrl !== u.qrDataUrl) wrong(`another QR code (status ${res.status})`);
          break;
        }
        case "qr-png": {
          const res = await api(u.key, "GET", `/api/qr-code/generate/${u.key}/${u.marker}`);
          if (res.status !== 200 || !res.bytes?.equals(u.qrPng)) wrong(`another PNG (status ${res.status})`);
          break;
        }
        case "media": {
          const res = await api(u.key, "POST", "/api/v1/social/media", { base64: image, mimeType: "image/png" });
          if (res.status !== 201) wrong(`status ${res.status} ${JSON.stringify(res.json)}`);
          else u.media.push(res.json.data.id);
          break;
        }
        case "post": {
          const caption = `${u.marker} post ${n}`;
          // The same Idempotency-Key string for every user: keys are scoped to their user.
          const res = await api(u.key, "POST", "/api/v1/social/posts", { accountIds: ["pageplatform:1001"], caption }, { "Idempotency-Key": `post-${n}` });
          if (res.status !== 202 || res.json.data.caption !== caption) wrong(`status ${res.status}, caption ${res.json?.data?.caption}`);
          else u.posts.push(res.json.data.id);
          break;
        }
        case "posts": {
          const res = await api(u.key, "GET", "/api/v1/social/posts?limit=100");
          const foreign = (res.json?.data?.items ?? []).filter((p: { caption: string }) => !p.caption.startsWith(`${u.marker} `));
          if (res.status !== 200 || foreign.length)
            wrong(`status ${res.status}, foreign ${JSON.stringify(foreign.map((p: { caption: string }) => p.caption))}`);
          break;
        }
        case "accounts": {
          const res = await api(u.key, "GET", "/api/v1/social/accounts");
          const names = (res.json?.data?.accounts ?? []).map((a: { name: string }) => a.name);
          if (res.status !== 200 || names.length !== 2 || names.some((name: string) => name !== `Shop ${u.marker}`)) wrong(`accounts ${JSON.stringify(names)}`);
          break;
        }
        case "catalog": {
          const res = await api(u.key, "GET", "/api/image/image-model-options");
          if (res.status !== 200 || JSON.stringify(res.json) !== JSON.stringify(catalog)) wrong(`status ${res.status}, another catalogue`);
          break;
        }
        case "sandbox-feed": {
          const res = await api(u.key, "GET", "/sandbox/posts?accountId=pageplatform:1001");
          const foreign = (res.json?.data?.items ?? []).filter((p: { caption: string }) => !p.caption.startsWith(`${u.marker} `));
          if (res.status !== 200 || foreign.length) wrong(`status ${res.status}, foreign ${JSON.stringify(foreign)}`);
          break;
        }
      }
    };
    // Per user: 8 QR posts, 4 QR PNGs, 4 media uploads, 8 post creations, 8 post lists, 4 account lists,
    // 2 catalogue reads, 2 sandbox feeds = 40; five users = 200, shuffled so users and kinds interleave.
    const MIX: Array<[string, number]> = [
      ["qr-post", 8],
      ["qr-png", 4],
      ["media", 4],
      ["post", 8],
      ["posts", 8],
      ["accounts", 4],
      ["catalog", 2],
      ["sandbox-feed", 2],
    ];
    const tasks = users.flatMap((u) => MIX.flatMap(([kind, count]) => Array.from({ length: count }, (_, n) => task(u, kind, n))));
    expect(tasks).toHaveLength(200);
    let seed = 42;
    for (let i = tasks.length - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const j = seed % (i + 1);
      [tasks[i], tasks[j]] = [tasks[j]!, tasks[i]!];
    }
    // 24 in flight: each Worker request opens its own database connection, and Postgres here allows 100.
    let next = 0;
    await Promise.all(
      Array.from({ length: 24 }, async () => {
        while (next < tasks.length) await tasks[next++]!();
      }),
    );
    expect(problems).toEqual([]);

    for (const [i, u] of users.entries()) {
      const other = users[(i + 1) % users.length]!;
      // Everything each user made is theirs alone.
      const list = await api(u.key, "GET", "/api/v1/social/posts?limit=100");
      expect(list.json.data.items.map((p: { caption: string }) => p.caption).sort()).toEqual(
        Array.from({ length: 8 }, (_, n) => `${u.marker} post ${n}`).sort(),
      );
      expect(u.media).toHaveLength(4);
      expect((await api(u.key, "GET", `/api/v1/social/media/${u.media[0]}`)).status).toBe(200);
      expect((await api(u.key, "GET", `/api/v1/social/media/${other.media[0]}`)).status).toBe(404);
      expect((await api(u.key, "GET", `/api/v1/social/posts/${other.posts[0]}`)).status).toBe(404);
    }
    // Delivery ran in QStash callbacks, each a request of its own: every user's sandbox feed holds exactly its own posts.
    for (const u of users) {
      await until(`${u.marker}'s deliveries`, async () => {
        const res = await api(u.key, "GET", "/api/v1/social/posts?status=published&limit=100");
        return res.json.data.items.length === 8 ? true : undefined;
      });
      const feed = await api(u.key, "GET", "/sandbox/posts?accountId=pageplatform:1001");
      expect(feed.json.data.items.map((p: { caption: string }) => p.caption).sort()).toEqual(
        Array.from({ length: 8 }, (_, n) => `${u.marker} post ${n}`).sort(),
      );
    }
  });
});

describe("stopping npm run dev:edge", () => {
  it("stops in order on SIGTERM: exit 0 and DATA_DIR/admin.json removed", async () => {
    await access(join(server.dataDir, "admin.json"));
    expect(await server.kill("SIGTERM")).toBe(0);
    await expect(access(join(server.dataDir, "admin.json"))).rejects.toThrow();
  });
});
