/**
 * `npm run bench`: every benchmark prints this project's figure beside a peer measured in the same run,
 * and the ratio. Run one area with `npm run bench -- qr` (or images, social, photo, fairness, png, webp, schedule, edge, qr-http, social-http, photo-callback, webhooks).
 * Several (or all) run one after the other, each in a process of its own.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
const BENCHES: Record<string, () => Promise<void>> = {
  qr: async () => (await import("./qr")).benchQr(),
  images: async () => (await import("./images")).benchImages(),
  social: async () => (await import("./social")).benchSocial(),
  photo: async () => (await import("./photo")).benchPhoto(),
  fairness: async () => (await import("./fairness")).benchFairness(),
  png: async () => (await import("./png-decode")).benchPngDecode(),
  webp: async () => (await import("./webp-decode")).benchWebpDecode(),
  schedule: async () => (await import("./schedule")).benchSchedule(),
  "qr-http": async () => (await import("./qr-http")).benchQrHttp(),
  edge: async () => (await import("./edge")).benchEdge(),
  "social-http": async () => (await import("./social-http")).benchSocialHttp(),
  "photo-callback": async () => (await import("./photo-callback")).benchPhotoCallback(),
  webhooks: async () => (await import("./webhooks")).benchWebhooks(),
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const names = wanted.length ? wanted : Object.keys(BENCHES);
const unknown = names.filter((name) => !BENCHES[name]);
if (unknown.length) {
  console.error(`unknown benchmark "${unknown[0]}"; choose from ${Object.keys(BENCHES).join(", ")}`);
  process.exit(2);
}
if (names.length === 1) {
  console.log(`\n== ${names[0]}`);
  await BENCHES[names[0]!]!();
} else {
  // Each benchmark in a process of its own, one after the other: what one leaves behind (a large heap, worker
  // threads, sharp's cache, loaded modules) does not weigh on the figures of the next, and a benchmark run in a
  // whole `npm run bench` measures what it measures when run alone.
  for (const name of names) {
    const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), name], { stdio: "inherit" });
    if (child.status !== 0) process.exit(child.status ?? 1);
  }
}
