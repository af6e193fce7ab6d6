/**
 * Decoding a 40 MP PNG for a reader that needs at most 3200 px: decodePngAtMost (streaming inflate, row by
 * row box filter) beside photon's whole decode (decodeImage's decoder) and sharp's resize to 3200, for a
 * photo-like PNG (noise + gradient) and for a PNG of one colour (a 128 KB zlib bomb).
 *
 * Each contender runs in its own child process, so its peak RSS growth is its own: photon's WASM memory only
 * grows and sharp keeps native buffers, which would otherwise blur the figures. The peak is the kernel's
 * high-water mark (VmHWM, reset just before the first call through /proc/self/clear_refs; getrusage's
 * maxrss where that is unavailable) minus RSS just before the call; it includes garbage V8 has not yet
 * collected. Time is the median of the calls after that first one.
 *
 * Run alone: `npx tsx bench/png-decode.ts`; or with the others: `npm run bench -- png`.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import sharp from "sharp";
import { photoPixels } from "../test/helpers/images";
import { middle } from "./timing";

const SIDE = 6300;
const MAX_SIDE = 3200;
const RUNS = 3;

type Contender = "ours" | "photon" | "sharp";
interface Measured {
  ms: number;
  /** CPU time (user + system, all threads) of the same calls: steadier than wall time on a shared machine. */
  cpuMs: number;
  peakMiB: number;
  out: string;
  note: string;
}

export async function benchPngDecode(): Promise<void> {
  const inputs: Array<[string, Buffer]> = [
    ["photo-like (noise + gradient)", await makePhotoPng(SIDE, SIDE)],
    [
      "one colour (zlib bomb)",
      await sharp({ create: { width: SIDE, height: SIDE, channels: 3, background: "#2a7fd4" } })
        .png({ compressionLevel: 9 })
        .toBuffer(),
    ],
  ];
  for (const [label, png] of inputs) {
    const file = join(tmpdir(), `png-decode-bench-${process.pid}.png`);
    writeFileSync(file, png);
    try {
      console.log(
        `png-decode: ${SIDE}x${SIDE} ${label} PNG, ${(png.length / 1e6).toFixed(2)} MB, to at most ${MAX_SIDE} px; median of ${RUNS}, each contender in its own process`,
      );
      const results = {} as Record<Contender, Measured>;
      for (const who of ["ours", "photon", "sharp"] as const) {
        results[who] = runChild(who, file);
        const r = results[who];
        console.log(
          `  ${`${who}: ${r.note}`.padEnd(66)} ${r.ms.toFixed(0).padStart(6)} ms (CPU ${r.cpuMs.toFixed(0).padStart(5)} ms)   peak RSS +${r.peakMiB.toFixed(0).padStart(4)} MiB   -> ${r.out}`,
        );
      }
      const { ours, photon, sharp: peer } = results;
      const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
      console.log(
        `  ratios ours/photon: time ${ratio(ours.ms, photon.ms)} (CPU ${ratio(ours.cpuMs, photon.cpuMs)}), memory ${ratio(ours.peakMiB, photon.peakMiB)};` +
          ` ours/sharp: time ${ratio(ours.ms, peer.ms)} (CPU ${ratio(ours.cpuMs, peer.cpuMs)}), memory ${ratio(ours.peakMiB, peer.peakMiB)}`,
      );
    } finally {
      rmSync(file, { force: true });
    }
  }
}

function runChild(who: Contender, file: string): Measured {
  const self = fileURLToPath(import.meta.url);
  const child = spawnSync(process.execPath, [...process.execArgv, "--expose-gc", self, "--child", who, file], { encoding: "utf8", maxBuffer: 1 << 20 });
  if (child.status !== 0) throw new Error(`${who} failed: ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split("\n").pop()!) as Measured;
}

/** In the child: one call for peak memory, then RUNS timed calls. Prints one JSON line. */
async function child(who: Contender, file: string): Promise<void> {
  const bytes: Uint8Array = readFileSync(file);
  let run: () => unknown;
  let note: string;
  if (who === "ours") {
    const { decodePngAtMost } = await import("../src/images/png-decode");
    run = () => decodePngAtMost(bytes, MAX_SIDE);
    note = `decodePngAtMost(bytes, ${MAX_SIDE})`;
  } else if (who === "photon") {
    const { decodeImage, MAX_IMAGE_BYTES } = await import("../src/images");
    const { photon } = await import("../functions/node/photon");
    if (bytes.length <= MAX_IMAGE_BYTES) {
      run = () => decodeImage(bytes);
      note = "photon whole decode (decodeImage)";
    } else {
      // decodeImage refuses files over 10 MB before decoding; this is the decode it would run.
      run = () => photon!.decode(bytes);
      note = "photon whole decode (decodeImage's decoder; file > 10 MB)";
    }
  } else {
    const { default: sharpLib } = await import("sharp");
    sharpLib.cache(false);
    run = () => sharpLib(bytes, { limitInputPixels: false }).resize(MAX_SIDE, MAX_SIDE, { fit: "inside" }).raw().toBuffer({ resolveWithObject: true });
    note = `sharp resize to ${MAX_SIDE} (libvips, concurrency ${sharpLib.concurrency()})`;
  }
  globalThis.gc?.();
  const highWater = resetHighWater();
  const before = process.memoryUsage().rss;
  const first = (await run()) as { width?: number; height?: number; info?: { width: number; height: number } };
  const peak = highWater ? highWater() : process.resourceUsage().maxRSS * 1024;
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    const c = process.cpuUsage();
    await run();
    const used = process.cpuUsage(c);
    times.push(performance.now() - t);
    cpu.push((used.user + used.system) / 1000);
  }
  const size = first.info ?? first;
  const result: Measured = { ms: middle(times), cpuMs: middle(cpu), peakMiB: Math.max(0, peak - before) / 1048576, out: `${size.width}x${size.height}`, note };
  console.log(JSON.stringify(result));
}

/** Resets the kernel's RSS high-water mark; returns a reader for it, or null off Linux. */
function resetHighWater(): (() => number) | null {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
  } catch {
    return null;
  }
  return () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0) * 1024;
}

/** Photo-like RGB (test/helpers/images photoPixels) as a PNG. */
async function makePhotoPng(width: number, height: number): Promise<Buffer> {
  return sharp(await photoPixels(width, height), { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const at = process.argv.indexOf("--child");
  if (at > 0) await child(process.argv[at + 1] as Contender, process.argv[at + 2]!);
  else await benchPngDecode();
}
