/**
 * Builds the Services for Node from a Config: each port gets its edge twin when its variables are set and
 * its embedded twin otherwise. Used by functions/node.ts and by the tests' harness.
 *
 * @example
 * const { services, close } = await buildNodeServices(parseConfig(process.env));
 */
import { readFile, writeFile, chmod } from "node:fs/promises";
import { join } from "node:path";
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
import { prepareDataDir } from "./data-dir";
import { DeferredSet } from "./deferred";
import { stdoutLine } from "./log-sink";
import { createNodeFetcher } from "./safe-fetch";
import { sharedDeadlines } from "./deadlines";
import { webhookKicker } from "../../src/webhooks/dispatch";
import { createGenerator } from "../../src/photo/providers";
import { configureNodeEngines } from "./engines";
import { configureBodySource } from "../../src/http/inline-images";
import { hungUp, untouchedBody } from "./drain-body";
import { configureClientHungUp } from "../../src/http/errors";
import { NodeHeavyWork } from "./heavy-pool";
import { ApiKeyCache } from "../../src/lib/key-cache";
import { NODE_DECODE_LIMITS } from "../../src/images/limits";
import { withSandboxApp } from "../../src/social/sandbox/app-secret";

export interface NodeServicesOptions {
  /** Keep everything in memory (tests): PGlite in memory, memory storage, a throwaway token key. */
  inMemory?: boolean;
  /** Apply pending migrations when opening the database (default true; the delivery thread's services leave it to the server's). */
  migrate?: boolean;
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
  configureNodeEngines();
  configureBodySource(untouchedBody);
  configureClientHungUp(hungUp);
  const log = options.logger ?? JsonLogger(config.logLevel, stdoutLine);
  if (!options.inMemory) await prepareDataDir(config.dataDir);

  const db = await openNodeDb({
    url: config.databaseUrl,
    pgliteDir: options.inMemory ? undefined : join(config.dataDir, "pg"),
    migrate: options.migrate,
  });

  const storage: Storage = config.s3
    ? (await import("../../src/adapters/storage/s3")).S3Storage(config.s3)
    : options.inMemory
      ? MemoryStorage(config.publicBaseUrl)
      : FsStorage(join(config.dataDir, "files"), config.publicBaseUrl);

  const tokenKey = config.tokenEncryptionKey ?? (options.inMemory ? generateTokenKey() : await embeddedSecret(config.dataDir, "token-key", generateTokenKey));
  const deferred = DeferredSet(log);

  const services: Services = {
    // With the sandbox on, its app's secret comes from the token key, so this process, its delivery thread and the hub agree.
    config: await withSandboxApp(config, tokenKey),
    db: db.db,
    rateLimiter: config.upstash ? UpstashRateLimiter(config.upstash) : MemoryRateLimiter(),
    queue: config.qstash ? (await import("../../src/adapters/queue/qstash")).QStashQueue(config) : PollerQueue(),
    storage,
    fetcher: createNodeFetcher({
      allowLoopbackWebhooks: config.webhooks.allowLoopback,
      ...(options.fetcherTestAllow ? { testAllow: options.fetcherTestAllow } : {}),
    }),
    clock: { now: () => new Date() },
    log,
    tokens: AesGcmTokenCipher(tokenKey),
    defer: deferred.defer,
    platformFetch: (input, init) => fetch(input, init),
    platformDeadline: sharedDeadlines(),
    generator: createGenerator(config, { storage, log }),
    heavy: options.overrides?.heavy ?? NodeHeavyWork(config.heavy, log),
    apiKeyCache: ApiKeyCache(),
    // Images decoded whole (WebP, interlaced PNG, some JPEGs) up to 8 MP, so a tiny file cannot claim hundreds of MB.
    imageLimits: NODE_DECODE_LIMITS,
    ...options.overrides,
  };

  services.kickWebhooks ??= webhookKicker(services);
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
