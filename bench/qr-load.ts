/**
 * The QR-over-HTTP load of `npm run bench -- edge` and `-- qr-http`: each target in turn gets 16 undici
 * connections sending one request after another (a different URL every request, the same URLs for every
 * target), in alternating rounds after a warm-up; every answer must be a PNG and each slice's sample must read
 * back as its URL. Prints each target's median round and the asked-for ratios, also round by round.
 *
 * @example
 * await printQrThroughput([ours, peer], res, [[0, 1, "ours/peer"]]);
 */
import jsQR from "jsqr";
import sharp from "sharp";
import { Pool } from "undici";
import { payload } from "./qr";
import type { BenchResources } from "./resources";
import { middle } from "./timing";

const CONNECTIONS = 16;
const ROUNDS = 3;
const SLICE_MS = 5000;
const WARMUP_MS = 2000;

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

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
export async function printQrThroughput(
  targets: Target[],
  res: BenchResources,
  ratios: Array<[number, number, string]>,
  route: QrRoute = "get",
): Promise<void> {
  const pools = await res.own(
    async () => targets.map((t) => new Pool(t.origin, { connections: CONNECTIONS })),
    (ps) => Promise.all(ps.map((p) => p.destroy())),
  );
  const load = (i: number, firstUrl: number, ms: number) => slice(pools[i]!, targets[i]!.key, firstUrl, ms, route);

  for (const i of targets.keys()) await check(targets[i]!, await load(i, 0, WARMUP_MS));
  const rounds = targets.map(() => [] as Slice[]);
  for (let round = 0; round < ROUNDS; round++) {
    // Each side in turn, the order flipped every round; both get the same URLs.
    const order = round % 2 ? [...targets.keys()].reverse() : [...targets.keys()];
    for (const i of order) rounds[i]!.push(await check(targets[i]!, await load(i, (round + 1) * 100_000, SLICE_MS)));
  }

  const what =
    route === "get" ? "GET /api/qr-code/generate/{key}/{url}, 512 px PNG" : 'POST /api/qr-code/generate {type:"url"}, 512 px PNG as a data URL in JSON';
  console.log(`\nQR generate over HTTP: ${what}, a different 45-byte URL every request,`);
  console.log(
    `${CONNECTIONS} connections (undici), ${ROUNDS} alternating rounds of ${SLICE_MS / 1000} s after ${WARMUP_MS / 1000} s of warm-up each; median round:`,
  );
  const medians = rounds.map((slices) => middle(slices.map((s) => s.perSecond)));
  for (const [i, t] of targets.entries()) {
    const all = rounds[i]!.flatMap((s) => s.latencies).sort((a, b) => a - b);
    const pct = (p: number) => all[Math.min(all.length - 1, Math.ceil(all.length * p) - 1)]!;
    console.log(
      `  ${t.name.padEnd(84)} ${fmt(medians[i]!).padStart(5)} req/s  (rounds ${rounds[i]!.map((s) => fmt(s.perSecond)).join(", ")}; p50 ${fmt(pct(0.5), 1)} ms, p99 ${fmt(pct(0.99), 1)} ms)`,
    );
  }
  for (const [a, b, label] of ratios) {
    // Also round by round: the slices of a round ran back to back, under much the same load.
    const perRound = rounds[a]!.map((w, r) => w.perSecond / rounds[b]![r]!.perSecond);
    console.log(
      `  ratio ${label}: ${fmt(medians[a]! / medians[b]!, 2)}x the requests per second (round by round: ${perRound.map((x) => `${fmt(x, 2)}x`).join(", ")})`,
    );
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
