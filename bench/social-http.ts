/**
 * Social publishing (area C) through HTTP against `npm start`, every rate limit raised to 1,000,000, each
 * workload beside its peer measured in the same run (taking turns, so both meet the same load on this
 * shared machine), the ratio and the goal:
 *
 * 1. Media: `POST /api/v1/social/media` with a 4000x3000 photo-like JPEG of about 4.9 MB (about 6.5 MB of
 *    JSON `{base64, mimeType}`), on the embedded default (PGlite), median of 5 after a warm-up. Peer: sharp
 *    in this process resizing the same JPEG to fit 1440x1800 and encoding JPEG q85, with one libvips thread
 *    (like for like) and with its default concurrency, median of 5. Goal: <= 1.5x sharp (1 thread). Also the
 *    server's peak RSS growth during each request (its process group's RSS sampled every 20 ms), beside the
 *    goal "peak memory of the request < 128 MB".
 * 2. Lists: `GET /api/v1/social/posts?limit=50`, `&status=published` and `&offset=5000` for users with
 *    1,000, 10,000 and 100,000 posts (2 deliveries each, a mix of outcomes) seeded by SQL into a scratch
 *    PostgreSQL database the server runs on; p50 of 200 requests over 4 connections per size and query.
 *    Peer: the same page by one hand-written query through `pg` (posts newest first, their deliveries as
 *    json_agg and the derived status in a lateral join, the same filter, limit/offset), 4 pooled
 *    connections. Goals: within 2x of the peer; ours at 100,000 posts within 1.5x of ours at 1,000. The
 *    server's `total` is printed beside the peer's count of the same filter, and the first page's ids are
 *    compared.
 * 3. Post creation: `POST /api/v1/social/posts` text-only, immediate, to two sandbox pageplatform accounts
 *    (PLATFORM_SANDBOX=on, so the delivery worker really publishes them), a fresh Idempotency-Key each, 16
 *    connections for 10 s on PostgreSQL. Peer: a raw one-row `INSERT` loop through `pg` (16 pooled
 *    connections, 10 s) into a scratch copy of the posts table, before and after ours. Goal: >= 0.10 of the
 *    peer's rows/s. Then whether the delivery worker kept up: the deliveries not yet published, each second
 *    of the load and after it (every second for up to 60 s), and how long they took to drain. Goal: no
 *    growing backlog.
 *
 * Everything it starts (servers, scratch databases, pools) is stopped and removed at the end, on an error
 * and on Ctrl-C. `SOCIAL_HTTP=media,lists,create` runs only some of the three.
 *
 * Run alone: `npx tsx bench/social-http.ts`; or with the others: `npm run bench -- social-http`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { pathToFileURL } from "node:url";
import sharp from "sharp";
import { Pool } from "undici";
import { startServerProcess, type ServerProcess } from "../test/helpers/server-process";
import { benchResources, type BenchResources } from "./resources";
import { middle } from "./timing";

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

const MEDIA_RUNS = 5;
const RSS_SAMPLE_MS = 20;

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (bytes: number) => `${fmt(bytes / MIB)} MiB`;

/** Prints the figures; timings are never assertions. */
export async function benchSocialHttp(): Promise<void> {
  const parts = (process.env.SOCIAL_HTTP ?? "media,lists,create").split(",").map((p) => p.trim());
  const res = benchResources();
  try {
    if (parts.includes("media")) await benchMedia(res);
  } finally {
    await res.close();
  }
}

// ---------------------------------------------------------------- 1. media

async function benchMedia(res: BenchResources): Promise<void> {
  const jpeg = await largePhotoJpeg(4000, 3000);
  const body = JSON.stringify({ base64: jpeg.toString("base64"), mimeType: "image/jpeg" });
  const small = JSON.stringify({ base64: (await sharp({ create: { width: 64, height: 48, channels: 3, background: "#8a6" } }).jpeg().toBuffer()).toString("base64"), mimeType: "image/jpeg" });
  const server = await res.own(() => startServerProcess({ env: LIMITS }), (s) => s.dispose());
  const http = await res.own(async () => new Pool(server.baseUrl, { connections: 1 }), (p) => p.destroy());

  const rss = groupRss(server);
  const check = await server.rss();
  if (Math.abs(rss() - check) > 0.05 * check) throw new Error(`the RSS sampler reads ${mib(rss())}, ServerProcess.rss() ${mib(check)}`);

  /** One upload, its wall time, and the server's peak RSS during it over the RSS just before it. */
  const upload = async (body: string) => {
    const base = rss();
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
    return { ms, growth: peak - base, base, out: json.data };
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
      const out = await sharp(jpeg).rotate().resize(1440, 1800, { fit: "inside", withoutEnlargement: true }).jpeg({ quality: 85 }).toBuffer({ resolveWithObject: true });
      return { ms: performance.now() - started, out: out.info };
    } finally {
      sharp.concurrency(defaultThreads);
    }
  };

  // A small upload starts the server's heavy-work thread; then a warm-up of each (the first large upload,
  // from a server that has freed no large buffers yet, is kept for its memory), then each in turn, the order
  // flipped every run.
  const start = await upload(small);
  const first = await upload(body);
  for (const n of threads) await peer(n);
  const ours = { ms: [] as number[], growth: [] as number[], base: [] as number[] };
  const peers = threads.map(() => [] as number[]);
  let out = first.out;
  let peerOut: { width: number; height: number; size: number } | undefined;
  for (let i = 0; i < MEDIA_RUNS; i++) {
    const steps = [
      async () => {
        const r = await upload(body);
        ours.ms.push(r.ms);
        ours.growth.push(r.growth);
        ours.base.push(r.base);
        out = r.out;
      },
      ...threads.map((n, t) => async () => {
        const r = await peer(n);
        peers[t]!.push(r.ms);
        peerOut = r.out;
      }),
    ];
    for (const step of i % 2 ? steps.reverse() : steps) await step();
  }

  console.log(`\n1. Media: POST /api/v1/social/media, a 4000x3000 photo-like JPEG (${fmt(jpeg.length / 1e6, 1)} MB; ${fmt(body.length / 1e6, 1)} MB of JSON {base64, mimeType})`);
  console.log(`   -> ${out.width}x${out.height} JPEG (${fmt(out.bytes / 1024)} KiB; sharp's ${peerOut!.width}x${peerOut!.height}, ${fmt(peerOut!.size / 1024)} KiB); npm start on the embedded default (PGlite),`);
  console.log(`   one request at a time; median of ${MEDIA_RUNS} after a warm-up, taking turns with the peer in this process:`);
  const row = (label: string, ms: number[]) => console.log(`  ${label.padEnd(76)} ${fmt(middle(ms)).padStart(6)} ms  (runs ${ms.map((m) => fmt(m)).join(", ")})`);
  row("ours: POST /media over HTTP (TypeScript, no native code)", ours.ms);
  const label = (n: number) =>
    `${n === 1 ? "peer: sharp resize to fit 1440x1800 + JPEG q85, 1 thread" : `peer: the same, ${n} threads`}${n === defaultThreads ? " (sharp's default)" : n > 1 ? " (all cores)" : ""}`;
  threads.forEach((n, t) => row(label(n), peers[t]!));
  const oursMs = middle(ours.ms);
  const others = threads.slice(1).map((n, t) => `ours / sharp (${n} threads): ${fmt(oursMs / middle(peers[t + 1]!), 2)}x`);
  console.log(`  ratio ours / sharp (1 thread): ${fmt(oursMs / middle(peers[0]!), 2)}x (goal <= 1.5x)${others.length ? `; ${others.join("; ")}` : ""}`);
  console.log(
    `  ${"ours: the server's peak RSS growth during a request (sampled every 20 ms)".padEnd(76)} ${`+${fmt(middle(ours.growth) / MIB)}`.padStart(6)} MiB  (runs +${ours.growth.map((g) => fmt(g / MIB)).join(", +")} MiB over ${mib(middle(ours.base))})`,
  );
  console.log(`  ${"  the first on the fresh server (later ones reuse what it left in malloc)".padEnd(76)} ${`+${fmt(first.growth / MIB)}`.padStart(6)} MiB  (over ${mib(first.base)})`);
  console.log(`  ${"  before it, a 64x48 upload that started the heavy-work thread".padEnd(76)} ${`+${fmt(start.growth / MIB)}`.padStart(6)} MiB  (over ${mib(start.base)})`);
  const worst = Math.max(first.growth, ...ours.growth);
  console.log(`  goal: peak memory of the request < 128 MB: the largest growth, ${fmt(worst / 1e6)} MB, is ${fmt(worst / 128e6, 2)} of it`);
  // Its CPU and memory are not wanted by the next workloads.
  await res.release(http);
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
  return sharp(pixels, { raw: { width, height, channels: 3 } }).jpeg({ quality: 93 }).toBuffer();
}

/**
 * The summed VmRSS of the server's process group (the tsx wrapper and the app, as ServerProcess.rss()),
 * cheap enough to sample every 20 ms: the group is found once (the process whose environment holds its
 * DATA_DIR, then every process of that group) and then only those /proc/<pid>/status files are read, with
 * synchronous reads. ServerProcess.rss() reads every process's files under /proc on each call, tens of
 * milliseconds of this process's CPU here, which would crowd out the server on 2 cores.
 */
function groupRss(server: ServerProcess): () => number {
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
  return () => pids.reduce((sum, pid) => sum + Number(/VmRSS:\s+(\d+) kB/.exec(read(`/proc/${pid}/status`))?.[1] ?? 0) * 1024, 0);
}

function lastLines(server: ServerProcess, n = 20): string {
  return server.output().split("\n").slice(-n).join("\n");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchSocialHttp();
}
