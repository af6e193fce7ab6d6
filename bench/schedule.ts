/**
 * Scheduled posts on time, through HTTP against the embedded server (`functions/node.ts`, the platform
 * sandbox): `SCHEDULE_POSTS` posts (default 1,000) scheduled for the same instant on two sandbox
 * pageplatform accounts, and for each target `publishedAt - scheduledFor`, on the embedded default (PGlite)
 * and on PostgreSQL (a scratch database on the machine's server). Beside it, the peer: as many plain Node
 * timers set for the same instant in this process (how late the event loop itself fires them), and the
 * goal (p99 <= 400 ms on PostgreSQL, <= 600 ms on PGlite, for 1,000 posts).
 *
 * Run alone: `npx tsx bench/schedule.ts`; or with the others: `npm run bench -- schedule`.
 * `SCHEDULE_DB=pglite` or `postgres` runs one database only. With `BENCH_NODE_ARGS="--cpu-prof
 * --cpu-prof-dir=..."` the server stops with SIGTERM, so Node writes its profile.
 */
import { pathToFileURL } from "node:url";
import { startServerProcess, type ServerProcess } from "../test/helpers/server-process";
import { createScratchDatabase } from "../dev/postgres";
import { benchResources } from "./resources";
import { cpuByPid, cpuMs, cpuSince, postgresPids, serverPids } from "./proc-cpu";
import { caller } from "./api-caller";
import { latencyRow } from "./timing";

const POSTS = Number(process.env.SCHEDULE_POSTS ?? 1000);
/** Time to create the posts (8 at once) before their instant. */
const LEAD_MS = 15_000 + POSTS * 30;
const CREATORS = 8;
const PAGE = 100;

/** Prints the figures; timings are never assertions. */
export async function benchSchedule(): Promise<void> {
  const which = process.env.SCHEDULE_DB;
  console.log(`schedule: ${POSTS} posts x 2 sandbox accounts due at the same instant, publishedAt - scheduledFor (embedded server over HTTP)`);
  const res = benchResources();
  try {
    const nodeArgs = process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean);
    const start = (env: Record<string, string>) =>
      res.own(
        () => startServerProcess({ nodeArgs, env: { RATE_LIMIT_SOCIAL_WRITE: "1000000", RATE_LIMIT_SOCIAL_READ: "1000000", ...env } }),
        async (s) => {
          // A clean stop first, so a --cpu-prof profile is written.
          await Promise.race([s.kill("SIGTERM"), new Promise((r) => setTimeout(r, 10_000))]);
          await s.dispose();
        },
      );
    if (which !== "postgres") {
      const server = await start({});
      await bursts("ours, PGlite", server);
      await res.release(server);
    }
    if (which !== "pglite") {
      const scratch = await res.own(
        () => createScratchDatabase(),
        (s) => s.drop(),
      );
      const server = await start({ DATABASE_URL: scratch.url, PLATFORM_SANDBOX: "on" });
      await bursts("ours, PostgreSQL", server);
    }
    latencyRow("peer: plain Node timers in this process", await timers(Date.now() + 1000, POSTS));
    console.log(`  goal for 1,000 posts: p99 <= 400 ms on PostgreSQL, <= 600 ms on PGlite`);
  } finally {
    await res.close();
  }
}

interface Run {
  late: number[];
  /** CPU time of the server's processes from shortly before the due time until every target was seen published. */
  cpuMs: number;
  /** The same for the PostgreSQL server's processes (all of them: the machine's server is the scratch database's). */
  dbCpuMs: number;
}

function report(label: string, run: Run): void {
  latencyRow(label, run.late);
  const perTarget = (ms: number) => (ms / run.late.length).toFixed(1);
  console.log(
    `  ${"".padEnd(40)} server CPU ${run.cpuMs.toFixed(0)} ms while publishing (${perTarget(run.cpuMs)} ms per target, the list reads that watched it included)`,
  );
  if (run.dbCpuMs > 0) console.log(`  ${"".padEnd(40)} PostgreSQL CPU ${run.dbCpuMs.toFixed(0)} ms (${perTarget(run.dbCpuMs)} ms per target)`);
}

/**
 * Two bursts on the same server: the first after it started (its database connections are opened and
 * warmed by that burst), then the same again, as on a server that has been running.
 */
async function bursts(label: string, server: ServerProcess): Promise<void> {
  const call = caller(server);
  for (const id of ["1001", "1002"]) await call("POST", "/sandbox/accounts", { platform: "pageplatform", name: `Shop ${id}`, platformAccountId: id });
  report(`${label}, first burst`, await lateness(server));
  report(`${label}, second burst`, await lateness(server));
}

/**
 * Schedules the posts (8 creations at once) and answers each target's lateness in ms. It reads the list
 * pages of the newest posts (the burst's) a second after their time, then every 250 ms until all are
 * published, so that watching costs the server nothing during a burst that is over within the second.
 */
async function lateness(server: ServerProcess): Promise<Run> {
  const call = caller(server);

  const at = new Date(Date.now() + LEAD_MS);
  at.setMilliseconds(0);
  const ids: string[] = [];
  let next = 0;
  const create = async () => {
    for (let i = next++; i < POSTS; i = next++) {
      const post = await call(
        "POST",
        "/api/v1/social/posts",
        { accountIds: ["pageplatform:1001", "pageplatform:1002"], caption: `On time ${i} ${crypto.randomUUID().slice(0, 8)}`, scheduledFor: at.toISOString() },
        { "Idempotency-Key": crypto.randomUUID() },
      );
      ids.push(post.id);
    }
  };
  await Promise.all(Array.from({ length: CREATORS }, create));
  if (Date.now() > at.getTime() - 1000) throw new Error("creating the posts took longer than the lead time; raise LEAD_MS");
  const pids = await serverPids(server.dataDir);
  await new Promise((r) => setTimeout(r, at.getTime() - 200 - Date.now()));
  const cpuBefore = await cpuMs(pids);
  const dbBefore = await cpuByPid(await postgresPids());
  const deadline = at.getTime() + 120_000;
  let late: number[] = [];
  // The first look a second after the time: a burst that is over by then is measured without a single read
  // competing with it (publishedAt is the server's own record).
  await new Promise((r) => setTimeout(r, at.getTime() + 1000 - Date.now()));
  const wanted = new Set(ids);
  for (;;) {
    // The burst's posts are the newest; read them page by page.
    const times: Array<string | null> = [];
    for (let offset = 0; offset < POSTS; offset += PAGE) {
      const page = await call("GET", `/api/v1/social/posts?limit=${PAGE}&offset=${offset}`);
      const mine = (page.items as Array<{ id: string; accounts: Array<{ publishedAt: string | null }> }>).filter((p) => wanted.has(p.id));
      times.push(...mine.flatMap((p) => p.accounts.map((a) => a.publishedAt)));
      if (times.some((t) => !t)) break;
    }
    if (times.length === POSTS * 2 && times.every(Boolean)) {
      late = times.map((t) => Date.parse(t!) - at.getTime());
      break;
    }
    if (Date.now() > deadline) throw new Error(`the burst was not published within 2 minutes`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return { late, cpuMs: (await cpuMs(pids)) - cpuBefore, dbCpuMs: await cpuSince(dbBefore, await postgresPids()) };
}

/** How late `count` timers set for `at` fire. */
function timers(at: number, count: number): Promise<number[]> {
  return Promise.all(Array.from({ length: count }, () => new Promise<number>((resolve) => setTimeout(() => resolve(Date.now() - at), at - Date.now()))));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchSchedule();
}
