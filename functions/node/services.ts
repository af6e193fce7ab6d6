/**
 * Builds the Services for Node from a Config: each port gets its edge twin when its variables are set and
 * its embedded twin otherwise. Used by functions/node.ts and by the tests' harness.
 *
 * @example
 * const { services, close } = await buildNodeServices(parseConfig(process.env));
 */
import { mkdir, readFile, writeFile, chmod } from "node:fs/promises";
import { join } from "node:path";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import { deflate } from "node:zlib";
import { configureZxing } from "../../src/qr/zxing-loader";
import { configureTextEngine, isTextEngineConfigured } from "../../src/photo/text/engine";
import type { Config } from "../../src/config";
import type { Logger, Services, Storage } from "../../src/services";
import { openNodeDb } from "../../db/node";
import type { DbHandle } from "../../db/client";
import { JsonLogger } from "../../src/adapters/logger";
import { MemoryRateLimiter } from "../../src/adapters/rate-limit/memory";
import { UpstashRateLimiter } from "../../src/adapters/rate-limit/upstash";
import { PollerQueue } from "../../src/adapters/queue/poller";
import { AesGcmTokenCipher, generateTokenKey } from "../../src/adapters/token-cipher";
import { MemoryStorage } from "../../src/adapters/storage/memory";
import { FsStorage } from "./fs-storage";
import { DeferredSet } from "./deferred";
import { createNodeFetcher } from "./safe-fetch";
import { createGenerator } from "../../src/photo/providers";
import { configureSceneDeflate } from "../../src/photo/local/png";

export interface NodeServicesOptions {
  /** Keep everything in memory (tests): PGlite in memory, memory storage, a throwaway token key. */
  inMemory?: boolean;
  logger?: Logger;
  /** Test-only: origins the safe fetcher may reach although they are loopback. */
  fetcherTestAllow?: { origins: string[]; ca?: string };
  overrides?: Partial<Services>;
}

export interface NodeServices {
  services: Services;
  db: DbHandle;
  drain(): Promise<void>;
  close(): Promise<void>;
}

export async function buildNodeServices(config: Config, options: NodeServicesOptions = {}): Promise<NodeServices> {
  // ZXing's reader .wasm comes from the package on disk, compiled on the first decode (never from a CDN).
  configureZxing(() => readFile(createRequire(import.meta.url).resolve("zxing-wasm/reader/zxing_reader.wasm")));
  configureNodePhoto();
  const log = options.logger ?? JsonLogger(config.logLevel);
  if (!options.inMemory) await mkdir(config.dataDir, { recursive: true, mode: 0o700 });

  const db = await openNodeDb({
    url: config.databaseUrl,
    pgliteDir: options.inMemory ? undefined : join(config.dataDir, "pg"),
  });

  const storage: Storage = config.s3
    ? (await import("../../src/adapters/storage/s3")).S3Storage(config.s3)
    : options.inMemory
      ? MemoryStorage(config.publicBaseUrl)
      : FsStorage(join(config.dataDir, "files"), config.publicBaseUrl);

  const tokenKey = config.tokenEncryptionKey ?? (options.inMemory ? generateTokenKey() : await embeddedSecret(config.dataDir, "token-key", generateTokenKey));
  const deferred = DeferredSet(log);

  const services: Services = {
    config,
    db: db.db,
    rateLimiter: config.upstash ? UpstashRateLimiter(config.upstash) : MemoryRateLimiter(),
    queue: config.qstash ? (await import("../../src/adapters/queue/qstash")).QStashQueue(config) : PollerQueue(),
    storage,
    fetcher: createNodeFetcher(options.fetcherTestAllow ? { testAllow: options.fetcherTestAllow } : {}),
    clock: { now: () => new Date() },
    log,
    tokens: AesGcmTokenCipher(tokenKey),
    defer: deferred.defer,
    platformFetch: (input, init) => fetch(input, init),
    generator: createGenerator(config, { storage, log }),
    ...options.overrides,
  };

  return {
    services,
    db,
    drain: () => deferred.drain(),
    async close() {
      await deferred.drain();
      await db.close();
    },
  };
}

/** A secret generated once into DATA_DIR (mode 600) and read back on every later start. */
export async function embeddedSecret(dataDir: string, name: string, generate: () => string): Promise<string> {
  const path = join(dataDir, name);
  try {
    return (await readFile(path, "utf8")).trim();
  } catch {
    const value = generate();
    await writeFile(path, `${value}\n`, { mode: 0o600, flag: "wx" }).catch(async (err) => {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    });
    await chmod(path, 0o600);
    return (await readFile(path, "utf8")).trim();
  }
}

const deflateAsync = promisify(deflate);

/**
 * Area B on Node: the text engine (below) and the scene PNGs' deflater, zlib on the thread pool at level 3
 * (see src/photo/local/png.ts). Safe to call more than once.
 *
 * @example
 * configureNodePhoto(); // then a script or a bench can generate scenes as the server does
 */
export function configureNodePhoto(): void {
  configureNodeTextEngine();
  configureSceneDeflate((raw) => deflateAsync(raw, { level: 3 }));
}

/**
 * Area B's text engine on Node: HarfBuzz's wasm and the four Noto TTFs, read from the packages on the first
 * text drawn (once per process: a second harness keeps the fonts already parsed); resvg for rasterizeSvg,
 * imported on use. Safe to call more than once.
 *
 * @example
 * configureNodeTextEngine(); // then drawText(...) works in a script or a bench
 */
export function configureNodeTextEngine(): void {
  if (isTextEngineConfigured()) return;
  const resolvePackage = createRequire(import.meta.url).resolve;
  const packageFile = (path: string) => () => readFile(resolvePackage(path));
  configureTextEngine({
    harfbuzzWasm: packageFile("harfbuzzjs/dist/harfbuzz.wasm"),
    resvg: () => import("@cf-wasm/resvg"),
    fonts: {
      "sans-400": packageFile("@expo-google-fonts/noto-sans/400Regular/NotoSans_400Regular.ttf"),
      "sans-700": packageFile("@expo-google-fonts/noto-sans/700Bold/NotoSans_700Bold.ttf"),
      "devanagari-400": packageFile("@expo-google-fonts/noto-sans-devanagari/400Regular/NotoSansDevanagari_400Regular.ttf"),
      "devanagari-700": packageFile("@expo-google-fonts/noto-sans-devanagari/700Bold/NotoSansDevanagari_700Bold.ttf"),
    },
  });
}
