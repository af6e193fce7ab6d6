/**
 * `npm run bench`: every benchmark prints this project's figure beside a peer measured in the same run,
 * and the ratio. Run one area with `npm run bench -- qr` (or images, social, photo, fairness, png, webp, schedule, edge, qr-http, social-http).
 */
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
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const names = wanted.length ? wanted : Object.keys(BENCHES);
for (const name of names) {
  const bench = BENCHES[name];
  if (!bench) {
    console.error(`unknown benchmark "${name}"; choose from ${Object.keys(BENCHES).join(", ")}`);
    process.exit(2);
  }
  console.log(`\n== ${name}`);
  await bench();
}
export {};
