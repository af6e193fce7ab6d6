/**
 * Fairness under heavy images, through HTTP against the real embedded server (`functions/node.ts`,
 * started by the bench with its own DATA_DIR): another user's cheap request (`GET /api/v1/social/accounts`)
 * timed back to back with no load, then while one user sends 16 concurrent QR decodes of a 40 MP PNG; the
 * p50 and p99 of each, and the ratio of the p99s. The heavy user's answers are counted by status.
 *
 * Run alone: `npx tsx bench/fairness.ts`; or with the others: `npm run bench -- fairness`.
 */
import { pathToFileURL } from "node:url";
import sharp from "sharp";
import { startServerProcess, type ServerProcess } from "../test/helpers/server-process";

const BURST = 16;

export async function benchFairness(): Promise<void> {
  const server = await startServerProcess({ env: { RATE_LIMIT_SOCIAL_READ: "1000000", RATE_LIMIT_QR: "1000000" } });
  try {
    const other = (await server.admin("user:create", "--email", "other@example.test")).trim();
    const body = JSON.stringify({ base64: `data:image/png;base64,${(await hugeQrPng(server)).toString("base64")}` });
    const cheap = async () => {
      const started = performance.now();
      const res = await fetch(`${server.baseUrl}/api/v1/social/accounts`, { headers: { authorization: `Bearer ${other}` } });
      await res.arrayBuffer();
      return performance.now() - started;
    };
    for (let i = 0; i < 50; i++) await cheap(); // warm-up
    const quiet: number[] = [];
    for (let i = 0; i < 300; i++) quiet.push(await cheap());

    const statuses = new Map<number, number>();
    let over = false;
    const started = performance.now();
    const burst = Promise.all(
      Array.from({ length: BURST }, async () => {
        const res = await fetch(`${server.baseUrl}/api/qr-code/decode`, {
          method: "POST",
          headers: { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" },
          body,
        });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }),
    ).finally(() => (over = true));
    const busy: number[] = [];
    while (!over) busy.push(await cheap());
    await burst;
    const burstSeconds = (performance.now() - started) / 1000;

    const q = stats(quiet);
    const b = stats(busy);
    console.log(`  another user's GET /api/v1/social/accounts, back to back:`);
    console.log(`  no burst:                                   p50 ${q.p50.toFixed(1)} ms, p99 ${q.p99.toFixed(1)} ms (${quiet.length} requests)`);
    console.log(
      `  during ${BURST} concurrent 40 MP QR decodes of one user: p50 ${b.p50.toFixed(1)} ms, p99 ${b.p99.toFixed(1)} ms (${busy.length} requests in ${burstSeconds.toFixed(1)} s)`,
    );
    console.log(`  ratio of the p99s: ${(b.p99 / q.p99).toFixed(2)}x (goal: under 200 ms during the burst)`);
    console.log(`  the heavy user's answers: ${[...statuses].map(([s, n]) => `${n} x ${s}`).join(", ")}`);
  } finally {
    await server.dispose();
  }
}

function stats(ms: number[]): { p50: number; p99: number } {
  const s = [...ms].sort((a, b) => a - b);
  return { p50: s[Math.floor(s.length / 2)]!, p99: s[Math.min(s.length - 1, Math.ceil(s.length * 0.99) - 1)]! };
}

/** A 6300 x 6300 PNG (39.7 MP) of a QR code made by the server itself, scaled up without smoothing. */
async function hugeQrPng(server: ServerProcess): Promise<Buffer> {
  const res = await fetch(`${server.baseUrl}/api/qr-code/generate/${server.apiKey}/${encodeURIComponent("https://example.com/huge")}?size=630`);
  return sharp(Buffer.from(await res.arrayBuffer()))
    .resize(6300, 6300, { kernel: "nearest" })
    .png({ compressionLevel: 9, palette: true })
    .toBuffer();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await benchFairness();
