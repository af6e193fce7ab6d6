/**
 * Where an image path's memory goes in workerd: builds the Worker, puts a small tracker in front of its code
 * (typed-array and ArrayBuffer constructors, `slice`, TextEncoder/TextDecoder, request and response body
 * readers, JSON.parse and JSON.stringify), sends one request per `path:image` pair to a fresh isolate after a
 * warm-up with a small image, and prints the allocations of at least MIN_BYTES made during that request,
 * summed by kind and call site, beside the largest "external memory" (ArrayBuffers, WebAssembly memories at
 * their first size) V8's GC trace reported.
 *
 * Why this exists: V8 starts a full collection only after external memory has grown by a large step, so
 * every buffer a request makes and drops counts against a Worker's 128 MB until then. The peak follows how
 * much a request allocates, not only what it keeps, and `npm run test:edge-memory` says how much, not where.
 * This names the call sites that allocate per call, per chunk or per scan (docs/architecture.md, "The edge
 * runtime").
 *
 * Usage (the tracker changes the Worker's globals: a diagnostic, never a build to deploy):
 *   npm run edge:allocations -- media:png qr-logo:small product:jpeg
 *   MIN_BYTES=16384 npm run edge:allocations -- qr-logo:webp
 *   RESOLUTION=2K npm run edge:allocations -- product:png
 * Paths: media, decode, qr-logo, product, photo-logo, reference. Images: small (600x800 JPEG), png and jpeg
 * (photo-like, 12.5 MP, under 10 MB, a progressive JPEG), cmyk (12.5 MP, baseline), cmyk-progressive and webp
 * (2 MP).
 */
import { createRequire } from "node:module";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { createFetchMock } from "miniflare";
import { openNodeDb } from "../db/node";
import { createApiKey, createUser } from "../src/http/api-keys";
import { startLocalEdge } from "../dev/edge-worker";
import { createScratchDatabase } from "../dev/postgres";
import { connectInspector } from "../test/helpers/inspector";
import { largestImage, type LargeFormat } from "../test/helpers/largest-images";
import { freePort } from "../test/helpers/server-process";
import { productJpeg } from "../test/photo/fixtures";

const MIN_BYTES = Number(process.env.MIN_BYTES ?? 256 * 1024);
/** Area B's resolution (1K, 2K or 4K); the model's default when unset. */
const RESOLUTION = process.env.RESOLUTION ? { resolution: process.env.RESOLUTION } : {};
const QR_TEXT = "https://example.com/largest-image";

/** Runs first in the Worker: logs each allocation of at least MIN_BYTES as `ALLOC <kind> <bytes> <frames>`. */
const TRACKER = `(() => {
  const MIN = ${MIN_BYTES};
  const log = (kind, n) => {
    if (!(n >= MIN)) return;
    const frames = (new Error().stack || "").split("\\n").slice(3, 7).map((l) => l.trim().replace(/^at /, "").replace(/ \\(.*\\)$/, "").replace(/file:\\/\\/\\S*\\//, ""));
    console.log("ALLOC " + kind + " " + n + " " + frames.join(" < "));
  };
  const fresh = (a) => !(a instanceof ArrayBuffer) && !(typeof SharedArrayBuffer !== "undefined" && a instanceof SharedArrayBuffer);
  for (const name of ["Uint8Array", "Uint8ClampedArray", "Uint16Array", "Int16Array", "Uint32Array", "Int32Array", "Float32Array", "Float64Array", "ArrayBuffer"]) {
    const T = globalThis[name];
    const P = new Proxy(T, { construct(target, args, nt) { const r = Reflect.construct(target, args, nt === P ? target : nt); if (fresh(args[0])) log(name, r.byteLength); return r; } });
    globalThis[name] = P;
  }
  const wrap = (owner, key, kind, size) => { const f = owner[key]; owner[key] = function (...a) { const r = f.apply(this, a); log(kind, size(r, a)); return r; }; };
  const wrapAsync = (owner, key, kind, size) => { const f = owner[key]; owner[key] = async function (...a) { const r = await f.apply(this, a); log(kind, size(r)); return r; }; };
  wrap(Object.getPrototypeOf(Uint8Array.prototype), "slice", "slice", (r) => r.byteLength);
  wrap(ArrayBuffer.prototype, "slice", "ArrayBuffer.slice", (r) => r.byteLength);
  wrap(TextEncoder.prototype, "encode", "TextEncoder.encode", (r) => r.byteLength);
  wrap(TextDecoder.prototype, "decode", "TextDecoder.decode (chars)", (r) => r.length);
  for (const C of [Request, Response]) {
    wrapAsync(C.prototype, "arrayBuffer", C.name + ".arrayBuffer", (r) => r.byteLength);
    wrapAsync(C.prototype, "text", C.name + ".text (chars)", (r) => r.length);
  }
  wrap(JSON, "parse", "JSON.parse input (chars)", (r, a) => String(a[0]).length);
  wrap(JSON, "stringify", "JSON.stringify (chars)", (r) => (typeof r === "string" ? r.length : 0));
})();
`;

type Send = (image: string, small: string) => [path: string, body: unknown];
const PATHS: Record<string, Send> = {
  media: (image) => ["/api/v1/social/media", { base64: image }],
  decode: (image) => ["/api/qr-code/decode", { base64: image }],
  "qr-logo": (image) => ["/api/qr-code/generate", { type: "text", value: "edge memory", size: 2000, logoSizeRatio: 0.4, logoUrl: image }],
  product: (image) => ["/api/image/product-photography", { productImages: [{ dataUrl: image }], promptId: "studio-white-sweep", ...RESOLUTION }],
  "photo-logo": (image, small) => [
    "/api/image/product-photography",
    { productImages: [{ dataUrl: small }], promptId: "studio-white-sweep", logoImage: image, logoSize: 0.8, ...RESOLUTION },
  ],
  reference: (image, small) => [
    "/api/image/product-photography",
    { productImages: [{ dataUrl: small }], promptId: "studio-white-sweep", referenceImage: image, ...RESOLUTION },
  ],
};
const IMAGES: Record<string, { format: LargeFormat; width: number; height: number }> = {
  png: { format: "png", width: 4082, height: 3062 },
  jpeg: { format: "jpeg-progressive", width: 4082, height: 3062 },
  cmyk: { format: "jpeg-cmyk", width: 4082, height: 3062 },
  "cmyk-progressive": { format: "jpeg-cmyk-progressive", width: 1732, height: 1154 },
  webp: { format: "webp", width: 1732, height: 1154 },
};

const runs = process.argv.slice(2).map((arg) => {
  const [path, image = "small"] = arg.split(":");
  if (!path || !PATHS[path] || !(image === "small" || IMAGES[image])) {
    throw new Error(`"${arg}": give path:image, path one of ${Object.keys(PATHS).join(", ")}, image one of small, ${Object.keys(IMAGES).join(", ")}`);
  }
  return { path, image };
});
if (runs.length === 0) throw new Error("give at least one path:image, e.g. media:png");

// workerd with V8's GC trace on its stdout (test/helpers/workerd-v8), for the external memory figures.
process.env.REAL_WORKERD = createRequire(import.meta.url)("workerd").default as string;
process.env.WORKERD_V8_FLAGS = "--trace-gc --trace-gc-verbose";
process.env.MINIFLARE_WORKERD_PATH = fileURLToPath(new URL("../test/helpers/workerd-v8/workerd.sh", import.meta.url));

const lines: string[] = [];
const scratch = await createScratchDatabase();
const handle = await openNodeDb({ url: scratch.url, poolSize: 2 });
const cleanup: Array<() => unknown> = [() => scratch.drop(), () => handle.close()];
try {
  const { userId } = await createUser(handle.db, `allocations-${crypto.randomUUID()}@example.test`);
  const key = (await createApiKey(handle.db, userId)).key;
  const small = `data:image/jpeg;base64,${(await productJpeg(600, 800)).toString("base64")}`;
  const images: Record<string, string> = { small };
  for (const { image } of runs) {
    const spec = IMAGES[image];
    if (!spec || images[image]) continue;
    const made = await largestImage(spec.format, {
      ...spec,
      maxBytes: 10 * 1024 * 1024,
      qr: { text: QR_TEXT, side: Math.min(1400, Math.round(spec.height * 0.9)) },
    });
    images[image] = `data:${made.mimeType};base64,${made.bytes.toString("base64")}`;
  }

  const port = await freePort();
  const inspectorPort = await freePort();
  const fetchMock = createFetchMock();
  fetchMock.disableNetConnect();
  fetchMock.enableNetConnect(/^127\.0\.0\.1(:\d+)?$/);
  const edge = await startLocalEdge({
    databaseUrl: scratch.url,
    port,
    inspectorPort,
    fetchMock,
    stdio: (stdout: Readable, stderr: Readable) => {
      let partial = "";
      stdout.on("data", (chunk: Buffer) => {
        const parts = (partial + String(chunk)).split("\n");
        partial = parts.pop()!;
        lines.push(...parts);
      });
      stderr.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    },
    vars: { LOG_LEVEL: "warn", PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, RATE_LIMIT_PHOTO: "1000", RATE_LIMIT_QR: "1000", RATE_LIMIT_SOCIAL_WRITE: "1000" },
  });
  cleanup.push(() => edge.dispose());
  const worker = edge.build.modules[0]!;
  worker.contents = TRACKER + String(worker.contents);

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${edge.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  };
  const wake = () => fetch(`${edge.url}/`).then((r) => r.arrayBuffer());
  for (const { path, image } of runs) {
    await edge.setBindings(edge.bindings); // a fresh isolate, with the tracker
    const inspector = await connectInspector(inspectorPort, wake);
    try {
      const [url, warmBody] = PATHS[path]!(small, small);
      await post(url, warmBody);
      await inspector.collectGarbage();
      const mark = lines.length;
      const res = await post(...PATHS[path]!(images[image]!, small));
      await inspector.collectGarbage();
      report(`${path}:${image}`, res, lines.slice(mark));
    } finally {
      inspector.close();
    }
  }
} finally {
  for (const step of cleanup.reverse())
    await Promise.resolve()
      .then(step)
      .catch(() => {});
}

function report(name: string, res: { status: number; text: string }, output: string[]): void {
  const sites = new Map<string, { bytes: number; count: number }>();
  let external = 0;
  for (const line of output) {
    const alloc = /^ALLOC (.+?) (\d+) (.*)$/.exec(line);
    if (alloc) {
      const site = `${alloc[1]}  ${alloc[3]}`;
      const entry = sites.get(site) ?? { bytes: 0, count: 0 };
      entry.bytes += Number(alloc[2]);
      entry.count++;
      sites.set(site, entry);
    }
    const reported = /External memory reported:\s+(\d+) KB/.exec(line);
    if (reported) external = Math.max(external, Number(reported[1]) / 1024);
  }
  const mib = (n: number) => (n / 1024 / 1024).toFixed(1).padStart(7);
  console.log(
    `\n${name}: HTTP ${res.status}${res.status >= 300 ? ` ${res.text.slice(0, 200)}` : ""}; largest external memory V8 reported: ${external.toFixed(0)} MiB`,
  );
  console.log(`  allocations of at least ${MIN_BYTES} bytes, by site (MiB, count; "chars" counts characters):`);
  for (const [site, { bytes, count }] of [...sites].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 15)) {
    console.log(`  ${mib(bytes)} ${String(count).padStart(5)}  ${site}`);
  }
}
