/**
 * Social publishing (area C) through HTTP against `npm start`, every rate limit raised to 1,000,000, each
 * workload beside its peer measured in the same run (taking turns, so both meet the same load on this
 * shared machine), the ratio and the goal:
 *
 * 1. Media: `POST /api/v1/social/media` with a 4000x3000 photo-like JPEG of about 4.9 MB (about 6.5 MB of
 *    JSON `{base64, mimeType}`), on the embedded default (PGlite), median of 5 after MEDIA_WARMUP. Peer: sharp
 *    in this process resizing the same JPEG to fit 1440x1800 and encoding JPEG q85, with one libvips thread
 *    (like for like) and with its default concurrency, median of 5. Goal: <= 1.5x sharp (1 thread). Also the
 *    CPU time of each (the server's process group, all threads; sharp's in this process), which unlike the
 *    wall time does not depend on how busy the shared machine is, and the server's peak RSS growth during
 *    each request (its process group's RSS sampled every 20 ms), beside the goal "peak memory of the request
 *    < 128 MB".
 * 2. Lists: `GET /api/v1/social/posts?limit=50`, `&status=published` and `&offset=5000` for users with
 *    1,000, 10,000 and 100,000 posts (2 deliveries each, a mix of outcomes) seeded by SQL into a scratch
 *    PostgreSQL database the server runs on; p50 of 200 requests over 4 connections per size and query,
 *    after both sides served LIST_PREWARM requests of the first user's queries untimed (a running server is
 *    warm; without it the first cell also measured the server's JIT warm-up, about 2x its steady cost).
 *    Peer: the same page by one hand-written query through `pg` (the page of posts newest first, limit/
 *    offset, filtered on their derived status in a lateral join when asked; then the page's status and
 *    deliveries as json_agg), 4 pooled connections. Goals: within 2x of the peer; ours at 100,000 posts
 *    within 1.5x of ours at 1,000 (from the cells, and again with the two users taking turns in the same
 *    minute). The server's `total` is printed beside the peer's count of the same filter, and the first
 *    page's ids and statuses are compared with the peer's.
 * 3. Post creation: `POST /api/v1/social/posts` text-only, immediate, to two sandbox pageplatform accounts
 *    (PLATFORM_SANDBOX=on, so the delivery worker really publishes them), a fresh Idempotency-Key each, 16
 *    connections for 10 s on PostgreSQL. Peer: a raw one-row `INSERT` loop through `pg` (16 pooled
 *    connections, 10 s) into a scratch copy of the posts table, before and after ours. Goal: >= 0.10 of the
 *    peer's rows/s. Then whether the delivery worker kept up: the deliveries not yet published, each second
 *    of the load and after it (every second for up to 60 s), and how long they took to drain. Goal: no
 *    growing backlog. Also the CPU time per post (the server's processes, PostgreSQL, this process) and per
 *    peer row, and how many of the cores each side kept busy: both rates move with this shared machine's
 *    state from hour to hour (the peer's more than ours), and the CPU per item shows which side moved.
 *
 * BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") is given to node for the media, lists' and
 * creation's server, which then stops with SIGTERM so that the profile is written (the request thread's:
 * the heavy-work threads start without the flags).
 *
 * Everything it starts (servers, scratch databases, pools) is stopped and removed at the end, on an error
 * and on Ctrl-C. `SOCIAL_HTTP=media,lists,create` runs only some of the three; MEDIA_RUNS (default 5) sets
 * how many media requests the median is taken over.
 *
 * Run alone: `npx tsx bench/social-http.ts`; or with the others: `npm run bench -- social-http`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { pathToFileURL } from "node:url";
import pg from "pg";
import sharp from "sharp";
import { Pool } from "undici";
import { openNodeDb } from "../db/node";
import { createScratchDatabase } from "../dev/postgres";
import { createApiKey, createUser } from "../src/http/api-keys";
import { startServerProcess, type ServerProcess } from "../test/helpers/server-process";
import { benchResources, type BenchResources } from "./resources";
import { cpuByPid, cpuMs, cpuSince, postgresPids, serverPids } from "./proc-cpu";
import { medianMs, middle } from "./timing";

const MILLION = "1000000";
const LIMITS = {
  RATE_LIMIT_QR: MILLION,
  RATE_LIMIT_PHOTO: MILLION,
  RATE_LIMIT_PHOTO_READ: MILLION,
  RATE_LIMIT_SOCIAL_READ: MILLION,
  RATE_LIMIT_SOCIAL_WRITE: MILLION,
  LOG_LEVEL: "info",
};
const MIB = 1024 * 1024;

const MEDIA_RUNS = Number(process.env.MEDIA_RUNS ?? 5);
/**
 * Large uploads each side makes, untimed, before the measured runs. After a single one the server's next
 * uploads still took 1.5-2.5x its later ones (V8 compiling the decoder, resizer and encoder in each of its
 * two heavy-work threads, which take the uploads in turn); a running server is warm. Their times are printed.
 */
const MEDIA_WARMUP = 5;
const RSS_SAMPLE_MS = 20;

const LIST_SIZES = [1_000, 10_000, 100_000];
const LIST_QUERIES: ListQuery[] = [
  { query: "limit=50", limit: 50, offset: 0 },
  { query: "limit=50&status=published", limit: 50, offset: 0, published: true },
  { query: "limit=50&offset=5000", limit: 50, offset: 5000 },
];
const LIST_CONNECTIONS = 4;
const LIST_WARMUP = 20;
/** Requests each side serves before the first cell, untimed, spread over the first user's queries. */
const LIST_PREWARM = 3000;
const LIST_ROUNDS = 4;
const LIST_PER_ROUND = 50;

const CREATE_CONNECTIONS = 16;
const CREATE_MS = 10_000;
/**
 * Each side is warmed up for this long before it is measured. A freshly started server serves about a third of
 * its steady rate in its first second and climbs for most of ten (V8 still compiling the request path's hot
 * functions: during a two-second warm-up its compiler threads took about a twentieth of the machine's CPU all
 * through the measured load); the peer's pool climbs for a second or two. The per-second rates are printed.
 */
const CREATE_WARMUP_MS = 10_000;
const DRAIN_MS = 60_000;
const ACCOUNTS = ["pageplatform:1001", "pageplatform:1002"];

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (bytes: number) => `${fmt(bytes / MIB)} MiB`;

/** Prints the figures; timings are never assertions. */
export async function benchSocialHttp(): Promise<void> {
  const parts = (process.env.SOCIAL_HTTP ?? "media,lists,create").split(",").map((p) => p.trim());
  const res = benchResources();
  try {
    if (parts.includes("media")) await benchMedia(res);
    if (parts.includes("lists")) await benchLists(res);
    if (parts.includes("create")) await benchCreate(res);
  } finally {
    await res.close();
  }
}

// ---------------------------------------------------------------- 1. media

async function benchMedia(res: BenchResources): Promise<void> {
  const jpeg = await largePhotoJpeg(4000, 3000);
  // The body as bytes, made once (as the peer gets its JPEG as bytes): a string body would have the client
  // encode 6.5 MB to UTF-8 on every request (about 3.5 ms, counted as ours), which is no part of the service.
  const body = Buffer.from(JSON.stringify({ base64: jpeg.toString("base64"), mimeType: "image/jpeg" }));
  const small = JSON.stringify({
    base64: (
      await sharp({ create: { width: 64, height: 48, channels: 3, background: "#8a6" } })
        .jpeg()
        .toBuffer()
    ).toString("base64"),
    mimeType: "image/jpeg",
  });
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean);
  const server = await res.own(
    () => startServerProcess({ nodeArgs, env: LIMITS }),
    (s) => s.dispose(),
  );
  const http = await res.own(
    async () => new Pool(server.baseUrl, { connections: 1 }),
    (p) => p.destroy(),
  );

  const { rss, cpuMs } = serverGroup(server);
  // The sampler and ServerProcess.rss() must read the same processes. Compared only while the RSS holds
  // still: just after start-up the server is still handing memory back (PGlite's set-up, malloc's trim).
  for (let attempt = 1; ; attempt++) {
    const check = await server.rss();
    const sampled = rss();
    if (Math.abs(sampled - check) <= 0.05 * check && Math.abs((await server.rss()) - check) <= 0.05 * check) break;
    if (attempt === 20) throw new Error(`the RSS sampler reads ${mib(sampled)}, ServerProcess.rss() ${mib(check)}`);
    await new Promise((r) => setTimeout(r, 250));
  }

  /** One upload, its wall time, and the server's peak RSS during it over the RSS just before it. */
  const upload = async (body: string | Buffer) => {
    const base = rss();
    const cpuBefore = cpuMs();
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), RSS_SAMPLE_MS);
    const started = performance.now();
    let answer: Awaited<ReturnType<typeof http.request>>;
    let json: { data?: { width: number; height: number; bytes: number } };
    let ms: number;
    try {
      answer = await http.request({
        method: "POST",
        path: "/api/v1/social/media",
        headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
        body,
      });
      json = (await answer.body.json()) as typeof json;
      ms = performance.now() - started;
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, rss());
    if (answer.statusCode !== 201 || !json.data) throw new Error(`POST /media answered ${answer.statusCode}: ${JSON.stringify(json)}\n${lastLines(server)}`);
    return { ms, cpu: cpuMs() - cpuBefore, growth: peak - base, base, out: json.data };
  };

  // sharp's operation cache off: the service caches nothing between requests either. sharp's default
  // concurrency is libvips' thread count, 1 on glibc Linux without jemalloc; all cores are tried too.
  sharp.cache(false);
  const defaultThreads = sharp.concurrency();
  const threads = [...new Set([1, defaultThreads, availableParallelism()])];
  const peer = async (n: number) => {
    sharp.concurrency(n);
    try {
      const started = performance.now();
      const cpu = process.cpuUsage();
      const out = await sharp(jpeg)
        .rotate()
        .resize(1440, 1800, { fit: "inside", withoutEnlargement: true })
        .jpeg({ quality: 85 })
        .toBuffer({ resolveWithObject: true });
      const used = process.cpuUsage(cpu);
      return { ms: performance.now() - started, cpu: (used.user + used.system) / 1000, out: out.info };
    } finally {
      sharp.concurrency(defaultThreads);
    }
  };

  // A small upload starts the server's heavy-work thread; then a warm-up of each (the first large upload,
  // from a server that has freed no large buffers yet, is kept for its memory), then each in turn, the order
  // flipped every run.
  const start = await upload(small);
  const first = await upload(body);
  const warmUp = { ours: [first.ms], peer: [] as number[] };
  for (let i = 1; i < MEDIA_WARMUP; i++) warmUp.ours.push((await upload(body)).ms);
  for (let i = 0; i < MEDIA_WARMUP; i++) for (const n of threads) warmUp.peer.push((await peer(n)).ms);
  const ours = { ms: [] as number[], cpu: [] as number[], growth: [] as number[], base: [] as number[] };
  const peers = threads.map(() => [] as number[]);
  const peerCpu = threads.map(() => [] as number[]);
  let out = first.out;
  let peerOut: { width: number; height: number; size: number } | undefined;
  for (let i = 0; i < MEDIA_RUNS; i++) {
    const steps = [
      async () => {
        const r = await upload(body);
        ours.ms.push(r.ms);
        ours.cpu.push(r.cpu);
        ours.growth.push(r.growth);
        ours.base.push(r.base);
        out = r.out;
      },
      ...threads.map((n, t) => async () => {
        const r = await peer(n);
        peers[t]!.push(r.ms);
        peerCpu[t]!.push(r.cpu);
        peerOut = r.out;
      }),
    ];
    for (const step of i % 2 ? steps.reverse() : steps) await step();
  }

  console.log(
    `\n1. Media: POST /api/v1/social/media, a 4000x3000 photo-like JPEG (${fmt(jpeg.length / 1e6, 1)} MB; ${fmt(body.length / 1e6, 1)} MB of JSON {base64, mimeType}, made into bytes once and sent as they are)`,
  );
  console.log(
    `   -> ${out.width}x${out.height} JPEG (${fmt(out.bytes / 1024)} KiB; sharp's ${peerOut!.width}x${peerOut!.height}, ${fmt(peerOut!.size / 1024)} KiB); npm start on the embedded default (PGlite),`,
  );
  console.log(
    `   one request at a time; median of ${MEDIA_RUNS} after ${MEDIA_WARMUP} untimed of each (the server's took ${warmUp.ours.map((ms) => fmt(ms)).join(", ")} ms;`,
  );
  console.log(`   sharp's ${warmUp.peer.map((ms) => fmt(ms)).join(", ")}), taking turns with the peer in this process:`);
  const row = (label: string, ms: number[]) =>
    console.log(`  ${label.padEnd(76)} ${fmt(middle(ms)).padStart(6)} ms  (runs ${ms.map((m) => fmt(m)).join(", ")})`);
  row("ours: POST /media over HTTP (TypeScript, no native code)", ours.ms);
  const label = (n: number) =>
    `${n === 1 ? "peer: sharp resize to fit 1440x1800 + JPEG q85, 1 thread" : `peer: the same, ${n} threads`}${n === defaultThreads ? " (sharp's default)" : n > 1 ? " (all cores)" : ""}`;
  threads.forEach((n, t) => {
    row(label(n), peers[t]!);
  });
  const oursMs = middle(ours.ms);
  const others = threads.slice(1).map((n, t) => `ours / sharp (${n} threads): ${fmt(oursMs / middle(peers[t + 1]!), 2)}x`);
  console.log(`  ratio ours / sharp (1 thread): ${fmt(oursMs / middle(peers[0]!), 2)}x (goal <= 1.5x)${others.length ? `; ${others.join("; ")}` : ""}`);
  // CPU time does not depend on how many other processes share the cores (wall time does, and the server's
  // heavy-work thread runs at a lower priority than this process).
  row("ours: the server's CPU time per request (all its threads; 10 ms ticks)", ours.cpu);
  row("peer: sharp's CPU time (this process, 1 thread)", peerCpu[0]!);
  console.log(`  CPU ratio ours / sharp (1 thread): ${fmt(middle(ours.cpu) / middle(peerCpu[0]!), 2)}x`);
  console.log(
    `  ${"ours: the server's peak RSS growth during a request (sampled every 20 ms)".padEnd(76)} ${`+${fmt(middle(ours.growth) / MIB)}`.padStart(6)} MiB  (runs +${ours.growth.map((g) => fmt(g / MIB)).join(", +")} MiB over ${mib(middle(ours.base))})`,
  );
  console.log(
    `  ${"  the first on the fresh server (later ones reuse what it left in malloc)".padEnd(76)} ${`+${fmt(first.growth / MIB)}`.padStart(6)} MiB  (over ${mib(first.base)})`,
  );
  console.log(
    `  ${"  before it, a 64x48 upload that started the heavy-work thread".padEnd(76)} ${`+${fmt(start.growth / MIB)}`.padStart(6)} MiB  (over ${mib(start.base)})`,
  );
  const worst = Math.max(first.growth, ...ours.growth);
  console.log(`  goal: peak memory of the request < 128 MB: the largest growth, ${fmt(worst / 1e6)} MB, is ${fmt(worst / 128e6, 2)} of it`);
  // Its CPU and memory are not wanted by the next workloads.
  await res.release(http);
  if (nodeArgs?.length) await server.kill("SIGTERM");
  await res.release(server);
}

/**
 * A photo-like JPEG as large as a camera's: smooth gradients plus lightly blurred gaussian noise (less blur
 * than test/helpers' makePhotoJpeg, so more detail survives), encoded by libvips at quality 93.
 */
async function largePhotoJpeg(width: number, height: number): Promise<Buffer> {
  const noise = await sharp({ create: { width, height, channels: 3, background: "#000", noise: { type: "gaussian", mean: 128, sigma: 40 } } })
    .blur(0.8)
    .raw()
    .toBuffer();
  const pixels = Buffer.alloc(width * height * 3);
  const clamp = (v: number) => (v < 0 ? 0 : v > 255 ? 255 : v);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const n = noise[i]! - 128;
      pixels[i] = clamp((x / width) * 200 + 30 + n);
      pixels[i + 1] = clamp((y / height) * 180 + 40 + (noise[i + 1]! - 128) * 0.5 + n * 0.5);
      pixels[i + 2] = clamp(((x + y) / (width + height)) * 150 + 60 + n);
    }
  }
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 93 })
    .toBuffer();
}

/**
 * The summed VmRSS of the server's process group (the tsx wrapper and the app, as ServerProcess.rss()),
 * and its summed CPU time (user + system of every thread, ms, in the kernel's 10 ms ticks), the RSS cheap
 * enough to sample every 20 ms: the group is found once (the process whose environment holds its
 * DATA_DIR, then every process of that group) and then only those /proc/<pid>/status files are read, with
 * synchronous reads. ServerProcess.rss() reads every process's files under /proc on each call, tens of
 * milliseconds of this process's CPU here, which would crowd out the server on 2 cores.
 */
function serverGroup(server: ServerProcess): { rss: () => number; cpuMs: () => number } {
  const procs = readdirSync("/proc").filter((e) => /^\d+$/.test(e));
  const read = (path: string) => {
    try {
      return readFileSync(path, "latin1");
    } catch {
      return ""; // ended, or not ours to read
    }
  };
  const groupOf = (pid: string) => {
    const stat = read(`/proc/${pid}/stat`);
    return stat ? Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) : -1;
  };
  const mark = `DATA_DIR=${server.dataDir}\0`;
  const member = procs.find((pid) => read(`/proc/${pid}/environ`).includes(mark));
  if (!member) throw new Error(`no process with DATA_DIR=${server.dataDir} under /proc`);
  const pgid = groupOf(member);
  const pids = procs.filter((pid) => groupOf(pid) === pgid);
  const ticks = (pid: string) => {
    const stat = read(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return stat ? Number(fields[11]) + Number(fields[12]) : 0; // utime, stime
  };
  return {
    rss: () => pids.reduce((sum, pid) => sum + Number(/VmRSS:\s+(\d+) kB/.exec(read(`/proc/${pid}/status`))?.[1] ?? 0) * 1024, 0),
    cpuMs: () => pids.reduce((sum, pid) => sum + ticks(pid) * 10, 0),
  };
}

function lastLines(server: ServerProcess, n = 20): string {
  return server.output().split("\n").slice(-n).join("\n");
}

// ---------------------------------------------------------------- 2. lists

interface ListQuery {
  query: string;
  limit: number;
  offset: number;
  /** status=published */
  published?: boolean;
}

interface ListCell {
  size: number;
  q: ListQuery;
  ours: number[];
  peer: number[];
  total: number;
  peerCount: number;
  /** The peer's count query alone (not part of its page query), median of 5. */
  countMs: number;
  items: number;
  samePage: boolean;
}

/**
 * Per post, by its number i (i % 100): 0-79 published to both accounts, 80-87 published to one and failed
 * for good on the other (partially_published), 88-92 failed for good on both, 93-96 cancelled, 97-99
 * scheduled a month ahead (pending, not due). Nothing is due, so the server's delivery worker leaves them alone.
 */
const SEED_POSTS = `
  insert into posts (id, user_id, caption, hashtags, images, scheduled_for, created_at, updated_at, cancelled_at)
  select id, $1, 'New arrivals, week ' || i || ': linen shirts, summer dresses and the last of the spring sale. Link in bio.',
    '["newarrivals", "summer", "shop"]'::jsonb,
    jsonb_build_array(jsonb_build_object('url', 'http://127.0.0.1/files/social/' || id || '.jpg', 'width', 1440, 'height', 1080, 'mediaId', gen_random_uuid())),
    case when k >= 97 then now() + interval '30 days' + i * interval '1 second' end,
    at, at + interval '5 seconds', case when k between 93 and 96 then at + interval '1 minute' end
  from seed`;
const SEED_DELIVERIES = `
  insert into deliveries (post_id, user_id, account_id, platform, status, attempts, next_attempt_at, provider_post_id, published_at,
    error_code, error_message, last_attempt_at, created_at, updated_at)
  select s.id, $1, a.account_id, a.platform, v.status,
    case v.status when 'published' then 1 when 'failed' then 5 else 0 end,
    case when v.status = 'pending' then now() + interval '30 days' + s.i * interval '1 second' end,
    case when v.status = 'published' then (100000000 + s.i * 2 + a.n)::text end,
    case when v.status = 'published' then s.at + interval '5 seconds' end,
    case when v.status = 'failed' then 'PLATFORM_REJECTED' end,
    case when v.status = 'failed' then 'The platform refused the post (sandbox seed).' end,
    case when v.status in ('published', 'failed') then s.at + interval '5 seconds' end,
    s.at, s.at + interval '5 seconds'
  from seed s
  cross join (values (1, 'pageplatform:9001', 'pageplatform'), (2, 'photoplatform:9002', 'photoplatform')) a(n, account_id, platform)
  cross join lateral (select case
      when s.k < 80 then 'published'
      when s.k < 88 then case when a.n = 1 then 'published' else 'failed' end
      when s.k < 93 then 'failed'
      when s.k < 97 then 'cancelled'
      else 'pending' end as status) v`;

/** The derived status of post `p` (the rules of src/social/post-record.ts) over its deliveries `d`. */
const PEER_STATUS = `case
    when bool_or(d.status = 'publishing') then 'publishing'
    when bool_or(d.status = 'pending' or (d.status = 'failed' and d.next_attempt_at is not null)) then
      case when p.scheduled_for > now() and bool_and(d.attempts = 0) then 'scheduled' else 'queued' end
    when bool_and(d.status = 'published') then 'published'
    when bool_or(d.status = 'published') then 'partially_published'
    when bool_or(d.status = 'cancelled') then 'cancelled'
    else 'failed' end`;

/**
 * The peer: one page of a user's posts by one hand-written query: the page first (newest first, limit/offset;
 * with the status filter, the derived status of each post in a lateral join to filter on), then each post of
 * the page with its derived status and its deliveries as json_agg. `count` gives the number of matching
 * posts instead (untimed, a check of the server's `total`).
 */
function peerSql(published: boolean, count = false): string {
  const matching = published
    ? `from posts p cross join lateral (select ${PEER_STATUS} as status from deliveries d where d.post_id = p.id) s
       where p.user_id = $1 and s.status = 'published'`
    : "from posts p where p.user_id = $1";
  if (count) return `select count(*)::int as n ${matching}`;
  return `
    with page as (
      select p.id, p.caption, p.hashtags, p.images, p.scheduled_for, p.created_at, p.updated_at, p.cancelled_at ${matching}
      order by p.created_at desc, p.id desc limit $2 offset $3)
    select p.*, t.status, t.accounts
    from page p
    cross join lateral (
      select ${PEER_STATUS} as status,
        json_agg(json_build_object('accountId', d.account_id, 'platform', d.platform, 'status', d.status, 'attempts', d.attempts,
          'nextAttemptAt', d.next_attempt_at, 'jobId', d.job_id, 'providerPostId', d.provider_post_id, 'publishedAt', d.published_at,
          'errorCode', d.error_code, 'errorMessage', d.error_message) order by d.account_id) as accounts
      from deliveries d where d.post_id = p.id) t
    order by p.created_at desc, p.id desc`;
}

async function benchLists(res: BenchResources): Promise<void> {
  const scratch = await res.own(
    () => createScratchDatabase(),
    (s) => s.drop(),
  );
  // The server migrates the database and makes its first user (whose key it writes to DATA_DIR); the users
  // of the bench come after.
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean);
  const server = await res.own(
    () => startServerProcess({ nodeArgs, env: { ...LIMITS, DATABASE_URL: scratch.url } }),
    (s) => s.dispose(),
  );
  const handle = await openNodeDb({ url: scratch.url, poolSize: 1, migrate: false });
  const users: Array<{ size: number; userId: string; key: string }> = [];
  try {
    for (const size of LIST_SIZES) {
      const { userId } = await createUser(handle.db, `social-http-${size}@example.test`);
      users.push({ size, userId, key: (await createApiKey(handle.db, userId, "bench")).key });
    }
  } finally {
    await handle.close();
  }

  const admin = await res.own(
    async () => {
      const client = new pg.Client({ connectionString: scratch.url });
      await client.connect();
      return client;
    },
    (c) => c.end(),
  );
  const seeding = performance.now();
  for (const { size, userId } of users) {
    await admin.query("begin");
    await admin.query(
      `create temp table seed on commit drop as
       select i, i % 100 as k, gen_random_uuid() as id, now() - i * interval '30 seconds' as at from generate_series(1, $1::int) i`,
      [size],
    );
    await admin.query(SEED_POSTS, [userId]);
    await admin.query(SEED_DELIVERIES, [userId]);
    for (const [n, id] of ["9001", "9002"].entries()) {
      const platform = n === 0 ? "pageplatform" : "photoplatform";
      await admin.query(
        `insert into social_accounts (id, user_id, platform, platform_account_id, name, token_ciphertext) values ($1, $2, $3, $4, $5, 'not-a-token')`,
        [`${platform}:${id}`, userId, platform, id, `Bench shop ${id}`],
      );
    }
    await admin.query("commit");
  }
  // Vacuumed as well as analyzed, as PostgreSQL's autovacuum would have done to a history this size (it
  // vacuums a table after 1,000 inserts and a fifth of its rows), which this machine's PostgreSQL has off: a
  // history never vacuumed has no visibility map, so no index-only scan, a state no production database stays in.
  await admin.query("vacuum analyze posts");
  await admin.query("vacuum analyze deliveries");
  const seedSeconds = (performance.now() - seeding) / 1000;

  const { http, peerPool } = await clientPools(res, server.baseUrl, scratch.url, LIST_CONNECTIONS);

  const cells: ListCell[] = [];
  const sides = (userId: string, key: string, q: ListQuery) => {
    const ours = async () => {
      const answer = await http.request({ method: "GET", path: `/api/v1/social/posts?${q.query}`, headers: { authorization: `Bearer ${key}` } });
      const json = (await answer.body.json()) as { data?: { items: Array<{ id: string; status: string }>; total: number } };
      if (answer.statusCode !== 200 || !json.data)
        throw new Error(`GET /posts?${q.query} answered ${answer.statusCode}: ${JSON.stringify(json)}\n${lastLines(server)}`);
      return json.data;
    };
    const text = peerSql(Boolean(q.published));
    const peer = async () =>
      (await peerPool.query<{ id: string; status: string }>({ name: `page-${q.published ? "published" : "all"}`, text, values: [userId, q.limit, q.offset] }))
        .rows;
    return { ours, peer };
  };
  // Both sides warm before any cell is measured, as a running server is.
  for (const q of LIST_QUERIES) {
    const { ours, peer } = sides(users[0]!.userId, users[0]!.key, q);
    await load(ours, LIST_PREWARM / LIST_QUERIES.length);
    await load(peer, LIST_PREWARM / LIST_QUERIES.length);
  }
  for (const { size, userId, key } of users) {
    for (const q of LIST_QUERIES) {
      const { ours, peer } = sides(userId, key, q);
      // The two must agree: the same page of ids, and the server's total is the peer's count.
      const [page, rows, counted] = await Promise.all([ours(), peer(), admin.query<{ n: number }>(peerSql(Boolean(q.published), true), [userId])]);
      const samePage = page.items.length === rows.length && page.items.every((item, i) => item.id === rows[i]!.id && item.status === rows[i]!.status);

      const [oursTimes, peerTimes] = await takingTurns(ours, peer);
      const countMs = await medianMs(() => admin.query(peerSql(Boolean(q.published), true), [userId]), 5, 1);
      cells.push({ size, q, ours: oursTimes, peer: peerTimes, total: page.total, peerCount: counted.rows[0]!.n, countMs, items: page.items.length, samePage });
    }
  }

  const n = LIST_ROUNDS * LIST_PER_ROUND;
  console.log(`\n2. Lists: GET /api/v1/social/posts?… against npm start on PostgreSQL (a scratch database), one user per size; each post has`);
  console.log(
    `   2 deliveries: 80 % published, 8 % partially published, 5 % failed, 4 % cancelled, 3 % scheduled (seeded by SQL, then vacuumed and analyzed, in ${fmt(seedSeconds, 1)} s).`,
  );
  console.log(
    `   ${LIST_CONNECTIONS} connections, ${n} requests per side in ${LIST_ROUNDS} alternating rounds of ${LIST_PER_ROUND} after ${LIST_WARMUP} of warm-up; p50 (p90).`,
  );
  console.log(`   Before the first cell both sides served ${fmt(LIST_PREWARM)} requests of the first user's queries, untimed (a running server is warm).`);
  console.log(
    `   Peer: the same page by one hand-written query through pg (the page first, filtered on the derived status in a lateral join\n   when asked; then its posts' status and deliveries as json_agg), ${LIST_CONNECTIONS} pooled connections.`,
  );
  console.log(
    `  ${"posts".padStart(7)}  ${"query".padEnd(26)} ${"ours p50".padStart(18)} ${"peer p50".padStart(18)}  ${"ours/peer".padStart(9)}  ${"total = peer's count (its count alone)".padEnd(40)} page`,
  );
  const ms = (values: number[]) => `${fmt(pct(values, 0.5), 1).padStart(7)} (${fmt(pct(values, 0.9), 1).padStart(6)}) ms`;
  for (const c of cells) {
    const ratio = pct(c.ours, 0.5) / pct(c.peer, 0.5);
    const agree = `${fmt(c.total).padStart(7)} ${c.total === c.peerCount ? "=" : "!="} ${fmt(c.peerCount).padEnd(7)} ${`(${fmt(c.countMs, 1)} ms)`.padStart(11)}`;
    const page = c.samePage ? `${c.items} items, same ids and statuses` : `MISMATCH: ${c.items} items, not the peer's page`;
    console.log(
      `  ${fmt(c.size).padStart(7)}  ${c.q.query.padEnd(26)} ${ms(c.ours)} ${ms(c.peer)}  ${`${fmt(ratio, 2)}x`.padStart(9)}  ${agree.padEnd(40)} ${page}`,
    );
  }
  console.log(`  goal: ours within 2x of the peer (ours/peer <= 2x). The peer's page query does not count the total; its count query alone,`);
  console.log(`  timed apart (median of 5, one connection), is in parentheses.`);
  const smallest = LIST_SIZES[0]!;
  const largest = LIST_SIZES.at(-1)!;
  console.log(`  ours at ${fmt(largest)} posts / ours at ${fmt(smallest)} (goal <= 1.5x: the cost flat in the history), from the cells above with the peer's`);
  console.log(`  beside it, and measured again taking turns between the two users in ${LIST_ROUNDS} alternating rounds of ${LIST_PER_ROUND} (p50 / p50):`);
  // The cells above were measured minutes apart, and this machine's speed drifts within minutes (the peer's own
  // ratio shows it); so ours at both sizes again, taking turns round by round in the same minute.
  const [small, large] = [users[0]!, users.at(-1)!];
  console.log(`  ${"".padStart(7)}  ${"".padEnd(26)} ${"from the cells".padStart(18)} ${"peer, cells".padStart(18)} ${"taking turns".padStart(14)}`);
  for (const q of LIST_QUERIES) {
    const at = (size: number) => cells.find((c) => c.size === size && c.q === q)!;
    const growth = (side: "ours" | "peer") => pct(at(largest)[side], 0.5) / pct(at(smallest)[side], 0.5);
    const [smallTimes, largeTimes] = await takingTurns(sides(small.userId, small.key, q).ours, sides(large.userId, large.key, q).ours);
    const [smallP50, largeP50] = [pct(smallTimes, 0.5), pct(largeTimes, 0.5)];
    const note = at(smallest).items === 0 ? `  (at ${fmt(smallest)} posts the page is past the end: empty)` : "";
    console.log(
      `  ${"".padStart(7)}  ${q.query.padEnd(26)} ${`${fmt(growth("ours"), 2)}x`.padStart(18)} ${`${fmt(growth("peer"), 2)}x`.padStart(18)} ${`${fmt(largeP50 / smallP50, 2)}x`.padStart(14)}  (${fmt(largeP50, 1)} / ${fmt(smallP50, 1)} ms)${note}`,
    );
  }
  await res.release(peerPool);
  await res.release(http);
  await res.release(admin);
  if (nodeArgs?.length) await server.kill("SIGTERM");
  await res.release(server);
  await res.release(scratch);
}

/**
 * `a` and `b` warmed with LIST_WARMUP calls each, then LIST_ROUNDS rounds of LIST_PER_ROUND calls each,
 * taking turns (who goes first alternates), so both meet the machine as it is in the same minute; the
 * milliseconds of each call of `a` and of `b`.
 */
async function takingTurns(a: () => Promise<unknown>, b: () => Promise<unknown>): Promise<[number[], number[]]> {
  await load(a, LIST_WARMUP);
  await load(b, LIST_WARMUP);
  const times: [number[], number[]] = [[], []];
  for (let round = 0; round < LIST_ROUNDS; round++) {
    const both = [async () => times[0].push(...(await load(a, LIST_PER_ROUND))), async () => times[1].push(...(await load(b, LIST_PER_ROUND)))];
    for (const side of round % 2 ? both.reverse() : both) await side();
  }
  return times;
}

/** `count` calls of `call`, LIST_CONNECTIONS at a time; the milliseconds of each. */
async function load(call: () => Promise<unknown>, count: number): Promise<number[]> {
  const times: number[] = [];
  let left = count;
  await Promise.all(
    Array.from({ length: LIST_CONNECTIONS }, async () => {
      while (left > 0) {
        left--;
        const started = performance.now();
        await call();
        times.push(performance.now() - started);
      }
    }),
  );
  return times;
}

/** The p-quantile (0.5 = median) of `values`, nearest rank. */
function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))]!;
}

// ---------------------------------------------------------------- 3. post creation

interface Backlog {
  /** Deliveries not yet published (pending, publishing, failed). */
  waiting: number;
  failed: number;
  total: number;
}

async function benchCreate(res: BenchResources): Promise<void> {
  const scratch = await res.own(
    () => createScratchDatabase(),
    (s) => s.drop(),
  );
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean);
  const server = await res.own(
    () => startServerProcess({ nodeArgs, env: { ...LIMITS, DATABASE_URL: scratch.url, PLATFORM_SANDBOX: "on" } }),
    (s) => s.dispose(),
  );
  for (const account of ACCOUNTS) {
    const [platform, platformAccountId] = account.split(":");
    const answer = await fetch(`${server.baseUrl}/sandbox/accounts`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ platform, name: `Shop ${platformAccountId}`, platformAccountId }),
    });
    if (answer.status !== 201) throw new Error(`POST /sandbox/accounts answered ${answer.status}: ${await answer.text()}`);
  }

  const admin = await res.own(
    async () => {
      const client = new pg.Client({ connectionString: scratch.url });
      await client.connect();
      return client;
    },
    (c) => c.end(),
  );
  // The peer's table: a copy of posts (columns, defaults, indexes; no foreign key).
  await admin.query("create table bench_posts (like posts including defaults including indexes)");
  const userId = (await admin.query<{ id: string }>("select id from users order by created_at limit 1")).rows[0]!.id;
  const backlog = async (): Promise<Backlog> =>
    (
      await admin.query<Backlog>(
        `select count(*) filter (where status <> 'published')::int as waiting, count(*) filter (where status = 'failed')::int as failed, count(*)::int as total from deliveries`,
      )
    ).rows[0]!;

  const { http, peerPool } = await clientPools(res, server.baseUrl, scratch.url, CREATE_CONNECTIONS);

  let serial = 0;
  const ours = async () => {
    const answer = await http.request({
      method: "POST",
      path: "/api/v1/social/posts",
      headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json", "idempotency-key": crypto.randomUUID() },
      body: JSON.stringify({ accountIds: ACCOUNTS, caption: `New arrivals, post ${++serial}: linen shirts and summer dresses. Link in bio.` }),
    });
    await answer.body.arrayBuffer();
    return answer.statusCode === 202 ? null : `status ${answer.statusCode}`;
  };
  const peer = async () => {
    await peerPool.query({
      name: "bench-insert",
      text: "insert into bench_posts (user_id, caption, hashtags, images) values ($1, $2, '[]'::jsonb, '[]'::jsonb)",
      values: [userId, `New arrivals, post ${++serial}: linen shirts and summer dresses. Link in bio.`],
    });
    return null;
  };
  /** Waits (every second, up to DRAIN_MS) until every delivery is published; the seconds it took, or null. */
  const drain = async () => {
    const started = performance.now();
    for (;;) {
      const now = await backlog();
      if (now.waiting === 0) return { seconds: (performance.now() - started) / 1000, left: now };
      if (performance.now() - started > DRAIN_MS) return { seconds: null, left: now };
      await sleep(1000);
    }
  };

  // Warm-up of each; the warm-up's deliveries are published before the measured slices.
  const warmOurs = await timedLoad(ours, CREATE_WARMUP_MS, server);
  const warmPeer = await timedLoad(peer, CREATE_WARMUP_MS);
  const warm = await drain();
  if (warm.seconds === null)
    throw new Error(`the warm-up's deliveries were not published within ${DRAIN_MS / 1000} s: ${JSON.stringify(warm.left)}\n${lastLines(server)}`);

  // The peer before and after ours, so both meet the machine as it was; ours' backlog drains in between.
  const before = await withCpu(null, () => timedLoad(peer, CREATE_MS));
  const startCount = await backlog();
  const during: number[] = [];
  let sampling = false;
  const sampler = setInterval(() => {
    if (sampling) return;
    sampling = true;
    void backlog()
      .then((b) => during.push(b.waiting))
      .catch(() => {})
      .finally(() => (sampling = false));
  }, 1000);
  let measured: LoadResult & Cpu;
  try {
    measured = await withCpu(server, () => timedLoad(ours, CREATE_MS, server));
  } finally {
    clearInterval(sampler);
  }
  const atEnd = await backlog();
  const drained = await drain();
  const after = await withCpu(null, () => timedLoad(peer, CREATE_MS));

  const peerRate = (before.perSecond + after.perSecond) / 2;
  const created = atEnd.total - startCount.total;
  const createdPerSecond = created / measured.seconds;
  console.log(`\n3. Post creation: POST /api/v1/social/posts {accountIds: [2 sandbox pageplatform accounts], caption}, immediate, a fresh`);
  console.log(
    `   Idempotency-Key each, ${CREATE_CONNECTIONS} connections for ${CREATE_MS / 1000} s against npm start on PostgreSQL with PLATFORM_SANDBOX=on (its delivery worker`,
  );
  console.log(`   publishes every target to the sandbox). Peer: a one-row INSERT loop through pg into a scratch copy of the posts table,`);
  console.log(
    `   ${CREATE_CONNECTIONS} pooled connections for ${CREATE_MS / 1000} s, before and after ours; each side warmed up for ${CREATE_WARMUP_MS / 1000} s first:`,
  );
  const failures = [...measured.failures].map(([why, n]) => `${n} x ${why}`).join(", ") || "none";
  console.log(
    `  ${"ours: POST /posts answered 202".padEnd(52)} ${fmt(measured.perSecond).padStart(6)} req/s   (${fmt(measured.ok)} posts; p50 ${fmt(pct(measured.latencies, 0.5), 1)} ms, p99 ${fmt(pct(measured.latencies, 0.99), 1)} ms; other answers: ${failures})`,
  );
  console.log(
    `  ${"peer: INSERT into bench_posts, one row a statement".padEnd(52)} ${fmt(peerRate).padStart(6)} rows/s  (before ours ${fmt(before.perSecond)}, after ${fmt(after.perSecond)})`,
  );
  console.log(
    `  ratio ours / peer: ${fmt(measured.perSecond / peerRate, 3)}x (goal >= 0.10; before ${fmt(measured.perSecond / before.perSecond, 3)}x, after ${fmt(measured.perSecond / after.perSecond, 3)}x)`,
  );
  console.log(`  ${"warm-up (untimed), ours, req/s each second".padEnd(52)} ${slices(warmOurs)}`);
  console.log(`  ${"warm-up (untimed), peer, rows/s each second".padEnd(52)} ${slices(warmPeer)}`);
  const perItem = (cpu: Cpu[], items: number) => {
    const sum = (f: (c: Cpu) => number) => cpu.reduce((t, c) => t + f(c), 0) / items;
    const all = sum((c) => c.serverMs + c.dbMs + c.loadMs);
    const seconds = cpu.reduce((t, c) => t + c.wallMs, 0) / 1000;
    const cores = (all * items) / 1000 / seconds;
    return { server: sum((c) => c.serverMs), db: sum((c) => c.dbMs), load: sum((c) => c.loadMs), all, cores };
  };
  const ourCpu = perItem([measured], measured.ok);
  const peerCpu = perItem([before, after], before.ok + after.ok);
  console.log(`  CPU from /proc while each side ran (10 ms ticks), per post for ours and per row for the peer:`);
  console.log(
    `    ours: server ${fmt(ourCpu.server, 2)} ms, PostgreSQL ${fmt(ourCpu.db, 2)} ms, this load generator ${fmt(ourCpu.load, 2)} ms; ${fmt(ourCpu.all, 2)} ms in all, ${fmt(ourCpu.cores, 2)} of ${availableParallelism()} cores busy`,
  );
  console.log(
    `    peer: PostgreSQL ${fmt(peerCpu.db, 3)} ms, this load generator ${fmt(peerCpu.load, 3)} ms; ${fmt(peerCpu.all, 3)} ms in all, ${fmt(peerCpu.cores, 2)} of ${availableParallelism()} cores busy`,
  );
  console.log(
    `  delivery worker, deliveries not yet published each second of the load (${fmt(createdPerSecond)} created/s): ${during.map((n) => fmt(n)).join(", ")}`,
  );
  const slope = trend(during);
  const drainText =
    drained.seconds === null
      ? `NOT drained after ${DRAIN_MS / 1000} s: ${fmt(drained.left.waiting)} left`
      : `drained ${fmt(drained.seconds, 1)} s after the load`;
  console.log(`  at the end of the load ${fmt(atEnd.waiting)} of ${fmt(created)} not yet published; ${drainText} (failed: ${fmt(drained.left.failed)})`);
  const growing = slope > Math.max(1, 0.05 * createdPerSecond);
  console.log(
    `  goal: no growing backlog: ${growing ? `GROWING by ${fmt(slope)} deliveries/s during the load` : `kept up (backlog trend ${fmt(slope, 1)} deliveries/s during the load)`}`,
  );
  await res.release(peerPool);
  await res.release(http);
  await res.release(admin);
  // A profiled server writes its profile on a clean exit only.
  if (nodeArgs?.length) await server.kill("SIGTERM");
  await res.release(server);
  await res.release(scratch);
}

/** CPU time (ms) of the server's processes, the machine's PostgreSQL and this process while a load ran. */
interface Cpu {
  serverMs: number;
  dbMs: number;
  loadMs: number;
  wallMs: number;
}

async function withCpu<T>(server: ServerProcess | null, load: () => Promise<T>): Promise<T & Cpu> {
  const serverProcesses = server ? await serverPids(server.dataDir) : [];
  const db = await cpuByPid(await postgresPids());
  const serverBefore = await cpuMs(serverProcesses);
  const mine = process.cpuUsage();
  const started = performance.now();
  const result = await load();
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(mine);
  return {
    ...result,
    serverMs: (await cpuMs(serverProcesses)) - serverBefore,
    dbMs: await cpuSince(db, await postgresPids()),
    loadMs: (used.user + used.system) / 1000,
    wallMs,
  };
}

interface LoadResult {
  ok: number;
  /** Successful calls in each whole second of the load. */
  perSecondSlices: number[];
  perSecond: number;
  seconds: number;
  latencies: number[];
  failures: Map<string, number>;
}

/** CREATE_CONNECTIONS loops calling `call` for `ms`; `call` answers null when done right, else why not. */
async function timedLoad(call: () => Promise<string | null>, ms: number, server?: ServerProcess): Promise<LoadResult> {
  const result: LoadResult = { ok: 0, perSecondSlices: [], perSecond: 0, seconds: 0, latencies: [], failures: new Map() };
  const fail = (why: string) => result.failures.set(why, (result.failures.get(why) ?? 0) + 1);
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    Array.from({ length: CREATE_CONNECTIONS }, async () => {
      while (performance.now() < deadline) {
        const sent = performance.now();
        try {
          const why = await call();
          if (why) fail(why);
          else {
            result.ok++;
            const done = performance.now();
            result.latencies.push(done - sent);
            const second = Math.floor((done - started) / 1000);
            if (second < ms / 1000) result.perSecondSlices[second] = (result.perSecondSlices[second] ?? 0) + 1;
          }
        } catch (err) {
          fail((err as { code?: string }).code ?? String(err));
        }
      }
    }),
  );
  result.seconds = (performance.now() - started) / 1000;
  result.perSecond = result.ok / result.seconds;
  if (result.ok === 0)
    throw new Error(`no call succeeded: ${[...result.failures].map(([w, n]) => `${n} x ${w}`).join(", ")}${server ? `\n${lastLines(server)}` : ""}`);
  return result;
}

const slices = (load: LoadResult) => Array.from(load.perSecondSlices, (n) => fmt(n ?? 0)).join(", ");

/** The least-squares slope of `values` taken one a second: how fast they grew, per second. */
function trend(values: number[]): number {
  const n = values.length;
  if (n < 2) return 0;
  const meanX = (n - 1) / 2;
  const meanY = values.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  values.forEach((y, x) => {
    num += (x - meanX) * (y - meanY);
    den += (x - meanX) ** 2;
  });
  return num / den;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchSocialHttp();
}

/** The load's HTTP pool to the server and the peer's pg pool to the same database, each `connections` wide. */
async function clientPools(res: BenchResources, baseUrl: string, databaseUrl: string, connections: number) {
  const http = await res.own(
    async () => new Pool(baseUrl, { connections }),
    (p) => p.destroy(),
  );
  const peerPool = await res.own(
    async () => {
      const pool = new pg.Pool({ connectionString: databaseUrl, max: connections });
      pool.on("error", () => {});
      return pool;
    },
    (p) => p.end(),
  );
  return { http, peerPool };
}
