/**
 * A message's body: `{"type", "timestamp", "data"}` with `data` the resource as the API answers it now (the
 * post record of area C, the account as listed, the job of area B), read through those areas' own functions.
 * Null when the resource no longer exists.
 */
import { and, eq } from "drizzle-orm";
import { socialAccounts, type webhookMessages } from "../../db/schema";
import { loadPostRecords } from "../social/post-record";
import type { PostRecord } from "../social/schemas";
import { toAccountRecord } from "../social/accounts";
import { jobStatus } from "../photo/service";
import { ApiError } from "../http/errors";
import { Base64Value } from "../http/streamed-json";
import { base64FromBytes } from "../lib/encoding";
import type { Services } from "../services";
import type { WebhookEventType } from "./events";

type MessageRow = typeof webhookMessages.$inferSelect;

export async function buildPayload(services: Services, message: MessageRow): Promise<string | null> {
  return (await buildPayloads(services, [message])).get(message.id) ?? null;
}

const POST_EVENT = /^post\./;

/**
 * The bodies of several messages, by message id: the posts of post events read in one statement per user
 * (a burst's messages are made together), the others one by one.
 */
export async function buildPayloads(services: Services, messages: readonly MessageRow[]): Promise<Map<string, string | null>> {
  const posts = new Map<string, PostRecord>();
  const byUser = new Map<string, Set<string>>();
  for (const m of messages) if (POST_EVENT.test(m.type)) (byUser.get(m.userId) ?? byUser.set(m.userId, new Set()).get(m.userId)!).add(m.subjectId);
  await Promise.all(
    [...byUser].map(async ([userId, ids]) => {
      for (const post of await loadPostRecords(services.db, userId, [...ids], services.clock.now())) posts.set(post.id, post);
    }),
  );
  const out = new Map<string, string | null>();
  await Promise.all(
    messages.map(async (m) => {
      const data = POST_EVENT.test(m.type) ? postData(m, posts.get(m.subjectId.toLowerCase())) : await dataOf(services, m);
      // A job's PNG given as a data URI is a Base64Value (written from its bytes when the API streams it).
      const body =
        data === null
          ? null
          : JSON.stringify({ type: m.type, timestamp: m.createdAt.toISOString(), data }, (_key, value: unknown) =>
              value instanceof Base64Value ? value.prefix + base64FromBytes(value.bytes) : value,
            );
      out.set(m.id, body);
    }),
  );
  return out;
}

/** A post event's data: the post, or for a target event the target and the post; null when gone. */
function postData(message: MessageRow, post: PostRecord | undefined): unknown {
  if (!post) return null;
  if (!message.type.startsWith("post.target.")) return post;
  const target = post.accounts.find((a) => a.accountId === message.accountId);
  return target ? { target, post } : null;
}

/** The data of an event that is not a post's (those are read together: `postData`). */
async function dataOf(services: Services, message: MessageRow): Promise<unknown> {
  const { db } = services;
  const type = message.type as WebhookEventType;
  switch (type) {
    case "account.reconnect_required": {
      const [row] = await db
        .select()
        .from(socialAccounts)
        .where(and(eq(socialAccounts.userId, message.userId), eq(socialAccounts.id, message.subjectId)));
      return row ? toAccountRecord(row) : null;
    }
    case "photo.job.succeeded":
    case "photo.job.failed":
      try {
        return await jobStatus(services, message.userId, message.subjectId);
      } catch (err) {
        // The job is gone (404), or its image was deleted from the gallery (410 ORIGINAL_REMOVED).
        if (err instanceof ApiError && (err.status === 404 || err.status === 410)) return null;
        throw err;
      }
    case "webhook.test":
      return { endpointId: message.subjectId, message: "A test message from Shopkit: the endpoint receives and verifies webhooks." };
    default:
      return null;
  }
}
