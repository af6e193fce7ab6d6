/**
 * Every operation of the OpenAPI document, with the README's curl examples as input, on the Worker in
 * workerd through the stand-ins (dev/edge-worker.ts: the Neon bridge, the Upstash bridge, the QStash fake,
 * the S3 fake) and on the Node server (`npm start`: PGlite, in-memory limits), one request at a time:
 *
 * - CPU per request: workerd's process CPU (every thread's, from /proc/<pid>/task/<tid>/schedstat, in
 *   nanoseconds; the process's 10 ms ticks when a thread ended meanwhile) over the route's requests and whatever they left running (deferred work, QStash callbacks,
 *   the sandbox's Graph calls). The stand-ins run in this process, so none of theirs is in it. Node: the
 *   server's processes the same way.
 * - Round trips per request, counted at the stand-ins: database (Neon HTTP queries plus WebSocket turns,
 *   connection set-up included), Redis (Upstash REST requests), queue (QStash API requests), storage (signed
 *   S3 requests).
 * - Wall time: the median request as the client sees it.
 * - Each figure beside `GET /` (the floor) as a ratio: the floor measured again just before each route, so the
 *   machine's drift over a round (other work, frequency) moves both sides of a ratio alike.
 *
 * Rounds alternate the two targets; each round runs every route, and the table gives the median round with
 * the spread of the ratios over rounds.
 *
 * @example
 * const rows = await measureRoutes(targets, { rounds: 3, scale: 1 });
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { ROOT, type LocalEdge } from "../dev/edge-worker";
import { middle } from "./timing";

export interface RouteTarget {
  name: string;
  origin: string;
  key: string;
  /** Process ids whose CPU is the target's. */
  pids(): Promise<string[]>;
  /** The stand-ins, on the Worker only. */
  edge?: LocalEdge;
  /** What the server logged last, for a failure's message. */
  log(): string;
}

interface Request {
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

interface Route {
  name: string;
  /** Requests per round (times the scale). */
  n: number;
  status: number[];
  /** The i-th request of a round, given what setup made. */
  request(state: State, i: number): Request;
  /** Runs before each round's timed requests (untimed), e.g. making what DELETE removes. */
  before?(t: RouteTarget, state: State, n: number): Promise<void>;
}

interface State {
  qrBase64: string;
  mediaId: string;
  postId: string;
  jobId: string;
  demoFile: string;
  toDelete: string[];
  photoSmall: string;
  seq: number;
}

export interface RouteFigures {
  cpuMs: number;
  wallMs: number;
  db: number;
  redis: number;
  queue: number;
  storage: number;
}

export interface RouteRow {
  name: string;
  /** Per target, per round. */
  rounds: RouteFigures[][];
  /** Per target, per round: the floor's CPU ms per request, measured just before this route. */
  floors: number[][];
}

const json = { "content-type": "application/json" };
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const later = () => new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z");
/** The replayed request's time: the same body every time, or the replay would be a conflict. */
const REPLAY_AT = new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d+Z$/, "Z");

export const FLOOR = "GET /";

/** `POST /api/v1/social/posts` with `body` under `idempotencyKey`, as the README's examples send it. */
function createPost(key: string, idempotencyKey: string, body: unknown): Request {
  return {
    method: "POST",
    path: "/api/v1/social/posts",
    headers: { ...bearer(key), ...json, "idempotency-key": idempotencyKey },
    body: JSON.stringify(body),
  };
}

/** The operations, in the README's order, each with its README example. */
export function routes(key: string): Route[] {
  const auth = bearer(key);
  return [
    { name: FLOOR, n: 60, status: [200], request: () => ({ method: "GET", path: "/" }) },
    { name: "GET /health", n: 30, status: [200], request: () => ({ method: "GET", path: "/health" }) },
    {
      name: "GET /api/qr-code/generate/{key}/{text} (PNG)",
      n: 40,
      status: [200],
      request: () => ({ method: "GET", path: `/api/qr-code/generate/${key}/https%3A%2F%2Fexample.com?size=300&fgColor=1A73E8` }),
    },
    {
      name: "GET /api/qr-code/generate-base64/{key}/{text}",
      n: 40,
      status: [200],
      request: () => ({ method: "GET", path: `/api/qr-code/generate-base64/${key}/hello%20world` }),
    },
    {
      name: "POST /api/qr-code/generate (url, 512 px)",
      n: 40,
      status: [200],
      request: () => ({
        method: "POST",
        path: "/api/qr-code/generate",
        headers: { ...auth, ...json },
        body: JSON.stringify({ type: "url", value: "https://example.com/menu", size: 512, fgColor: "#1A73E8" }),
      }),
    },
    {
      name: "POST /api/qr-code/decode (the PNG above)",
      n: 20,
      status: [200],
      request: (s) => ({ method: "POST", path: "/api/qr-code/decode", headers: { ...auth, ...json }, body: JSON.stringify({ base64: s.qrBase64 }) }),
    },
    {
      name: "GET /api/image/product-photography-prompts",
      n: 30,
      status: [200],
      request: () => ({ method: "GET", path: "/api/image/product-photography-prompts" }),
    },
    { name: "GET /api/image/image-model-options", n: 30, status: [200], request: () => ({ method: "GET", path: "/api/image/image-model-options" }) },
    { name: "GET /api/image/demo/{file}", n: 20, status: [200], request: (s) => ({ method: "GET", path: `/api/image/demo/${s.demoFile}` }) },
    {
      name: "POST /api/image/product-photography (photo-small.json)",
      n: 2,
      status: [200],
      request: (s) => ({ method: "POST", path: "/api/image/product-photography", headers: { ...auth, ...json }, body: s.photoSmall }),
    },
    {
      name: "GET /api/image/product-photography/jobs/{id}",
      n: 30,
      status: [200],
      request: (s) => ({ method: "GET", path: `/api/image/product-photography/jobs/${s.jobId}`, headers: auth }),
    },
    { name: "GET /api/v1/social/accounts", n: 60, status: [200], request: () => ({ method: "GET", path: "/api/v1/social/accounts", headers: auth }) },
    {
      name: "POST /api/v1/social/media (qr.png)",
      n: 20,
      status: [201],
      request: (s) => ({ method: "POST", path: "/api/v1/social/media", headers: { ...auth, ...json }, body: JSON.stringify({ base64: s.qrBase64 }) }),
    },
    {
      name: "GET /api/v1/social/media/{id}",
      n: 40,
      status: [200],
      request: (s) => ({ method: "GET", path: `/api/v1/social/media/${s.mediaId}`, headers: auth }),
    },
    {
      name: "POST /api/v1/social/posts, now to 2 accounts (with its deliveries)",
      n: 10,
      status: [202],
      request: (s) =>
        createPost(key, `launch-${s.seq++}-${crypto.randomUUID()}`, {
          accountIds: ["pageplatform:1001", "photoplatform:2002"],
          caption: "New in store",
          hashtags: ["sale"],
          images: [{ mediaId: s.mediaId }],
        }),
    },
    {
      name: "POST /api/v1/social/posts, scheduled",
      n: 30,
      status: [201],
      request: (s) =>
        createPost(key, `teaser-${s.seq++}-${crypto.randomUUID()}`, { accountIds: "pageplatform:1001", caption: "Doors open soon", scheduledFor: later() }),
    },
    {
      name: "POST /api/v1/social/posts, replayed (same Idempotency-Key)",
      n: 30,
      status: [200],
      request: () => createPost(key, "bench-replay-001", { accountIds: "pageplatform:1001", caption: "Doors open soon", scheduledFor: REPLAY_AT }),
      async before(t) {
        // The first request creates; every timed one replays.
        const r = routes(t.key).find((x) => x.name === "POST /api/v1/social/posts, replayed (same Idempotency-Key)")!;
        const res = await send(t, r.request({} as State, 0));
        if (![200, 201].includes(res.status)) throw new Error(`replay set-up answered ${res.status}: ${res.text}`);
      },
    },
    {
      name: "GET /api/v1/social/posts/{id}",
      n: 60,
      status: [200],
      request: (s) => ({ method: "GET", path: `/api/v1/social/posts/${s.postId}`, headers: auth }),
    },
    {
      name: "GET /api/v1/social/posts?status=published&limit=10",
      n: 40,
      status: [200],
      request: () => ({ method: "GET", path: "/api/v1/social/posts?status=published&limit=10", headers: auth }),
    },
    {
      name: "DELETE /api/v1/social/posts/{id} (scheduled)",
      n: 20,
      status: [200],
      request: (s) => ({ method: "DELETE", path: `/api/v1/social/posts/${s.toDelete.pop()}`, headers: auth }),
      async before(t, s, n) {
        for (let i = 0; i < n; i++) s.toDelete.push(await createScheduled(t, s));
      },
    },
  ];
}

async function createScheduled(t: RouteTarget, s: State): Promise<string> {
  const res = await send(
    t,
    createPost(t.key, `setup-${s.seq++}-${crypto.randomUUID()}`, { accountIds: "pageplatform:1001", caption: "Doors open soon", scheduledFor: later() }),
  );
  if (res.status !== 201) throw new Error(`scheduling a post answered ${res.status}: ${res.text}`);
  return (JSON.parse(res.text) as { data: { id: string } }).data.id;
}

async function send(t: RouteTarget, r: Request): Promise<{ status: number; text: string; headers: Headers; bytes: Uint8Array }> {
  const res = await fetch(new URL(r.path, t.origin), { method: r.method, headers: r.headers, body: r.body });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const type = res.headers.get("content-type") ?? "";
  return { status: res.status, headers: res.headers, bytes, text: type.includes("json") || type.includes("text") ? new TextDecoder().decode(bytes) : "" };
}

/** What the README's examples make before the measured ones: accounts, the PNG, a medium, a post, a job. */
export async function setUp(t: RouteTarget): Promise<State> {
  const auth = bearer(t.key);
  const must = async (r: Request, status: number[]) => {
    const res = await send(t, r);
    if (!status.includes(res.status)) throw new Error(`${t.name}: ${r.method} ${r.path} answered ${res.status}: ${res.text}\n${t.log()}`);
    return res;
  };
  for (const account of [
    { platform: "pageplatform", name: "Corner Shop", platformAccountId: "1001" },
    { platform: "photoplatform", name: "cornershop", platformAccountId: "2002" },
  ])
    await must({ method: "POST", path: "/sandbox/accounts", headers: { ...auth, ...json }, body: JSON.stringify(account) }, [200, 201]);
  const png = await must({ method: "GET", path: `/api/qr-code/generate/${t.key}/https%3A%2F%2Fexample.com?size=300&fgColor=1A73E8` }, [200]);
  const qrBase64 = Buffer.from(png.bytes).toString("base64");
  const media = await must({ method: "POST", path: "/api/v1/social/media", headers: { ...auth, ...json }, body: JSON.stringify({ base64: qrBase64 }) }, [201]);
  const mediaId = (JSON.parse(media.text) as { data: { id: string } }).data.id;
  const prompts = await must({ method: "GET", path: "/api/image/product-photography-prompts" }, [200]);
  const demoFile = /\/api\/image\/demo\/([a-z0-9-]+\.png)/.exec(prompts.text)![1]!;
  const product = (await readFile(join(ROOT, "docs/photo/product.jpg"))).toString("base64");
  const photoSmall = JSON.stringify({ productImages: [{ dataUrl: `data:image/jpeg;base64,${product}` }], promptId: "studio-white-sweep", model: "standard" });
  const job = await must(
    { method: "POST", path: "/api/image/product-photography", headers: { ...auth, ...json, prefer: "respond-async" }, body: photoSmall },
    [202],
  );
  const jobId = job.headers.get("location")!.split("/").pop()!;
  const state: State = { qrBase64, mediaId, postId: "", jobId, demoFile, toDelete: [], photoSmall, seq: 0 };
  state.postId = await createScheduled(t, state);
  return state;
}

function emptyState(): State {
  return { qrBase64: "", mediaId: "", postId: "", jobId: "", demoFile: "", toDelete: [], photoSmall: "", seq: 0 };
}

/**
 * CPU of `pids`: per thread in nanoseconds (/proc/<pid>/task/<tid>/schedstat), and per process in 10 ms ticks
 * (/proc/<pid>/stat, which keeps the time of threads that have ended).
 */
interface CpuReading {
  threads: Map<string, number>;
  processes: Map<string, number>;
}

async function readCpu(pids: readonly string[]): Promise<CpuReading> {
  const threads = new Map<string, number>();
  const processes = new Map<string, number>();
  for (const pid of pids) {
    for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
      const stat = await readFile(`/proc/${pid}/task/${tid}/schedstat`, "utf8").catch(() => "");
      threads.set(`${pid}/${tid}`, Number(stat.split(" ")[0] ?? 0) || 0);
    }
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields.length > 13) processes.set(pid, (Number(fields[11]) + Number(fields[12])) * 1e7);
  }
  return { threads, processes };
}

/**
 * Nanoseconds used between two readings: by thread, unless a thread ended in between (a heavy-work thread
 * that went idle), whose time only the process's own count still holds.
 */
function cpuBetween(before: CpuReading, after: CpuReading): number {
  const ended = [...before.threads.keys()].some((tid) => !after.threads.has(tid));
  if (ended) {
    let ns = 0;
    for (const [pid, t] of after.processes) ns += t - (before.processes.get(pid) ?? 0);
    return ns;
  }
  let ns = 0;
  for (const [tid, t] of after.threads) ns += t - (before.threads.get(tid) ?? 0);
  return ns;
}

/**
 * CPU ms per request of `pids` over `n` GETs of `url`, measured as each route is (`measure`), for processes
 * outside the route table (bench/edge-bare.ts).
 */
export async function cpuPerRequest(pids: readonly string[], url: string, n: number): Promise<number> {
  const { origin, pathname } = new URL(url);
  const target: RouteTarget = { name: origin, origin, key: "", pids: async () => [...pids], log: () => "" };
  const route: Route = { name: `GET ${pathname}`, n, status: [200], request: () => ({ method: "GET", path: pathname }) };
  return (await measure(target, route, emptyState(), 1)).cpuMs;
}

function counters(edge: LocalEdge | undefined) {
  if (!edge) return { db: 0, redis: 0, queue: 0, storage: 0 };
  return {
    db: edge.neon.roundTrips,
    redis: edge.upstash.requests,
    queue: edge.qstash?.requests ?? 0,
    storage: edge.s3.requests.filter((r) => r.signed).length,
  };
}

/** Lets work a request left behind (waitUntil, QStash callbacks) finish before the counters are read. */
async function quiesce(t: RouteTarget): Promise<void> {
  await new Promise((r) => setTimeout(r, 150));
  await t.edge?.qstash?.settled();
  await new Promise((r) => setTimeout(r, 150));
}

/** One round of one route on one target. */
async function measure(t: RouteTarget, route: Route, state: State, scale: number): Promise<RouteFigures> {
  const n = Math.max(1, Math.round(route.n * scale));
  await route.before?.(t, state, n + 1);
  // One untimed request first: whatever a route does once per isolate or process is not a request's cost.
  const warm = await send(t, route.request(state, -1));
  if (!route.status.includes(warm.status)) throw new Error(`${t.name}: ${route.name} answered ${warm.status}: ${warm.text}\n${t.log()}`);
  await quiesce(t);
  const pids = await t.pids();
  const cpu0 = await readCpu(pids);
  const c0 = counters(t.edge);
  const walls: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = route.request(state, i);
    const started = performance.now();
    const res = await send(t, r);
    walls.push(performance.now() - started);
    if (!route.status.includes(res.status)) throw new Error(`${t.name}: ${route.name} answered ${res.status}: ${res.text}\n${t.log()}`);
  }
  await quiesce(t);
  const cpu1 = await readCpu(pids);
  const c1 = counters(t.edge);
  return {
    cpuMs: cpuBetween(cpu0, cpu1) / 1e6 / n,
    wallMs: middle(walls),
    db: (c1.db - c0.db) / n,
    redis: (c1.redis - c0.redis) / n,
    queue: (c1.queue - c0.queue) / n,
    storage: (c1.storage - c0.storage) / n,
  };
}

/** Every route on every target, `rounds` times, the targets taking turns route by route. */
export async function measureRoutes(targets: RouteTarget[], options: { rounds: number; scale: number; only?: RegExp }): Promise<RouteRow[]> {
  const list = routes("").filter((r) => !options.only || r.name === FLOOR || options.only.test(r.name));
  // The floor needs nothing made first (no accounts, media, photo job or post), so the floor alone sets up nothing.
  const floorOnly = list.every((r) => r.name === FLOOR);
  const states = await Promise.all(targets.map((t) => (floorOnly ? emptyState() : setUp(t))));
  const rows: RouteRow[] = list.map((r) => ({ name: r.name, rounds: targets.map(() => []), floors: targets.map(() => []) }));
  for (let round = 0; round < options.rounds; round++) {
    for (const [i, row] of rows.entries()) {
      for (const [ti, t] of targets.entries()) {
        const all = routes(t.key);
        const route = all.find((r) => r.name === row.name)!;
        const floor = row.name === FLOOR ? null : await measure(t, all.find((r) => r.name === FLOOR)!, states[ti]!, options.scale);
        const figures = await measure(t, route, states[ti]!, options.scale);
        row.rounds[ti]!.push(figures);
        row.floors[ti]!.push(floor?.cpuMs ?? figures.cpuMs);
      }
      if (round === 0 && i === 0) process.stdout.write("  measuring");
      process.stdout.write(".");
    }
  }
  process.stdout.write("\n");
  return rows;
}

const fmt = (n: number, digits = 1) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const trips = (n: number) => (Number.isInteger(n) ? String(n) : fmt(n, 2));

/** Prints the table: each target's CPU and wall time per request beside the floor, the Worker's round trips. */
export function printRoutes(rows: RouteRow[], targets: RouteTarget[]): void {
  const floor = rows.find((r) => r.name === FLOOR)!;
  const ratio = (ti: number, row: RouteRow, round: number) => row.rounds[ti]![round]!.cpuMs / row.floors[ti]![round]!;
  // The median proper: with an even count, the mean of the middle two.
  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const half = sorted.length >> 1;
    return sorted.length % 2 ? sorted[half]! : (sorted[half - 1]! + sorted[half]!) / 2;
  };
  const rounds = floor.rounds[0]!.length;
  console.log(
    `\nPer operation, one request at a time, ${rounds} round(s); CPU ms per request (x the floor, ${FLOOR}, measured just before: median, min-max), wall p50 ms;`,
  );
  console.log(`round trips per request counted at the stand-ins (db = Neon HTTP queries + WebSocket turns; redis = Upstash; queue = QStash; storage = S3)`);
  const header = [
    "operation".padEnd(66),
    `${targets[0]!.name.split(" ")[0]} CPU ms`.padStart(14),
    "x floor".padStart(17),
    "db".padStart(5),
    "redis".padStart(6),
    "queue".padStart(6),
    "stor.".padStart(6),
    "wall".padStart(7),
    ...(targets[1] ? [`${targets[1].name.split(" ")[0]} CPU ms`.padStart(12), "x floor".padStart(17), "wall".padStart(7)] : []),
  ];
  console.log(header.join(" "));
  for (const row of rows) {
    const cells = [row.name.padEnd(66)];
    for (const [ti] of targets.entries()) {
      const figures = row.rounds[ti]!;
      const ratios = figures.map((_, round) => ratio(ti, row, round));
      const spread = `${fmt(median(ratios), 2)} (${fmt(Math.min(...ratios), 2)}-${fmt(Math.max(...ratios), 2)})`;
      cells.push(fmt(median(figures.map((f) => f.cpuMs)), 2).padStart(ti === 0 ? 14 : 12), spread.padStart(17));
      if (ti === 0) {
        for (const k of ["db", "redis", "queue", "storage"] as const) cells.push(trips(median(figures.map((f) => f[k]))).padStart(k === "db" ? 5 : 6));
      }
      cells.push(fmt(median(figures.map((f) => f.wallMs))).padStart(7));
    }
    console.log(cells.join(" "));
  }
}
