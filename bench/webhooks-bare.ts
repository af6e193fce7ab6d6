/**
 * The webhooks bench's peer: the least a sender does per message, in a process of its own. It POSTs the same
 * body `count` times to a receiver, `concurrency` at a time, each with its Standard Webhooks headers (the
 * HMAC-SHA256 of `id.timestamp.body`), and no database, queue or log; then prints its own CPU per message as
 * JSON. A first pass, untimed, warms the code up (the server's sender, by contrast, sends its first messages
 * in the measured burst); the timed pass goes over a fresh undici Agent, so it opens as many connections as the
 * server's sender does in a burst.
 *
 * Paced (`<start> <spread>` given): the timed pass begins at epoch ms `start` and message i is ready at
 * `start + i * spread / count`, as if a sender were told of each event the instant it happened, evenly over a
 * burst of `spread` ms; each message's `webhook-id` is `paced_<i>_<ready epoch ms>`, so the receiver's side
 * can tell how long after its ready time each one arrived.
 *
 * Run by bench/webhooks.ts: `npx tsx bench/webhooks-bare.ts <url> <body file> <count> <concurrency> [<start> <spread>]`.
 */
import { createHmac, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, request } from "undici";

const [url, bodyFile, count, concurrency, start, spread] = process.argv.slice(2);
if (!url || !bodyFile) throw new Error("usage: webhooks-bare.ts <url> <body file> <count> <concurrency> [<start> <spread>]");
const body = readFileSync(bodyFile, "utf8");
const total = Number(count ?? 2000);
const secret = randomBytes(32);
let failed = 0;

/** Sends `total` messages over `agent`, `concurrency` at a time; message i not before `readyAt(i)` when given. */
async function pass(agent: Agent, tag: string, readyAt?: (i: number) => number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Number(concurrency ?? 256) }, async () => {
      while (next < total) {
        const i = next++;
        if (!readyAt) {
          await send(agent, `msg_${tag}_${i}`);
          continue;
        }
        const ready = readyAt(i);
        if (ready > Date.now()) await sleep(ready - Date.now());
        await send(agent, `paced_${i}_${ready}`);
      }
    }),
  );
}

async function send(agent: Agent, id: string): Promise<void> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = createHmac("sha256", secret).update(`${id}.${timestamp}.${body}`).digest("base64");
  const answer = await request(url!, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": `v1,${signature}` },
    dispatcher: agent,
  });
  await answer.body.dump();
  if (answer.statusCode >= 300) failed++;
}

const warm = new Agent();
await pass(warm, "warm");
await warm.close();
const agent = new Agent();
const startAt = start ? Number(start) : undefined;
if (startAt !== undefined && startAt > Date.now()) await sleep(startAt - Date.now());
const cpuBefore = process.cpuUsage();
const started = performance.now();
await pass(agent, "bare", startAt === undefined ? undefined : (i) => startAt + Math.floor((i * Number(spread ?? 0)) / total));
const cpu = process.cpuUsage(cpuBefore);
await agent.close();
process.stdout.write(`${JSON.stringify({ cpuMsPerMessage: (cpu.user + cpu.system) / 1000 / total, wallMs: performance.now() - started, failed })}\n`);
