/**
 * Area C test helpers: the real app on embedded services with a clock tests can move forward, counters on the
 * storage and queue ports (to prove a replay uploads and queues nothing), accounts seeded straight into
 * social_accounts (before the sandbox exists), and shortcuts for the post and media requests.
 *
 * @example
 * const h = await createSocialTestApp();
 * const { userId, apiKey } = await h.createUser();
 * const page = await h.seedAccount(userId, "pageplatform");
 * const res = await h.createPost(apiKey, { accountIds: page, caption: "hi" });
 */
import { and, eq } from "drizzle-orm";
import { deliveries, socialAccounts } from "../../db/schema";
import type { Clock, Queue, Storage } from "../../src/services";
import { createTestApp, type TestAppOptions } from "./harness";

export const SOCIAL = "/api/v1/social";

/** Real time plus an offset the test can advance; `now()` never goes backwards. */
export interface TestClock extends Clock {
  advance(ms: number): void;
}

export function testClock(): TestClock {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance: (ms) => void (offset += ms),
  };
}

export interface QueueLog {
  enqueued: Array<{ deliveryId: string; notBefore?: Date; jobId: string | null }>;
  cancelled: string[];
}

/** A queue that hands out job ids like QStash would (or null like the poller) and records every call. */
export function recordingQueue(log: QueueLog, kind: "qstash" | "poller" = "qstash"): Queue {
  let n = 0;
  return {
    kind,
    async enqueue(deliveryId, notBefore) {
      const jobId = kind === "qstash" ? `job-${++n}` : null;
      log.enqueued.push({ deliveryId, notBefore, jobId });
      return jobId;
    },
    async enqueueWebhook() {
      return null;
    },
    async cancel(jobId) {
      log.cancelled.push(jobId);
    },
  };
}

export interface SocialTestOptions extends TestAppOptions {
  queueKind?: "qstash" | "poller";
}

export async function createSocialTestApp(options: SocialTestOptions = {}) {
  const clock = testClock();
  const queueLog: QueueLog = { enqueued: [], cancelled: [] };
  const h = await createTestApp({
    ...options,
    env: { RATE_LIMIT_SOCIAL_WRITE: "1000000", RATE_LIMIT_SOCIAL_READ: "1000000", ...options.env },
    overrides: { clock, queue: recordingQueue(queueLog, options.queueKind), ...options.overrides },
  });

  // Count storage writes on the real storage twin (the app holds this same services object).
  const inner: Storage = h.services.storage;
  const puts: string[] = [];
  h.services.storage = {
    ...inner,
    put: (key, bytes, type) => {
      puts.push(key);
      return inner.put(key, bytes, type);
    },
  };

  let accounts = 0;
  const request = (path: string, init?: RequestInit) => h.app.request(`${SOCIAL}${path}`, init);

  return {
    ...h,
    clock,
    queueLog,
    puts,
    request,

    /** Inserts a connected account; returns its id `<platform>:<number>`. */
    async seedAccount(
      userId: string,
      platform: "pageplatform" | "photoplatform",
      options: { platformAccountId?: string; name?: string; tokenStatus?: string } = {},
    ): Promise<string> {
      const platformAccountId = options.platformAccountId ?? String(1_000_000 + ++accounts);
      const id = `${platform}:${platformAccountId}`;
      await h.db.insert(socialAccounts).values({
        id,
        userId,
        platform,
        platformAccountId,
        name: options.name ?? `${platform} ${platformAccountId}`,
        tokenCiphertext: await h.services.tokens.encrypt("x"),
        tokenStatus: options.tokenStatus ?? "active",
      });
      return id;
    },

    createPost(apiKey: string, body: unknown, options: { key?: string | null; headers?: Record<string, string> } = {}) {
      const key = options.key === undefined ? crypto.randomUUID() : options.key;
      const headers = h.json(apiKey, { ...(key === null ? {} : { "Idempotency-Key": key }), ...options.headers });
      return request("/posts", { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });
    },

    createMedia(apiKey: string, body: unknown) {
      return request("/media", { method: "POST", headers: h.json(apiKey), body: JSON.stringify(body) });
    },

    get(apiKey: string, path: string) {
      return request(path, { headers: h.auth(apiKey) });
    },

    cancel(apiKey: string, postId: string) {
      return request(`/posts/${postId}`, { method: "DELETE", headers: h.auth(apiKey) });
    },

    /** Moves one target of a post to a state, as the delivery engine would. */
    async setDelivery(postId: string, accountId: string, patch: Partial<typeof deliveries.$inferInsert>) {
      await h.db
        .update(deliveries)
        .set(patch)
        .where(and(eq(deliveries.postId, postId), eq(deliveries.accountId, accountId)));
    },
  };
}

export type SocialTestApp = Awaited<ReturnType<typeof createSocialTestApp>>;

/** A body as JSON, typed loosely for assertions. */
export async function body(res: Response): Promise<any> {
  return res.json();
}

/** `data:<mime>;base64,<...>` of some bytes. */
export function dataUri(bytes: Uint8Array, mime = "image/png"): string {
  return `data:${mime};base64,${Buffer.from(bytes).toString("base64")}`;
}
