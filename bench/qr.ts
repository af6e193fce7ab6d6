/**
 * Area A benchmark: `npm run bench -- qr`, or alone: `npx tsx bench/qr.ts`.
 *
 * Generation: codes per second and PNG bytes for a 512 px URL code through our whole generator (matrix,
 * PNG, and the scan check every code gets) next to npm `qrcode`'s `toBuffer`, on the same distinct payloads.
 * Decoding: rate and median milliseconds on the generated robustness corpus for our decoder, plain jsQR
 * and zxing-wasm (ZXing-C++) alone at full resolution, all in this process.
 */
import { pathToFileURL } from "node:url";
import jsQR from "jsqr";
import QRCode from "qrcode";
import { readBarcodes } from "zxing-wasm/reader";
import { parseHexColor } from "../src/qr/colors";
import { decodeQrImage } from "../src/qr/decode";
import { renderQr } from "../src/qr/render";
import { readWithZxing } from "../src/qr/zxing-loader";
import { buildCorpus } from "../test/qr/corpus";
import { useNodeZxing } from "../test/qr/zxing-node";

const fg = parseHexColor("#000000");
const bg = parseHexColor("#FFFFFF");
/** The URLs every QR benchmark encodes: 45 bytes, a different one for each `i`. */
export const payload = (i: number) => `https://shop.example.com/products/${100000 + i}?utm_source=qr`;

type Generator = (text: string) => Promise<Uint8Array>;

/**
 * Codes per second of each generator on fresh payloads, measured in alternating slices of `sliceMs` for
 * `rounds` rounds, so a busy machine slows both sides alike and the ratio stays fair.
 */
async function throughput(generators: Generator[], rounds: number, sliceMs: number): Promise<Array<{ perSecond: number; bytes: number }>> {
  const stats = generators.map(() => ({ n: 0, ms: 0, bytes: 0 }));
  let next = 0;
  for (const fn of generators) for (let i = 0; i < 20; i++) await fn(payload(900_000 + i)); // warm-up
  for (let round = 0; round < rounds; round++) {
    for (const [g, fn] of generators.entries()) {
      const stat = stats[g]!;
      const started = performance.now();
      while (performance.now() - started < sliceMs) {
        stat.bytes = (await fn(payload(next++))).length;
        stat.n++;
      }
      stat.ms += performance.now() - started;
    }
  }
  return stats.map((s) => ({ perSecond: (s.n * 1000) / s.ms, bytes: s.bytes }));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

export async function benchQr(): Promise<void> {
  useNodeZxing();
  await readWithZxing({ width: 1, height: 1, data: new Uint8ClampedArray(4) }, {}); // instantiate the wasm outside the timings

  console.log("QR generation: 512 px PNG of a 45-byte URL, a different URL every code");
  const [ours, peer] = (await throughput(
    [
      async (text) => (await renderQr(text, { size: 512, fg, bg, transparent: false, logoSizeRatio: 0.2 })).png,
      async (text) => new Uint8Array(await QRCode.toBuffer(text, { width: 512, margin: 4, errorCorrectionLevel: "M" })),
    ],
    10,
    400,
  )) as [{ perSecond: number; bytes: number }, { perSecond: number; bytes: number }];
  console.log(`  ours (qrcode matrix + own mask, 1-bit PNG, ZXing scan check)  ${fmt(ours.perSecond).padStart(6)} codes/s  ${fmt(ours.bytes).padStart(6)} B`);
  console.log(`  npm qrcode toBuffer                                          ${fmt(peer.perSecond).padStart(6)} codes/s  ${fmt(peer.bytes).padStart(6)} B`);
  console.log(
    `  ratio: ${fmt(ours.perSecond / peer.perSecond, 1)}x the throughput (target >= 10x), ${fmt(ours.bytes / peer.bytes, 3)} of the bytes (target < 0.333)`,
  );

  const logo = { width: 256, height: 256, data: new Uint8Array(256 * 256 * 4) };
  for (let y = 0; y < 256; y++) {
    for (let x = 0; x < 256; x++) {
      const inside = Math.hypot(x - 127.5, y - 127.5) < 126;
      logo.data.set(inside ? [30 + (x >> 2), 80, 200 - (y >> 2), 255] : [0, 0, 0, 0], (y * 256 + x) * 4);
    }
  }
  const [withLogo] = (await throughput(
    [async (text) => (await renderQr(text, { size: 512, fg, bg, transparent: false, logo, logoSizeRatio: 0.3 })).png],
    1,
    2000,
  )) as [{ perSecond: number; bytes: number }];
  console.log(
    `  ours with a 0.3 round gradient logo (EC H, jsQR + ZXing check) ${fmt(withLogo.perSecond).padStart(4)} codes/s  ${fmt(withLogo.bytes).padStart(6)} B`,
  );

  console.log("\nQR decoding: generated robustness corpus (test/qr/corpus.ts)");
  const corpus = await buildCorpus();
  const rows: Array<{ name: string; ok: number; times: number[]; slowest: [string, number] }> = [
    { name: "ours (ZXing-C++, re-binarised, jsQR)", ok: 0, times: [], slowest: ["", 0] },
    { name: "zxing-wasm alone (full resolution)", ok: 0, times: [], slowest: ["", 0] },
    { name: "plain jsQR", ok: 0, times: [], slowest: ["", 0] },
  ];
  for (const item of corpus) {
    const { data, width, height } = item.image;
    const clamped = new Uint8ClampedArray(data.buffer, data.byteOffset, data.length);
    const runs: Array<() => Promise<string | null | undefined>> = [
      async () => (await decodeQrImage(item.image))?.text,
      async () => (await readBarcodes({ data: clamped, width, height } as unknown as ImageData, { formats: ["QRCode"], maxNumberOfSymbols: 1 }))[0]?.text,
      async () => jsQR(clamped, width, height)?.data,
    ];
    for (const [i, run] of runs.entries()) {
      const row = rows[i]!;
      const started = performance.now();
      const text = await run();
      const ms = performance.now() - started;
      row.times.push(ms);
      if (ms > row.slowest[1]) row.slowest = [item.name, ms];
      if (text === item.expected) row.ok++;
    }
  }
  for (const row of rows) {
    console.log(
      `  ${row.name.padEnd(38)} ${String(row.ok).padStart(3)}/${corpus.length} (${fmt((100 * row.ok) / corpus.length, 1).padStart(5)}%)  median ${fmt(median(row.times), 1).padStart(6)} ms  slowest ${fmt(row.slowest[1]).padStart(6)} ms (${row.slowest[0]})`,
    );
  }
  const [o, z, j] = rows;
  console.log(`  ratio: ours reads ${o!.ok - z!.ok} more than ZXing-C++ alone and ${o!.ok - j!.ok} more than jsQR (target: at or above ZXing-C++)`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchQr();
}
