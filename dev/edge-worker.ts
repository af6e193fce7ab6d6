/**
 * The Worker as deployed, on this machine: `wrangler deploy --dry-run` builds the bundle from the real
 * wrangler.toml, and it runs in workerd (Miniflare, from wrangler's own dependencies) with the real edge
 * adapters pointed at local stand-ins: the Neon driver through the WebSocket-to-TCP bridge to a Postgres on
 * loopback, the Upstash limiter through the REST bridge to Redis, S3Storage at the S3 fake and, when asked,
 * QStash at the QStash fake. `npm run dev:edge` and the workerd tests both start it here.
 *
 * @example
 * const edge = await startLocalEdge({ databaseUrl, vars: { PUBLIC_BASE_URL: "https://api.example.test" } });
 * const res = await edge.mf.dispatchFetch("https://api.example.test/health");
 * await edge.dispose();
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Miniflare } from "miniflare";
import { generateTokenKey } from "../src/adapters/token-cipher";
import { startNeonBridge, type NeonBridge } from "./neon-bridge";
import { startQStashFake, type QStashFake } from "./qstash-fake";
import { startS3Fake, type S3Fake } from "./s3-fake";
import { startUpstashBridge, type UpstashBridge } from "./upstash-bridge";

const run = promisify(execFile);
export const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const BUCKET = "media";

export type MiniflareOptions = ConstructorParameters<typeof Miniflare>[0];

export interface LocalEdgeOptions {
  /** postgres:// URL of a database on loopback, already migrated. */
  databaseUrl: string;
  /** Bindings over wrangler.toml's [vars] and the stand-ins' (PUBLIC_BASE_URL, PLATFORM_SANDBOX, LOG_LEVEL, ...). */
  vars?: Record<string, string>;
  /** Replaces the bindings wholesale: given the standard set (vars and stand-ins) and wrangler.toml's [vars], returns what the Worker gets. */
  bindings?: (standard: Record<string, string>, wranglerVars: Record<string, string>) => Record<string, string>;
  /** TOKEN_ENCRYPTION_KEY; default a fresh one. */
  tokenEncryptionKey?: string;
  /** Start the QStash fake and configure the Worker with it: deliveries come back as signed callbacks. */
  qstash?: boolean;
  /** The S3 fake: keep objects in `dir` across restarts; `publicBaseUrl` is S3_PUBLIC_BASE_URL (default the bucket's URL). */
  s3?: { dir?: string; publicBaseUrl?: string };
  /**
   * Outbound HTTP of the Worker through an undici MockAgent (Miniflare's `createFetchMock()`): tests answer
   * a public image URL from here; the agent's enableNetConnect lets the stand-ins on loopback through.
   * WebSockets (the Neon driver) bypass it.
   */
  fetchMock?: MiniflareOptions["fetchMock"];
  /** Where Miniflare serves HTTP; default 127.0.0.1 on a free port. */
  host?: string;
  port?: number;
  /** What becomes of workerd's stdout and stderr (the Worker's console.log); default Miniflare's, printed here. */
  stdio?: MiniflareOptions["handleRuntimeStdio"];
  /**
   * Serve the V8 inspector (Chrome DevTools protocol) on this loopback port: tests use it to collect
   * garbage and read the isolate's heap before measuring memory.
   */
  inspectorPort?: number;
  /**
   * Also serve the Worker on a socket of its own (`directUrl`), without Miniflare's entry Worker in front:
   * the bench measures what that entry Worker adds to every request (Cloudflare runs no such Worker).
   */
  directSocket?: boolean;
}

export interface LocalEdge {
  mf: Miniflare;
  /** Miniflare's HTTP address, e.g. http://127.0.0.1:8787 */
  url: string;
  /** The wrangler build (worker.js and its .wasm and .ttf modules). */
  outDir: string;
  /** The Worker's own socket, with `directSocket`. */
  directUrl?: string;
  /** The build's modules, wrangler.toml's [vars] and wrangler's own size line. */
  build: WorkerBuild;
  /** What Miniflare runs now (build, bindings, host, port): `new Miniflare(edge.miniflareOptions)` starts another instance of the same Worker. */
  readonly miniflareOptions: MiniflareOptions;
  /** What the Worker was started with. */
  bindings: Record<string, string>;
  neon: NeonBridge;
  upstash: UpstashBridge;
  s3: S3Fake;
  qstash?: QStashFake;
  /** Runs the Worker's `scheduled` handler once, as the cron trigger does. */
  scheduled(): Promise<string>;
  /** Restarts the Worker in place with other bindings (Miniflare's setOptions). */
  setBindings(bindings: Record<string, string>): Promise<void>;
  dispose(): Promise<void>;
}

export async function startLocalEdge(options: LocalEdgeOptions): Promise<LocalEdge> {
  const outDir = await mkdtemp(join(tmpdir(), "edge-build-"));
  const cleanup: Array<() => unknown> = [() => rm(outDir, { recursive: true, force: true })];
  const dispose = async () => {
    // Each step on its own, so a Worker that failed to start still leaves no server or directory behind.
    for (const step of cleanup.splice(0).reverse())
      await Promise.resolve()
        .then(step)
        .catch(() => {});
  };
  try {
    const qstashKeys = {
      token: `qstash-${crypto.randomUUID()}`,
      currentSigningKey: `sig-${crypto.randomUUID()}`,
      nextSigningKey: `sig-${crypto.randomUUID()}`,
    };
    const started = (async () => {
      const [neon, upstash, s3, qstash] = await Promise.all([
        startNeonBridge(),
        startUpstashBridge(),
        startS3Fake({ buckets: [BUCKET], region: "auto", dir: options.s3?.dir }),
        options.qstash ? startQStashFake(qstashKeys) : undefined,
      ]);
      cleanup.push(() => Promise.all([neon.close(), upstash.close(), s3.close(), qstash?.close()]));
      return { neon, upstash, s3, qstash };
    })();
    // Settled both ways before going on, so a failed build still finds the stand-ins in `cleanup`.
    const [built, ready] = await Promise.allSettled([buildWorker(outDir), started]);
    if (built.status === "rejected") throw built.reason;
    if (ready.status === "rejected") throw ready.reason;
    const build = built.value;
    const { neon, upstash, s3, qstash } = ready.value;

    const standard: Record<string, string> = {
      ...build.vars,
      DATABASE_URL: options.databaseUrl,
      NEON_WS_PROXY: `127.0.0.1:${neon.port}/v1`,
      TOKEN_ENCRYPTION_KEY: options.tokenEncryptionKey ?? generateTokenKey(),
      S3_ENDPOINT: s3.endpoint,
      S3_REGION: s3.region,
      S3_BUCKET: BUCKET,
      S3_ACCESS_KEY_ID: s3.credentials.accessKeyId,
      S3_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
      S3_PUBLIC_BASE_URL: options.s3?.publicBaseUrl ?? `${s3.endpoint}/${BUCKET}`,
      UPSTASH_REDIS_REST_URL: upstash.url,
      UPSTASH_REDIS_REST_TOKEN: upstash.token,
      ...(qstash
        ? {
            QSTASH_URL: qstash.url,
            QSTASH_TOKEN: qstashKeys.token,
            QSTASH_CURRENT_SIGNING_KEY: qstashKeys.currentSigningKey,
            QSTASH_NEXT_SIGNING_KEY: qstashKeys.nextSigningKey,
          }
        : {}),
      ...options.vars,
    };
    let bindings = options.bindings ? options.bindings(standard, { ...build.vars }) : standard;
    const workerOptions = (b: Record<string, string>): MiniflareOptions => ({
      ...build.miniflareOptions,
      bindings: b,
      ...(options.fetchMock ? { fetchMock: options.fetchMock } : {}),
      ...(options.stdio ? { handleRuntimeStdio: options.stdio } : {}),
      ...(options.inspectorPort !== undefined ? { inspectorPort: options.inspectorPort } : {}),
      ...(options.directSocket ? { unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }] } : {}),
      host: options.host ?? "127.0.0.1",
      port: options.port ?? 0,
    });
    const mf = new Miniflare(workerOptions(bindings));
    cleanup.push(() => mf.dispose());
    const url = (await mf.ready).origin;
    const directUrl = options.directSocket ? (await mf.unsafeGetDirectURL()).origin : undefined;

    return {
      mf,
      url,
      directUrl,
      outDir,
      build,
      get miniflareOptions() {
        return workerOptions(bindings);
      },
      get bindings() {
        return bindings;
      },
      neon,
      upstash,
      s3,
      qstash,
      async scheduled() {
        const worker = await mf.getWorker();
        return (await worker.scheduled({ cron: "* * * * *", scheduledTime: new Date() })).outcome;
      },
      async setBindings(next) {
        bindings = next;
        await mf.setOptions(workerOptions(next));
      },
      dispose,
    };
  } catch (err) {
    await dispose();
    throw err;
  }
}

export interface WorkerBuild {
  /** wrangler.toml's [vars]. */
  vars: Record<string, string>;
  miniflareOptions: MiniflareOptions;
  /** Every module wrangler uploads (worker.js, then the .wasm and .ttf modules), as Miniflare gets them. */
  modules: Array<{ type: "ESModule" | "CompiledWasm" | "Data"; path: string; contents: string | Uint8Array }>;
  /** wrangler's own size line, e.g. "8271.16 KiB / gzip: 2736.82 KiB" (its `Total Upload:`). */
  totalUpload: string;
}

/** `wrangler deploy --dry-run` into outDir, and the Miniflare options that run the result. */
export async function buildWorker(outDir: string): Promise<WorkerBuild> {
  const { stdout } = await run(join(ROOT, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", outDir], {
    cwd: ROOT,
    // No banner: it asks the npm registry whether a newer wrangler exists; the build needs nothing but loopback.
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true", CI: "true", NO_COLOR: "1" },
  });
  // Imported here: wrangler's module registers SIGINT/SIGTERM handlers that exit, which dev:edge then takes over.
  const { unstable_readConfig } = await import("wrangler");
  const config = unstable_readConfig({ config: join(ROOT, "wrangler.toml") });
  // The modules are listed rather than discovered: Miniflare's discovery refuses any computed dynamic
  // import, and @upstash/qstash's (never-called) local dev-server code has some.
  const files = await readdir(outDir);
  const load = (type: "CompiledWasm" | "Data") => (f: string) => readFile(join(outDir, f)).then((contents) => ({ type, path: join(outDir, f), contents }));
  const modules = [
    { type: "ESModule" as const, path: join(outDir, "worker.js"), contents: await readFile(join(outDir, "worker.js"), "utf8") },
    ...(await Promise.all(files.filter((f) => f.endsWith(".wasm")).map(load("CompiledWasm")))),
    // Area B's fonts: wrangler's Data rule makes each .ttf a module the text engine imports on first use.
    ...(await Promise.all(files.filter((f) => f.endsWith(".ttf")).map(load("Data")))),
  ];
  return {
    vars: { ...(config.vars as Record<string, string>) },
    modules,
    totalUpload: /Total Upload: (.+)/.exec(stdout)?.[1]?.trim() ?? "(wrangler printed no Total Upload line)",
    miniflareOptions: {
      modulesRoot: outDir,
      modules,
      compatibilityDate: config.compatibility_date,
      compatibilityFlags: config.compatibility_flags,
      // Miniflare otherwise sends every outbound fetch through a Worker of its own that drops CF-Connecting-IP,
      // as Cloudflare does outside the Worker. No subrequest of ours carries that header, and that Worker's CPU
      // (about a third of `GET /`'s per subrequest) is not the Worker's, which `bench/edge.ts` measures.
      stripCfConnectingIp: false,
    },
  };
}
