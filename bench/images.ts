/**
 * Media normalisation of a 12-megapixel JPEG (4000x3000) to the social rules (fit 1440x1800, JPEG): ours
 * (TypeScript JPEG decode at N/8 scale to YCbCr planes, JS plane resize, TypeScript 4:2:0 encode from the planes) beside sharp (native libvips)
 * doing the same resize + encode in the same process, medians of several runs, and the ratio. Also ours by
 * phase, the old photon path, sharp on one thread, and photon's WASM memory after a 12 MP and a 40 MP input.
 *
 * Run alone: `npx tsx bench/images.ts`; or with the others: `npm run bench -- images`.
 */
import { pathToFileURL } from "node:url";
import sharp from "sharp";
import { photon, photonImage } from "../functions/node/photon";
import { decodeJpegPlanes, decodeJpegScaled } from "../src/images/jpeg-decode";
import { encodeJpegBaseline, encodeJpegPlanes } from "../src/images/jpeg-encode";
import { normaliseToJpeg } from "../src/images/normalise";
import { resizePlane } from "../src/images/planes";
import { resizeRgba } from "../src/images/resize";
import { makePhotoJpeg } from "../test/helpers/images";
import { medianMs, middle, RUNS, WARMUP } from "./timing";

const PhotonImage = photonImage();

/** Prints the figures; returns nothing (timings are never assertions). */
export async function benchImages(): Promise<void> {
  // First, before anything here has touched photon: its memory only grows, so later figures would hide ours.
  const memoryLines = await memory();
  const input = await makePhotoJpeg(4000, 3000, 85);
  const sharpNormalise = () =>
    sharp(input).rotate().resize(1440, 1800, { fit: "inside", withoutEnlargement: true }).flatten({ background: "#ffffff" }).jpeg({ quality: 85 }).toBuffer();

  const threads = sharp.concurrency();
  const ours = await medianMs(() => normaliseToJpeg(input));
  const peer = await medianMs(sharpNormalise);
  sharp.concurrency(1);
  const peerOneThread = await medianMs(sharpNormalise);
  sharp.concurrency(threads);

  const phases = { decode: [] as number[], resize: [] as number[], encode: [] as number[] };
  const rgbaPhases = { decode: [] as number[], resize: [] as number[], encode: [] as number[] };
  const photonPhases = { decode: [] as number[], resize: [] as number[], encode: [] as number[] };
  for (let i = 0; i < WARMUP + RUNS; i++) {
    // The JPEG -> JPEG path normaliseToJpeg takes: YCbCr planes throughout.
    let t = performance.now();
    const planes = decodeJpegPlanes(input, 1440, 1080)!;
    const decode = performance.now() - t;
    t = performance.now();
    const y = resizePlane(planes.y, 1440, 1080);
    const cb = resizePlane(planes.cb, 720, 540);
    const cr = resizePlane(planes.cr, 720, 540);
    const resize = performance.now() - t;
    t = performance.now();
    encodeJpegPlanes({ width: 1440, height: 1080, y, cb, cr }, 85);
    const encode = performance.now() - t;
    // The RGBA path (PNG/WebP, RGB-stored JPEGs): decode to RGBA, resize RGBA, convert and encode.
    t = performance.now();
    const scaled = decodeJpegScaled(input, 1440, 1080)!;
    const rDecode = performance.now() - t;
    t = performance.now();
    const small = resizeRgba(scaled, 1440, 1080);
    const rResize = performance.now() - t;
    t = performance.now();
    encodeJpegBaseline(small, 85);
    const rEncode = performance.now() - t;
    // The previous path: photon full-size decode, JS resize from 12 MP, photon encode.
    t = performance.now();
    const rgba = photon!.decode(input);
    const pDecode = performance.now() - t;
    t = performance.now();
    const pSmall = resizeRgba(rgba, 1440, 1080);
    const pResize = performance.now() - t;
    t = performance.now();
    const encoder = new PhotonImage(pSmall.data, pSmall.width, pSmall.height);
    encoder.get_bytes_jpeg(85);
    encoder.free();
    const pEncode = performance.now() - t;
    if (i >= WARMUP) {
      phases.decode.push(decode);
      phases.resize.push(resize);
      phases.encode.push(encode);
      rgbaPhases.decode.push(rDecode);
      rgbaPhases.resize.push(rResize);
      rgbaPhases.encode.push(rEncode);
      photonPhases.decode.push(pDecode);
      photonPhases.resize.push(pResize);
      photonPhases.encode.push(pEncode);
    }
  }
  const sharpDecode = await medianMs(() => sharp(input).raw().toBuffer());

  const out = await normaliseToJpeg(input);
  const peerOut = await sharpNormalise();
  const scaled = decodeJpegScaled(input, 1440, 1080)!;
  console.log(`images: normalise a 12 MP JPEG (4000x3000, ${(input.length / 1e6).toFixed(1)} MB) to ${out.width}x${out.height} JPEG, median of ${RUNS}`);
  row("ours (TS JPEG N/8 decode + JS resize + TS encode)", ours);
  row(`sharp (libvips, concurrency ${threads})`, peer);
  console.log(`  ${"ratio ours / sharp".padEnd(50)} ${(ours / peer).toFixed(2)}x`);
  if (threads !== 1) row("sharp, concurrency 1", peerOneThread, `ratio ${(ours / peerOneThread).toFixed(2)}x`);
  console.log(
    `  ours by phase (YCbCr planes): decode at ${scaled.eighths}/8 (${scaled.width}x${scaled.height}) ${middle(phases.decode).toFixed(0)} ms, resize ${middle(phases.resize).toFixed(0)} ms, encode ${middle(phases.encode).toFixed(0)} ms` +
      ` (sharp full-size decode alone: ${sharpDecode.toFixed(0)} ms)`,
  );
  console.log(
    `  RGBA path by phase (non-JPEG inputs): decode ${middle(rgbaPhases.decode).toFixed(0)} ms, resize ${middle(rgbaPhases.resize).toFixed(0)} ms, encode ${middle(rgbaPhases.encode).toFixed(0)} ms`,
  );
  console.log(
    `  old photon path by phase: decode+copy ${middle(photonPhases.decode).toFixed(0)} ms, resize ${middle(photonPhases.resize).toFixed(0)} ms, encode ${middle(photonPhases.encode).toFixed(0)} ms`,
  );
  console.log(`  output size: ours ${(out.bytes.length / 1024).toFixed(0)} KiB, sharp ${(peerOut.length / 1024).toFixed(0)} KiB (both quality 85)`);
  for (const line of memoryLines) console.log(line);
}

/**
 * Photon's WASM memory (it only grows) and the process RSS growth across normaliseToJpeg for a 12 MP and a
 * 40 MP JPEG. The WASM size is read from a 1x1 image's ImageData, whose buffer is the module's whole memory.
 */
async function memory(): Promise<string[]> {
  const wasmBytes = () => {
    const probe = new PhotonImage(new Uint8Array(4), 1, 1);
    const size = probe.get_image_data().data.buffer.byteLength;
    probe.free();
    return size;
  };
  const mib = (n: number) => `${(n / 1048576).toFixed(0)} MiB`;
  const lines: string[] = [];
  for (const [w, h] of [
    [4000, 3000],
    [7300, 5475],
  ] as const) {
    const input = await makePhotoJpeg(w, h, 85);
    const rss = process.memoryUsage().rss;
    const t = performance.now();
    const out = await normaliseToJpeg(input);
    const ms = performance.now() - t;
    lines.push(
      `  memory ${w}x${h} (${((w * h) / 1e6).toFixed(0)} MP, ${(input.length / 1e6).toFixed(1)} MB) -> ${out.width}x${out.height} in ${ms.toFixed(0)} ms:` +
        ` photon WASM memory ${mib(wasmBytes())}, process RSS +${mib(Math.max(0, process.memoryUsage().rss - rss))}`,
    );
  }
  return lines;
}

function row(label: string, ms: number, note = ""): void {
  console.log(`  ${label.padEnd(50)} ${ms.toFixed(0).padStart(5)} ms${note ? `   ${note}` : ""}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchImages();
}
