/**
 * The Worker on this machine (`npm run bench -- edge`, or alone `npx tsx bench/edge.ts`), each figure beside
 * the limit it must meet or the Node server measured in the same run:
 *
 * - Bundle: the gzipped size of every module wrangler uploads (worker.js, the .wasm and .ttf modules), as
 *   `buildWorker` builds it for `startLocalEdge`, beside the project's 3 MiB budget (Workers Free's limit on
 *   the compressed upload, 10 MiB on Paid, until Cloudflare replaced both with 64 MiB uncompressed on every
 *   plan in September 2026; the uncompressed size is printed against that) and wrangler's own `Total Upload`.
 * - Start-up: (a) wall time from `new Miniflare` on the built Worker to its first `GET /health` answered 200,
 *   the stand-ins already running, median of 5 cold starts; (b) the script's start-up CPU time (parsing and
 *   running the global scope) from the CPU profile `wrangler check startup` records in workerd, median of 5,
 *   beside Cloudflare's start-up limit of 1 s.
 * - QR generate over HTTP: `GET /api/qr-code/generate/{key}/{url}` (512 px PNG, a different URL every
 *   request, the URLs of bench/qr.ts) with 16 connections from one undici client, against the Worker in
 *   workerd (startLocalEdge: Neon bridge to PostgreSQL, Upstash bridge to Redis) and the Node server
 *   (`npm start`: PGlite, in-memory rate limits), both at LOG_LEVEL info and with every rate limit at
 *   1,000,000, in 3 alternating rounds of 5 s after a warm-up; the median req/s of each and the ratio. Every
 *   answer must be a 200 PNG, and one per slice is read back with jsQR.
 *
 * Everything it starts (workerd, the stand-ins, the Node server, the scratch database, temporary files) is
 * stopped and removed at the end, on an error, and on Ctrl-C.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { pathToFileURL } from "node:url";
import jsQR from "jsqr";
import { Miniflare } from "miniflare";
import sharp from "sharp";
import { Pool } from "undici";
import { openNodeDb } from "../db/node";
import { ROOT, startLocalEdge, type LocalEdge } from "../dev/edge-worker";
import { createScratchDatabase } from "../dev/postgres";
import { createApiKey, createUser } from "../src/http/api-keys";
import { startServerProcess } from "../test/helpers/server-process";
import { payload } from "./qr";
import { benchResources, type BenchResources } from "./resources";
import { middle } from "./timing";

const MIB = 1024 * 1024;
/** The project's budget: Workers Free's former limit on the compressed upload (Paid's was 10 MiB). */
const BUDGET_FREE = 3 * MIB;
const BUDGET_PAID = 10 * MIB;
/** Cloudflare's limit on the uncompressed upload, every plan, since the compressed limits went (September 2026). */
const UNCOMPRESSED_LIMIT = 64 * MIB;
/** Cloudflare's limit on parsing and running a Worker's global scope, Free and Paid alike (400 ms until October 2025). */
const STARTUP_LIMIT_MS = 1000;
const COLD_STARTS = 5;
const PROFILES = 5;
const CONNECTIONS = 16;
const ROUNDS = 3;
const SLICE_MS = 5000;
const WARMUP_MS = 2000;
const LIMITS = { RATE_LIMIT_QR: "1000000", RATE_LIMIT_PHOTO: "1000000", RATE_LIMIT_SOCIAL_READ: "1000000", RATE_LIMIT_SOCIAL_WRITE: "1000000" };
const WRANGLER_ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true", CI: "true", NO_COLOR: "1" };

const run = promisify(execFile);
const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Prints the figures; returns nothing (timings are never assertions). */
export async function benchEdge(): Promise<void> {
  const res = benchResources();
  try {
    const scratch = await res.own(() => createScratchDatabase(), (s) => s.drop());
    const db = await openNodeDb({ url: scratch.url, poolSize: 1 });
    const workerKey = await createApiKey(db.db, (await createUser(db.db, `edge-bench-${crypto.randomUUID()}@example.test`)).userId).finally(() => db.close());

    const workerLog = tail();
    const edge = await res.own(() => startLocalEdge({ databaseUrl: scratch.url, vars: { ...LIMITS, LOG_LEVEL: "info" }, stdio: workerLog.take }), (e) => e.dispose());
    printBundle(edge);
    await printStartup(edge, res);

    const node = await res.own(() => startServerProcess({ env: { ...LIMITS, LOG_LEVEL: "info" } }), (s) => s.dispose());
    const targets: [Target, Target] = [
      { name: "Worker in workerd (Miniflare; Neon bridge to PostgreSQL, Upstash bridge to Redis)", origin: edge.url, key: workerKey.key, log: workerLog.text },
      { name: "Node server (npm start: PGlite, in-memory rate limits)", origin: node.baseUrl, key: node.apiKey, log: () => node.output().split("\n").slice(-20).join("\n") },
    ];
    await printQrThroughput(targets, res, [[0, 1, "Worker/Node"]]);
  } finally {
    await res.close();
  }
}

function printBundle(edge: LocalEdge): void {
  const groups = new Map<string, { raw: number; gzip: number; n: number }>();
  for (const module of edge.build.modules) {
    const bytes = typeof module.contents === "string" ? Buffer.from(module.contents) : module.contents;
    const kind = module.type === "ESModule" ? "worker.js" : module.path.endsWith(".wasm") ? ".wasm" : ".ttf";
    const group = groups.get(kind) ?? { raw: 0, gzip: 0, n: 0 };
    group.raw += bytes.length;
    group.gzip += gzipSync(bytes).length;
    group.n++;
    groups.set(kind, group);
  }
  const total = [...groups.values()].reduce((sum, g) => ({ raw: sum.raw + g.raw, gzip: sum.gzip + g.gzip }), { raw: 0, gzip: 0 });
  const kib = (n: number) => `${fmt(n / 1024)} KiB`;
  console.log(`Worker bundle (wrangler deploy --dry-run, ${edge.build.modules.length} modules), gzipped module by module:`);
  for (const [kind, g] of groups) console.log(`  ${`${g.n} x ${kind}`.padEnd(14)} ${kib(g.raw).padStart(10)} -> ${kib(g.gzip).padStart(10)} gzipped`);
  console.log(`  total          ${kib(total.raw).padStart(10)} -> ${kib(total.gzip).padStart(10)} gzipped = ${fmt(total.gzip / MIB, 2)} MiB  (wrangler: ${edge.build.totalUpload})`);
  console.log(`  budget 3 MiB gzipped (Workers Free's former compressed limit; Paid's was 10 MiB): ${fmt(total.gzip / BUDGET_FREE, 2)} of it (${fmt(total.gzip / BUDGET_PAID, 2)} of 10 MiB)`);
  console.log(`  Cloudflare's limit now, every plan: 64 MiB uncompressed; ${fmt(total.raw / MIB, 2)} MiB is ${fmt(total.raw / UNCOMPRESSED_LIMIT, 2)} of it`);
}

async function printStartup(edge: LocalEdge, res: BenchResources): Promise<void> {
  // (a) Cold starts of the built Worker on the running stand-ins, each in a workerd of its own.
  const ready: number[] = [];
  const first: number[] = [];
  const warm: number[] = [];
  for (let i = 0; i < COLD_STARTS; i++) {
    const started = performance.now();
    const mf = await res.own(async () => new Miniflare({ ...edge.miniflareOptions, port: 0 }), (m) => m.dispose());
    try {
      const origin = (await mf.ready).origin;
      ready.push(performance.now() - started);
      await health(origin);
      first.push(performance.now() - started);
      const again = performance.now();
      await health(origin);
      warm.push(performance.now() - again);
    } finally {
      await res.release(mf);
    }
  }
  console.log(`\nStart-up in workerd, median of ${COLD_STARTS} cold starts (stand-ins already running):`);
  console.log(`  new Miniflare -> first GET /health 200   ${fmt(middle(first)).padStart(6)} ms  (workerd listening after ${fmt(middle(ready))} ms; a warm GET /health takes ${fmt(middle(warm), 1)} ms)`);

  // (b) The global scope's CPU time, from the profile `wrangler check startup` records around its import.
  const dir = await res.own(() => mkdtemp(join(tmpdir(), "edge-startup-")), (d) => rm(d, { recursive: true, force: true }));
  const wrangler = join(ROOT, "node_modules/.bin/wrangler");
  const bundle = join(dir, "worker.bundle");
  await run(wrangler, ["deploy", "--dry-run", "--outfile", bundle], { cwd: ROOT, env: WRANGLER_ENV });
  const cpu: number[] = [];
  for (let i = 0; i < PROFILES; i++) {
    const outfile = join(dir, `startup-${i}.cpuprofile`);
    await run(wrangler, ["check", "startup", "--worker", bundle, "--outfile", outfile], { cwd: ROOT, env: WRANGLER_ENV });
    cpu.push(busyMs(JSON.parse(await readFile(outfile, "utf8")) as CpuProfile));
  }
  const cpuMs = middle(cpu);
  console.log(`  script start-up CPU (wrangler check startup's CPU profile, median of ${PROFILES})   ${fmt(cpuMs).padStart(4)} ms  (runs: ${cpu.map((ms) => fmt(ms)).join(", ")} ms)`);
  console.log(`  limit: ${fmt(STARTUP_LIMIT_MS)} ms (Workers Free and Paid): ${fmt(cpuMs / STARTUP_LIMIT_MS, 2)} of it, measured on this machine's CPU, not Cloudflare's`);
}

async function health(origin: string): Promise<void> {
  const res = await fetch(new URL("/health", origin));
  const body = await res.text();
  if (res.status !== 200) throw new Error(`GET /health answered ${res.status}: ${body}`);
}

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string } }>;
  samples: number[];
  timeDeltas: number[];
}

/** Milliseconds the profile's samples spent on anything but "(idle)": script parsing, running, GC. */
function busyMs(profile: CpuProfile): number {
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id));
  let us = 0;
  profile.samples.forEach((id, i) => {
    if (!idle.has(id)) us += profile.timeDeltas[i] ?? 0;
  });
  return us / 1000;
}

export interface Target {
  name: string;
  origin: string;
  key: string;
  /** The server's last log lines, shown when an answer was wrong. */
  log(): string;
}

interface Slice {
  perSecond: number;
  latencies: number[];
  failures: Map<string, number>;
  sample?: { png: Uint8Array; text: string };
}

/**
 * QR generate through HTTP on each target in turn (same URLs, same client), then each ratio of `ratios`:
 * [numerator, denominator, label] as indices into `targets`.
 */
export async function printQrThroughput(targets: Target[], res: BenchResources, ratios: Array<[number, number, string]>, route: QrRoute = "get"): Promise<void> {
  const pools = await res.own(async () => targets.map((t) => new Pool(t.origin, { connections: CONNECTIONS })), (ps) => Promise.all(ps.map((p) => p.destroy())));
  const load = (i: number, firstUrl: number, ms: number) => slice(pools[i]!, targets[i]!.key, firstUrl, ms, route);

  for (const i of targets.keys()) await check(targets[i]!, await load(i, 0, WARMUP_MS));
  const rounds = targets.map(() => [] as Slice[]);
  for (let round = 0; round < ROUNDS; round++) {
    // Each side in turn, the order flipped every round; both get the same URLs.
    const order = round % 2 ? [...targets.keys()].reverse() : [...targets.keys()];
    for (const i of order) rounds[i]!.push(await check(targets[i]!, await load(i, (round + 1) * 100_000, SLICE_MS)));
  }

  const what = route === "get" ? "GET /api/qr-code/generate/{key}/{url}, 512 px PNG" : 'POST /api/qr-code/generate {type:"url"}, 512 px PNG as a data URL in JSON';
  console.log(`\nQR generate over HTTP: ${what}, a different 45-byte URL every request,`);
  console.log(`${CONNECTIONS} connections (undici), ${ROUNDS} alternating rounds of ${SLICE_MS / 1000} s after ${WARMUP_MS / 1000} s of warm-up each; median round:`);
  const medians = rounds.map((slices) => middle(slices.map((s) => s.perSecond)));
  for (const [i, t] of targets.entries()) {
    const all = rounds[i]!.flatMap((s) => s.latencies).sort((a, b) => a - b);
    const pct = (p: number) => all[Math.min(all.length - 1, Math.ceil(all.length * p) - 1)]!;
    console.log(`  ${t.name.padEnd(84)} ${fmt(medians[i]!).padStart(5)} req/s  (rounds ${rounds[i]!.map((s) => fmt(s.perSecond)).join(", ")}; p50 ${fmt(pct(0.5), 1)} ms, p99 ${fmt(pct(0.99), 1)} ms)`);
  }
  for (const [a, b, label] of ratios) {
    // Also round by round: the slices of a round ran back to back, under much the same load.
    const perRound = rounds[a]!.map((w, r) => w.perSecond / rounds[b]![r]!.perSecond);
    console.log(`  ratio ${label}: ${fmt(medians[a]! / medians[b]!, 2)}x the requests per second (round by round: ${perRound.map((x) => `${fmt(x, 2)}x`).join(", ")})`);
  }
}

/** The PNG itself by GET (key in the path), or by POST as `{data:{qrCodeDataUrl}}` (Bearer key). */
export type QrRoute = "get" | "post";

/** One request of `route` for `text`; the PNG it answered, or why not. */
async function requestPng(pool: Pool, key: string, text: string, route: QrRoute): Promise<Uint8Array | string> {
  if (route === "get") {
    const res = await pool.request({ method: "GET", path: `/api/qr-code/generate/${key}/${encodeURIComponent(text)}` });
    const png = new Uint8Array(await res.body.arrayBuffer());
    if (res.statusCode !== 200) return `status ${res.statusCode}`;
    return res.headers["content-type"] === "image/png" && isPng(png) ? png : "200 without a PNG";
  }
  const res = await pool.request({
    method: "POST",
    path: "/api/qr-code/generate",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ type: "url", value: text }),
  });
  const json = (await res.body.json()) as { data?: { qrCodeDataUrl?: string } };
  if (res.statusCode !== 200) return `status ${res.statusCode}`;
  const dataUrl = json.data?.qrCodeDataUrl ?? "";
  const png = dataUrl.startsWith("data:image/png;base64,") ? new Uint8Array(Buffer.from(dataUrl.slice(22), "base64")) : new Uint8Array();
  return isPng(png) ? png : "200 without a PNG data URL";
}

/** `CONNECTIONS` loops sending one request after another for `ms`; URLs numbered from `firstUrl`. */
async function slice(pool: Pool, key: string, firstUrl: number, ms: number, route: QrRoute): Promise<Slice> {
  const result: Slice = { perSecond: 0, latencies: [], failures: new Map() };
  const fail = (why: string) => result.failures.set(why, (result.failures.get(why) ?? 0) + 1);
  let next = firstUrl;
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < deadline) {
        const text = payload(next++);
        const sent = performance.now();
        try {
          const png = await requestPng(pool, key, text, route);
          if (typeof png === "string") fail(png);
          else {
            result.latencies.push(performance.now() - sent);
            result.sample ??= { png, text };
          }
        } catch (err) {
          fail((err as { code?: string }).code ?? String(err));
        }
      }
    }),
  );
  result.perSecond = (result.latencies.length * 1000) / (performance.now() - started);
  return result;
}

/** Throws unless every answer was a PNG and the slice's sample reads back as its URL. */
async function check(target: Target, result: Slice): Promise<Slice> {
  const problems = [...result.failures].map(([why, n]) => `${n} x ${why}`);
  if (!result.sample) problems.push("no PNG at all");
  else {
    const { data, info } = await sharp(result.sample.png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    const read = jsQR(new Uint8ClampedArray(data.buffer, data.byteOffset, data.length), info.width, info.height)?.data;
    if (read !== result.sample.text) problems.push(`a PNG that reads ${JSON.stringify(read)} instead of ${result.sample.text}`);
  }
  if (problems.length) throw new Error(`${target.name} answered ${problems.join(", ")}; its last log lines:\n${target.log()}`);
  return result;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const isPng = (bytes: Uint8Array) => PNG_SIGNATURE.every((b, i) => bytes[i] === b);

/** Keeps the last lines of workerd's output (the Worker logs every request at info) instead of printing them. */
function tail(lines = 20): { take(stdout: Readable, stderr: Readable): void; text(): string } {
  let kept: string[] = [];
  const keep = (chunk: Buffer) => {
    kept = [...kept, ...chunk.toString().split("\n").filter(Boolean)].slice(-lines);
  };
  return {
    take: (stdout, stderr) => {
      stdout.on("data", keep);
      stderr.on("data", keep);
    },
    text: () => kept.join("\n"),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await benchEdge();
