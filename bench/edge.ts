/**
 * The Worker on this machine (`npm run bench -- edge`, or alone `npx tsx bench/edge.ts`), each figure beside
 * the limit it must meet or the Node server measured in the same run:
 *
 * - Per operation (bench/edge-routes.ts): every operation of the OpenAPI document with its README example,
 *   CPU and wall time per request beside `GET /` measured just before it, and the Worker's round trips per request
 *   to each stand-in; the Node server's figures beside them. `EDGE_ROUNDS` (default 3) rounds,
 *   `EDGE_SCALE` (default 1) scales each route's request count, `EDGE_ONLY` (a regular expression) keeps only
 *   the operations it matches, `EDGE_PARTS` (default `routes,bundle,startup,throughput`) picks the parts.
 *   Then `GET /` on the Worker's own socket beside `GET /` through Miniflare: what Miniflare's entry Worker
 *   (which Cloudflare does not run) adds to every request's CPU in the table. Then a bare Worker of a few lines
 *   (bench/edge-bare.ts) answering with and without one subrequest: what a round trip costs the runtime alone,
 *   beside our floor.
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
import { Miniflare } from "miniflare";
import { openNodeDb } from "../db/node";
import { ROOT, startLocalEdge, type LocalEdge } from "../dev/edge-worker";
import { printBareWorker } from "./edge-bare";
import { createScratchDatabase } from "../dev/postgres";
import { createApiKey, createUser } from "../src/http/api-keys";
import { startServerProcess } from "../test/helpers/server-process";
import { printQrThroughput, type Target } from "./qr-load";
import { FLOOR, measureRoutes, printRoutes, type RouteTarget } from "./edge-routes";
import { serverPids, workerdPids } from "./proc-cpu";
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
const LIMITS = { RATE_LIMIT_QR: "1000000", RATE_LIMIT_PHOTO: "1000000", RATE_LIMIT_SOCIAL_READ: "1000000", RATE_LIMIT_SOCIAL_WRITE: "1000000" };
const WRANGLER_ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true", CI: "true", NO_COLOR: "1" };

const run = promisify(execFile);
const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Prints the figures; returns nothing (timings are never assertions). */
export async function benchEdge(): Promise<void> {
  const res = benchResources();
  try {
    const scratch = await res.own(
      () => createScratchDatabase(),
      (s) => s.drop(),
    );
    const db = await openNodeDb({ url: scratch.url, poolSize: 1 });
    const workerKey = await createApiKey(db.db, (await createUser(db.db, `edge-bench-${crypto.randomUUID()}@example.test`)).userId).finally(() => db.close());

    const parts = new Set((process.env.EDGE_PARTS ?? "routes,bundle,startup,throughput").split(","));
    const workerLog = tail();
    const edge = await res.own(
      () =>
        startLocalEdge({
          databaseUrl: scratch.url,
          vars: { ...LIMITS, LOG_LEVEL: "info", PLATFORM_SANDBOX: "on" },
          qstash: true,
          stdio: workerLog.take,
          directSocket: true,
        }),
      (e) => e.dispose(),
    );
    if (parts.has("bundle")) printBundle(edge);
    if (parts.has("startup")) await printStartup(edge, res);

    const node = await res.own(
      () => startServerProcess({ env: { ...LIMITS, LOG_LEVEL: "info" } }),
      (s) => s.dispose(),
    );
    if (parts.has("routes")) {
      const routeTargets: RouteTarget[] = [
        { name: "Worker in workerd", origin: edge.url, key: workerKey.key, pids: workerdPids, edge, log: workerLog.text },
        {
          name: "Node (npm start, PGlite)",
          origin: node.baseUrl,
          key: node.apiKey,
          pids: () => serverPids(node.dataDir),
          log: () => node.output().split("\n").slice(-20).join("\n"),
        },
      ];
      const only = process.env.EDGE_ONLY ? new RegExp(process.env.EDGE_ONLY) : undefined;
      const rounds = Number(process.env.EDGE_ROUNDS ?? 3);
      const rows = await measureRoutes(routeTargets, { rounds, scale: Number(process.env.EDGE_SCALE ?? 1), only });
      printRoutes(rows, routeTargets);
      await printEntryWorker(routeTargets[0]!, edge.directUrl!, rounds);
      await printBareWorker({ origin: edge.url, pids: await workerdPids() }, edge.build.miniflareOptions, rounds);
    }
    if (parts.has("throughput")) {
      const targets: [Target, Target] = [
        {
          name: "Worker in workerd (Miniflare; Neon bridge to PostgreSQL, Upstash bridge to Redis)",
          origin: edge.url,
          key: workerKey.key,
          log: workerLog.text,
        },
        {
          name: "Node server (npm start: PGlite, in-memory rate limits)",
          origin: node.baseUrl,
          key: node.apiKey,
          log: () => node.output().split("\n").slice(-20).join("\n"),
        },
      ];
      await printQrThroughput(targets, res, [[0, 1, "Worker/Node"]]);
    }
  } finally {
    await res.close();
  }
}

/**
 * Miniflare answers every request through an entry Worker of its own, in the same workerd process, before the
 * Worker gets it; Cloudflare runs no such Worker. The floor on the Worker's own socket shows what that adds
 * to every figure of the table (whose ratios keep it in, in the floor as in each route).
 */
async function printEntryWorker(proxied: RouteTarget, directUrl: string, rounds: number): Promise<void> {
  const direct: RouteTarget = { ...proxied, name: "Worker on its own socket", origin: directUrl };
  const [floor] = await measureRoutes([proxied, direct], { rounds, scale: 1, only: /^$/ });
  const ms = (ti: number) => middle(floor!.rounds[ti]!.map((f) => f.cpuMs));
  console.log(
    `  ${FLOOR} on the Worker's own socket, without Miniflare's entry Worker: ${fmt(ms(1), 2)} ms against ${fmt(ms(0), 2)} ms through it; ` +
      `that entry Worker (not on Cloudflare) is ${fmt(ms(0) - ms(1), 2)} ms of every request's CPU above`,
  );
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
  console.log(
    `  total          ${kib(total.raw).padStart(10)} -> ${kib(total.gzip).padStart(10)} gzipped = ${fmt(total.gzip / MIB, 2)} MiB  (wrangler: ${edge.build.totalUpload})`,
  );
  console.log(
    `  budget 3 MiB gzipped (Workers Free's former compressed limit; Paid's was 10 MiB): ${fmt(total.gzip / BUDGET_FREE, 2)} of it (${fmt(total.gzip / BUDGET_PAID, 2)} of 10 MiB)`,
  );
  console.log(`  Cloudflare's limit now, every plan: 64 MiB uncompressed; ${fmt(total.raw / MIB, 2)} MiB is ${fmt(total.raw / UNCOMPRESSED_LIMIT, 2)} of it`);
}

async function printStartup(edge: LocalEdge, res: BenchResources): Promise<void> {
  // (a) Cold starts of the built Worker on the running stand-ins, each in a workerd of its own.
  const ready: number[] = [];
  const first: number[] = [];
  const warm: number[] = [];
  for (let i = 0; i < COLD_STARTS; i++) {
    const started = performance.now();
    const mf = await res.own(
      async () => new Miniflare({ ...edge.miniflareOptions, port: 0 }),
      (m) => m.dispose(),
    );
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
  console.log(
    `  new Miniflare -> first GET /health 200   ${fmt(middle(first)).padStart(6)} ms  (workerd listening after ${fmt(middle(ready))} ms; a warm GET /health takes ${fmt(middle(warm), 1)} ms)`,
  );

  // (b) The global scope's CPU time, from the profile `wrangler check startup` records around its import.
  const dir = await res.own(
    () => mkdtemp(join(tmpdir(), "edge-startup-")),
    (d) => rm(d, { recursive: true, force: true }),
  );
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
  console.log(
    `  script start-up CPU (wrangler check startup's CPU profile, median of ${PROFILES})   ${fmt(cpuMs).padStart(4)} ms  (runs: ${cpu.map((ms) => fmt(ms)).join(", ")} ms)`,
  );
  console.log(
    `  limit: ${fmt(STARTUP_LIMIT_MS)} ms (Workers Free and Paid): ${fmt(cpuMs / STARTUP_LIMIT_MS, 2)} of it, measured on this machine's CPU, not Cloudflare's`,
  );
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
