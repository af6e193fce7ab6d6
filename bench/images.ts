/**
 * Media normalisation of a 12-megapixel JPEG (4000x3000) to the social rules (fit 1440x1800, JPEG): ours
 * (photon WASM decode and encode, JS resize) beside sharp (native libvips) doing the same resize + encode in
 * the same process, medians of several runs, and the ratio. Also ours by phase, and sharp on one thread, to
 * show where the difference comes from.
 *
 * Run alone: `npx tsx bench/images.ts`; or with the others: `npm run bench -- images`.
 */
import { pathToFileURL } from "node:url";
import sharp from "sharp";
import { encodeJpeg, withDecoded } from "../src/images/codec";
import { normaliseToJpeg } from "../src/images/normalise";
import { resizeRgba } from "../src/images/resize";
import { makePhotoJpeg } from "../test/helpers/images";

const RUNS = 7;
const WARMUP = 2;

/** Prints the figures; returns nothing (timings are never assertions). */
export async function benchImages(): Promise<void> {
  const input = await makePhotoJpeg(4000, 3000, 85);
  const sharpNormalise = () =>
    sharp(input).rotate().resize(1440, 1800, { fit: "inside", withoutEnlargement: true }).flatten({ background: "#ffffff" }).jpeg({ quality: 85 }).toBuffer();

  const threads = sharp.concurrency();
  const ours = await median(() => normaliseToJpeg(input));
  const peer = await median(sharpNormalise);
  sharp.concurrency(1);
  const peerOneThread = await median(sharpNormalise);
  sharp.concurrency(threads);

  const phases = { decode: [] as number[], resize: [] as number[], encode: [] as number[] };
  for (let i = 0; i < WARMUP + RUNS; i++) {
    let t = performance.now();
    const rgba = withDecoded(input, (img) => ({ width: img.get_width(), height: img.get_height(), data: img.get_raw_pixels() }));
    const decode = performance.now() - t;
    t = performance.now();
    const small = resizeRgba(rgba, 1440, 1080);
    const resize = performance.now() - t;
    t = performance.now();
    encodeJpeg(small, 85);
    const encode = performance.now() - t;
    if (i >= WARMUP) {
      phases.decode.push(decode);
      phases.resize.push(resize);
      phases.encode.push(encode);
    }
  }
  const sharpDecode = await median(() => sharp(input).raw().toBuffer());

  const out = await normaliseToJpeg(input);
  const peerOut = await sharpNormalise();
  console.log(`images: normalise a 12 MP JPEG (4000x3000, ${(input.length / 1e6).toFixed(1)} MB) to ${out.width}x${out.height} JPEG, median of ${RUNS}`);
  row("ours (photon WASM + JS resize)", ours);
  row(`sharp (libvips, concurrency ${threads})`, peer);
  console.log(`  ${"ratio ours / sharp".padEnd(38)} ${(ours / peer).toFixed(2)}x`);
  if (threads !== 1) row("sharp, concurrency 1", peerOneThread, `ratio ${(ours / peerOneThread).toFixed(2)}x`);
  console.log(
    `  ours by phase: decode+copy ${mid(phases.decode).toFixed(0)} ms, resize ${mid(phases.resize).toFixed(0)} ms, encode ${mid(phases.encode).toFixed(0)} ms` +
      ` (sharp full-size decode alone: ${sharpDecode.toFixed(0)} ms; in its pipeline libjpeg decodes at reduced scale)`,
  );
  console.log(`  output size: ours ${(out.bytes.length / 1024).toFixed(0)} KiB, sharp ${(peerOut.length / 1024).toFixed(0)} KiB (both quality 85)`);
}

function row(label: string, ms: number, note = ""): void {
  console.log(`  ${label.padEnd(38)} ${ms.toFixed(0).padStart(5)} ms${note ? `   ${note}` : ""}`);
}

async function median(run: () => unknown): Promise<number> {
  for (let i = 0; i < WARMUP; i++) await run();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await run();
    times.push(performance.now() - t);
  }
  return mid(times);
}

function mid(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchImages();
}
