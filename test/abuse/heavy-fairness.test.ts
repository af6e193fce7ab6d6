/**
 * Fair under heavy images (issue 14), against the real embedded server (`functions/node.ts`): while one
 * user sends 16 concurrent QR decodes of a 40 MP PNG, another user's cheap request keeps answering fast,
 * the heavy user gets results or 429 with Retry-After (never a 5xx), and once the heavy-work threads have
 * been idle the server's memory is back within 100 MB of where it was before the burst.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import sharp from "sharp";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";

let server: ServerProcess;
let other: string;

beforeAll(async () => {
  server = await startServerProcess({
    env: {
      ...(process.env.EXTRA_ENV ? JSON.parse(process.env.EXTRA_ENV) : {}),
      HEAVY_THREADS: "2",
      HEAVY_JOBS_PER_USER: "2",
      HEAVY_QUEUE_PER_USER: "4",
      HEAVY_IDLE_SECONDS: "1",
      RATE_LIMIT_SOCIAL_READ: "1000000",
    },
  });
  other = (await server.admin("user:create", "--email", "other@example.test")).trim();
}, 120_000);
afterAll(async () => {
  if (process.env.DEBUG_SERVER)
    console.log(
      server
        ?.output()
        .split("\n")
        .filter((l) => !l.includes('"request"'))
        .join("\n"),
    );
  await server?.dispose();
});

const json = (apiKey: string) => ({ authorization: `Bearer ${apiKey}`, "content-type": "application/json" });

/** A 6300 x 6300 PNG (39.7 MP, under the 40 MP cap) of a QR code, made from the server's own code. */
async function hugeQrPng(): Promise<Buffer> {
  const res = await fetch(`${server.baseUrl}/api/qr-code/generate/${server.apiKey}/${encodeURIComponent("https://example.com/huge")}?size=630`);
  expect(res.status).toBe(200);
  const small = Buffer.from(await res.arrayBuffer());
  return sharp(small).resize(6300, 6300, { kernel: "nearest" }).png({ compressionLevel: 9, palette: true }).toBuffer();
}

async function cheap(): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${server.baseUrl}/api/v1/social/accounts`, { headers: { authorization: `Bearer ${other}` } });
  await res.arrayBuffer();
  expect(res.status).toBe(200);
  return performance.now() - started;
}

const p99 = (ms: number[]) => [...ms].sort((a, b) => a - b)[Math.min(ms.length - 1, Math.ceil(ms.length * 0.99) - 1)]!;

let idleThreads = 0;

/** The server's RSS once its heavy-work threads have ended (they end after 1 s idle here). */
async function idleRss(): Promise<number> {
  for (let i = 0; i < 60 && (await server.threads()) > idleThreads; i++) await new Promise((r) => setTimeout(r, 250));
  await new Promise((r) => setTimeout(r, 500));
  return server.rss();
}

describe("heavy images from one user", () => {
  it("never stall another user's cheap request, end in results or 429, and hand their memory back", async () => {
    idleThreads = await server.threads(); // before any heavy work
    const png = await hugeQrPng();
    const body = JSON.stringify({ base64: `data:image/png;base64,${png.toString("base64")}` });
    // Warm: one small decode (threads started, code loaded), then back to idle.
    const small = await fetch(`${server.baseUrl}/api/qr-code/generate-base64/${server.apiKey}/warm`).then(
      (r) => r.json() as Promise<{ data: { qrCodeDataUrl: string } }>,
    );
    expect(
      (
        await fetch(`${server.baseUrl}/api/qr-code/decode`, {
          method: "POST",
          headers: json(server.apiKey),
          body: JSON.stringify({ base64: small.data.qrCodeDataUrl }),
        })
      ).status,
    ).toBe(200);
    for (let i = 0; i < 20; i++) await cheap();
    const before = await idleRss();

    let burstOver = false;
    const burst = Promise.all(
      Array.from({ length: 16 }, async () => {
        const res = await fetch(`${server.baseUrl}/api/qr-code/decode`, { method: "POST", headers: json(server.apiKey), body });
        const answer = (await res.json()) as { data?: { decodedText: string }; error?: { code: string } };
        return { status: res.status, retryAfter: res.headers.get("retry-after"), answer };
      }),
    ).finally(() => (burstOver = true));
    const during: number[] = [];
    while (!burstOver) during.push(await cheap());
    const results = await burst;

    for (const r of results) expect([200, 429]).toContain(r.status);
    const decoded = results.filter((r) => r.status === 200);
    expect(decoded.length).toBeGreaterThanOrEqual(2);
    for (const r of decoded) expect(r.answer.data?.decodedText).toBe("https://example.com/huge");
    for (const r of results.filter((r) => r.status === 429)) {
      expect(r.answer.error?.code).toBe("RATE_LIMITED");
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    expect(during.length).toBeGreaterThanOrEqual(10);
    const sorted = [...during].sort((a, b) => a - b);
    if (process.env.DEBUG_SERVER) console.log({ n: during.length, p50: sorted[sorted.length >> 1], p99: p99(during), max: sorted.at(-1) });
    expect(p99(during)).toBeLessThan(200);

    // Memory: once the threads have ended, within 100 MB of before the burst.
    let after = await idleRss();
    for (let i = 0; i < 10 && after - before >= 100 * 1024 * 1024; i++) after = await idleRss();
    if (process.env.DEBUG_SERVER) console.log({ beforeMiB: before / 1048576, afterMiB: after / 1048576 });
    expect((after - before) / 1024 / 1024).toBeLessThan(100);
  }, 180_000);
});
