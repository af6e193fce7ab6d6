/**
 * Webhooks under a burst, through HTTP against the embedded server (`npm start`, the platform sandbox): after
 * a warm-up burst of as many posts with an endpoint (removed after it), 1,000 posts scheduled for the same instant
 * on two sandbox accounts, first with no webhook endpoint, then with one endpoint (every event) on a receiver
 * in this process, then without again (the rate and CPU without webhooks are the mean of the two).
 * For each target, the time from its `publishedAt` to the receiver having its `post.target.published` message
 * (p50, p99), and the publishing rate of both bursts (targets per second from the due time to the last
 * `publishedAt`): what the webhooks cost publishing. Goals: p50 <= 100 ms, p99 <= 500 ms, the rate within
 * 10 % of the rate without webhooks. Two peers, both bench/webhooks-bare.ts (undici and the HMAC, no database):
 * - an ideal sender beside a fifth burst, without webhooks: told of each of as many messages the instant it is
 *   due, evenly over the time the bursts without webhooks took; its messages' latency, and what it does to that
 *   burst's rate, show what the machine leaves for messages while a burst publishes;
 * - a bare sender alone, posting as many signed copies of a target event's body to the same receiver: the
 *   CPU per message beside the CPU ours add (server and PostgreSQL).
 *
 * Run alone: `npx tsx bench/webhooks.ts`; or `npm run bench -- webhooks`. `WEBHOOKS_DB=pglite` runs on the
 * embedded PGlite instead of a scratch PostgreSQL database. With `BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=..."` the
 * server stops with SIGTERM, so Node writes its profiles.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { PER_ENDPOINT } from "../functions/node/webhook-sender";
import { startServerProcess, type ServerProcess } from "../test/helpers/server-process";
import { startReceiver, type Receiver } from "../test/helpers/webhook-receiver";
import { createScratchDatabase } from "../dev/postgres";
import { benchResources } from "./resources";
import { caller } from "./api-caller";
import { latencyRow } from "./timing";
import { cpuByPid, cpuMs, cpuSince, postgresPids, serverPids } from "./proc-cpu";

const POSTS = 1000;
const LEAD_MS = 25_000;
const CREATE_CONCURRENCY = 16;
/**
 * The ideal sender's messages in flight: its best here, where alone it sends a burst to the receiver sooner 64 at
 * a time than 256 at a time (fewer connections to open and serve; docs/performance.md).
 */
const IDEAL_CONCURRENCY = 64;

export async function benchWebhooks(): Promise<void> {
  const db = process.env.WEBHOOKS_DB === "pglite" ? "pglite" : "postgres";
  console.log(
    `webhooks: ${POSTS} posts due at one instant on 2 sandbox accounts, one endpoint (npm start over HTTP, ${db === "pglite" ? "PGlite" : "PostgreSQL"})`,
  );
  const res = benchResources();
  try {
    const receiver = await res.own(
      () => startReceiver(),
      (r) => r.close(),
    );
    const env: Record<string, string> = { RATE_LIMIT_SOCIAL_WRITE: "1000000", RATE_LIMIT_SOCIAL_READ: "1000000", WEBHOOK_ALLOW_LOOPBACK: "on" };
    if (db === "postgres") {
      const scratch = await res.own(
        () => createScratchDatabase(),
        (s) => s.drop(),
      );
      Object.assign(env, { DATABASE_URL: scratch.url, PLATFORM_SANDBOX: "on" });
    }
    const nodeArgs = process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean);
    const server = await res.own(
      () => startServerProcess({ env, nodeArgs }),
      async (s) => {
        // A clean stop first, so a --cpu-prof profile is written.
        await Promise.race([s.kill("SIGTERM"), new Promise((r) => setTimeout(r, 10_000))]);
        await s.dispose();
      },
    );
    const call = caller(server);
    for (const id of ["3001", "3002"]) await call("POST", "/sandbox/accounts", { platform: "pageplatform", name: `Bench ${id}`, platformAccountId: id });

    // A warm-up burst with an endpoint (connections, plans, the sandbox's caches, the sender's code: a running
    // server with endpoints has sent messages before), then, the endpoint removed, a burst without webhooks, the
    // burst with one endpoint, and, removed again, a second burst without: a later burst of the same server runs
    // faster, so the one with webhooks is compared with the mean of the two that bracket it.
    const warm = await call("POST", "/api/v1/webhooks", { url: receiver.url });
    await burst(server, receiver, POSTS, true);
    await call("DELETE", `/api/v1/webhooks/${warm.id}`);
    const before = await burst(server, receiver, POSTS, false);
    const hook = await call("POST", "/api/v1/webhooks", { url: receiver.url });
    const withHooks = await burst(server, receiver, POSTS, true);
    await call("DELETE", `/api/v1/webhooks/${hook.id}`);
    const after = await burst(server, receiver, POSTS, false);
    const mean = (f: (b: Burst) => number) => (f(before) + f(after)) / 2;
    const without = { rate: mean((b) => b.rate), serverCpu: mean((b) => b.serverCpu), dbCpu: mean((b) => b.dbCpu) };
    // The ideal sender beside a burst without webhooks: told of each of the burst's messages the instant it is
    // due (evenly over the time the bursts without webhooks took), no database: what the machine leaves for
    // the messages while the burst publishes.
    const spreadMs = (POSTS / without.rate) * 1000;
    const body = sampleTargetEvent(receiver);
    let idealLatency: number[] = [];
    const beside = await burst(server, receiver, POSTS, false, async (at) => {
      const from = receiver.received.length;
      await bareSender(body, receiver, withHooks.messages, { startAt: at.getTime(), spreadMs });
      idealLatency = receiver.received.slice(from).flatMap((r) => {
        const paced = /^paced_\d+_(\d+)$/.exec(String(r.headers["webhook-id"]));
        return paced ? [r.at - Number(paced[1])] : [];
      });
    });

    console.log(
      `  publishing rate without webhooks ${without.rate.toFixed(0).padStart(6)} targets/s   (the mean of ${before.rate.toFixed(0)} before and ${after.rate.toFixed(0)} after)`,
    );
    console.log(
      `  publishing rate with one endpoint ${withHooks.rate.toFixed(0).padStart(5)} targets/s   (${((withHooks.rate / without.rate - 1) * 100).toFixed(1)} %)`,
    );
    row("publishedAt -> receiver has the target's event", withHooks.latency);
    row(`peer: an ideal sender's message, ready -> received`, idealLatency);
    console.log(
      `    (the ideal sender: ${withHooks.messages} messages, each ready at its moment evenly over ${spreadMs.toFixed(0)} ms from the due time, ` +
        `no database, in a process of its own beside a burst without webhooks, which published at ${beside.rate.toFixed(0)} targets/s)`,
    );
    const cpu = (b: Pick<Burst, "serverCpu" | "dbCpu">) => `server ${b.serverCpu.toFixed(0)} ms, PostgreSQL ${b.dbCpu.toFixed(0)} ms`;
    console.log(`  CPU during the burst without webhooks (mean): ${cpu(without)}; with one endpoint: ${cpu(withHooks)}`);
    const added = withHooks.serverCpu + withHooks.dbCpu - without.serverCpu - without.dbCpu;
    const addedPerMessage = added / Math.max(1, withHooks.messages);
    console.log(`  what the webhooks add: ${addedPerMessage.toFixed(2)} ms of CPU per message (server and PostgreSQL), on 2 cores`);
    const bare = await bareSender(body, receiver, withHooks.messages);
    console.log(
      `  peer, a bare sender (undici and the HMAC, no database; its own process, warmed up by a first pass, as ours is by the warm-up burst), ` +
        `the same number of a target event's body ` +
        `to the same receiver, ${PER_ENDPOINT} at a time: ${bare.cpuMsPerMessage.toFixed(2)} ms of CPU per message ` +
        `(ours ${(addedPerMessage / bare.cpuMsPerMessage).toFixed(1)}x)`,
    );
    console.log(`  messages received: ${withHooks.messages} (${POSTS} target events and ${POSTS} post events expected)`);
    console.log("  goal: p50 <= 100 ms, p99 <= 500 ms, rate within 10 % of the rate without webhooks");
  } finally {
    await res.close();
  }
}

interface Burst {
  /** Targets per second from the due time to the last publishedAt. */
  rate: number;
  /** Per target with a message: receipt - publishedAt, ms. */
  latency: number[];
  messages: number;
  /** CPU ms of the server's process and of PostgreSQL's, from just before the due time until the burst was over. */
  serverCpu: number;
  dbCpu: number;
}

/** With `beside`, it runs from when the posts are created (`at`: their due time) and the burst waits for it. */
async function burst(server: ServerProcess, receiver: Receiver, posts: number, withEndpoint: boolean, beside?: (at: Date) => Promise<void>): Promise<Burst> {
  const call = caller(server);
  const at = new Date(Date.now() + LEAD_MS);
  at.setMilliseconds(0);
  const ids = new Set<string>();
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      while (next < posts) {
        const i = next++;
        const post = await call(
          "POST",
          "/api/v1/social/posts",
          { accountIds: i % 2 ? "pageplatform:3001" : "pageplatform:3002", caption: `Burst ${i} ${crypto.randomUUID()}`, scheduledFor: at.toISOString() },
          { "Idempotency-Key": crypto.randomUUID() },
        );
        ids.add(post.id);
      }
    }),
  );
  if (Date.now() > at.getTime() - 1000) throw new Error("creating the posts took longer than the lead time; raise LEAD_MS");
  const besideDone = beside?.(at);
  const receivedBefore = receiver.received.length;
  // The messages of this burst's targets, as the receiver got them: each parsed once, when first looked at, so
  // the looking costs the receiver's process next to nothing while the burst arrives.
  const latency: number[] = [];
  let seen = receivedBefore;
  const targetEvents = () => {
    for (; seen < receiver.received.length; seen++) {
      const r = receiver.received[seen]!;
      const m = JSON.parse(r.body) as { type: string; data: { post?: { id: string }; target?: { publishedAt: string } } };
      if (m.type === "post.target.published" && m.data.post && ids.has(m.data.post.id)) latency.push(r.at - Date.parse(m.data.target!.publishedAt));
    }
    return latency;
  };
  // Nothing reads from the server while the burst runs: with an endpoint the receiver says when it is over,
  // without one a first look comes a few seconds after the due time, then one every 2 s.
  await new Promise((r) => setTimeout(r, at.getTime() - 500 - Date.now()));
  const pids = await serverPids(server.dataDir);
  const cpuBefore = await cpuMs(pids);
  const dbBefore = await cpuByPid(await postgresPids());
  await new Promise((r) => setTimeout(r, at.getTime() + 1000 - Date.now()));
  if (withEndpoint) {
    for (const deadline = Date.now() + 180_000; targetEvents().length < posts && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 100));
  } else await new Promise((r) => setTimeout(r, 3000));
  const serverCpu = (await cpuMs(pids)) - cpuBefore;
  const dbCpu = await cpuSince(dbBefore, await postgresPids());
  const published = new Map<string, number>();
  for (const deadline = at.getTime() + 180_000; ; ) {
    for (let offset = 0; offset < posts; offset += 100) {
      const page = await call("GET", `/api/v1/social/posts?limit=100&offset=${offset}`);
      for (const p of page.items as Array<{ id: string; accounts: Array<{ publishedAt: string | null }> }>) {
        if (ids.has(p.id) && p.accounts[0]!.publishedAt) published.set(p.id, Date.parse(p.accounts[0]!.publishedAt));
      }
    }
    if (published.size === posts) break;
    if (Date.now() > deadline) throw new Error(`only ${published.size} of ${posts} published within 3 minutes`);
    await new Promise((r) => setTimeout(r, 2000));
  }
  await besideDone;
  const last = Math.max(...published.values());
  const rate = posts / ((last - at.getTime()) / 1000);
  return { rate, latency: targetEvents(), messages: receiver.received.length - receivedBefore, serverCpu, dbCpu };
}

/** A target event's body as the receiver got it. */
function sampleTargetEvent(receiver: Receiver): string {
  const sample = [...receiver.received].reverse().find((r) => (JSON.parse(r.body) as { type: string }).type === "post.target.published");
  if (!sample) throw new Error("no target event was received to send again");
  return sample.body;
}

/** Runs bench/webhooks-bare.ts with `body`, paced when told; its CPU per message. */
async function bareSender(
  body: string,
  receiver: Receiver,
  count: number,
  paced?: { startAt: number; spreadMs: number },
): Promise<{ cpuMsPerMessage: number }> {
  const dir = await mkdtemp(join(tmpdir(), "webhooks-bare-"));
  try {
    const bodyFile = join(dir, "body.json");
    await writeFile(bodyFile, body);
    const script = fileURLToPath(new URL("./webhooks-bare.ts", import.meta.url));
    const tsx = fileURLToPath(new URL("../node_modules/.bin/tsx", import.meta.url));
    const pacing = paced ? [String(paced.startAt), String(Math.round(paced.spreadMs))] : [];
    const { stdout } = await promisify(execFile)(tsx, [
      script,
      receiver.url,
      bodyFile,
      String(count),
      String(paced ? IDEAL_CONCURRENCY : PER_ENDPOINT),
      ...pacing,
    ]);
    const result = JSON.parse(stdout.trim().split("\n").pop()!) as { cpuMsPerMessage: number; failed: number };
    if (result.failed) throw new Error(`the receiver refused ${result.failed} of the bare sender's messages`);
    return result;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function row(label: string, ms: number[]): void {
  if (ms.length === 0) {
    console.log(`  ${label}: no messages`);
    return;
  }
  latencyRow(label, ms, 48);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchWebhooks();
}
