/**
 * Seeds for engine tests on the in-process harness: a user, an account whose token is encrypted like a
 * connected one, posts and their deliveries written straight to the tables (what POST /posts commits).
 */
import { eq } from "drizzle-orm";
import { deliveries, posts, socialAccounts, type PostImage } from "../../../db/schema";
import { createTestApp, type TestAppOptions } from "../../helpers/harness";
import type { Clock, Queue } from "../../../src/services";

export interface MovableClock extends Clock {
  advance(ms: number): void;
}

export function movableClock(): MovableClock {
  let offset = 0;
  return { now: () => new Date(Date.now() + offset), advance: (ms) => void (offset += ms) };
}

export async function engineApp(graphBase: string, options: TestAppOptions & { queue?: Queue } = {}) {
  const clock = movableClock();
  const h = await createTestApp({
    ...options,
    env: { GRAPH_API_BASE: graphBase, META_APP_ID: "app", META_APP_SECRET: "secret", ...options.env },
    overrides: { clock, ...(options.queue ? { queue: options.queue } : {}), ...options.overrides },
  });
  const { userId } = await h.createUser();
  const db = h.services.db;

  async function account(platform: "pageplatform" | "photoplatform", platformAccountId = "1000", token = "tok-123") {
    const id = `${platform}:${platformAccountId}`;
    await db.insert(socialAccounts).values({ id, userId, platform, platformAccountId, name: id, tokenCiphertext: await h.services.tokens.encrypt(token) });
    return id;
  }

  async function post(accountIds: string[], fields: { caption?: string; hashtags?: string[]; images?: PostImage[]; dueAt?: Date; createdAt?: Date } = {}) {
    const now = clock.now();
    const [row] = await db
      .insert(posts)
      .values({
        userId,
        caption: fields.caption ?? "Hello",
        hashtags: fields.hashtags ?? ["tag"],
        images: fields.images ?? [],
        createdAt: fields.createdAt ?? now,
      })
      .returning();
    const rows = await db
      .insert(deliveries)
      .values(
        accountIds.map((accountId) => ({
          postId: row!.id,
          userId,
          accountId,
          platform: accountId.split(":")[0]!,
          nextAttemptAt: fields.dueAt ?? now,
          createdAt: fields.createdAt ?? now,
        })),
      )
      .returning();
    return { postId: row!.id, deliveryIds: rows.map((r) => r.id) };
  }

  async function delivery(id: string) {
    const [row] = await db.select().from(deliveries).where(eq(deliveries.id, id));
    return row!;
  }

  async function accountRow(id: string) {
    const [row] = await db.select().from(socialAccounts).where(eq(socialAccounts.id, id));
    return row!;
  }

  return { ...h, clock, userId, account, post, delivery, accountRow };
}
