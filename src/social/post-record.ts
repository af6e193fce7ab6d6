/**
 * The post record (DESIGN.md "post record fields") and the post-level status, derived from the targets in SQL
 * so that a status filter, `total` and paging agree with what the records show.
 *
 * Derived status, first match wins:
 *   publishing           a target is being published right now
 *   scheduled            targets outstanding, none attempted yet, scheduledFor still ahead
 *   queued               targets outstanding (pending, or failed and awaiting a retry)
 *   published            every target published
 *   partially_published  all targets final, some published (the rest failed or were cancelled)
 *   cancelled            all final, none published, some cancelled
 *   failed               all final, all failed
 *
 * @example
 * const [post] = await loadPostRecords(db, userId, [postId], clock.now());
 */
import { and, asc, desc, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { deliveries, posts } from "../../db/schema";
import type { Platform } from "./accounts";
import type { PostRecord, PostStatus } from "./schemas";

/**
 * SQL for the derived status of the `posts` row in the enclosing query. Written with explicit qualifiers:
 * Drizzle leaves columns unqualified in single-table selects, and inside this subquery an unqualified `id`
 * would mean the delivery's.
 */
export function postStatusSql(now: Date): SQL<PostStatus> {
  return sql<PostStatus>`(select case
      when bool_or(d.status = 'publishing') then 'publishing'
      when bool_or(d.status = 'pending' or (d.status = 'failed' and d.next_attempt_at is not null)) then
        case when "posts"."scheduled_for" > ${now.toISOString()}::timestamptz and bool_and(d.attempts = 0)
          then 'scheduled' else 'queued' end
      when bool_and(d.status = 'published') then 'published'
      when bool_or(d.status = 'published') then 'partially_published'
      when bool_or(d.status = 'cancelled') then 'cancelled'
      else 'failed' end
    from "deliveries" d where d.post_id = "posts"."id")`;
}

type PostRow = typeof posts.$inferSelect;
type DeliveryRow = typeof deliveries.$inferSelect;

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function toPostRecord(post: PostRow, status: PostStatus, targets: DeliveryRow[]): PostRecord {
  return {
    id: post.id,
    status,
    caption: post.caption,
    hashtags: post.hashtags,
    imageUrls: post.images.map((i) => i.url),
    images: post.images.map((i) => ({ url: i.url, width: i.width, height: i.height, mediaId: i.mediaId ?? null })),
    scheduledFor: iso(post.scheduledFor),
    createdAt: post.createdAt.toISOString(),
    updatedAt: post.updatedAt.toISOString(),
    cancelledAt: iso(post.cancelledAt),
    accounts: targets.map((d) => ({
      accountId: d.accountId,
      platform: d.platform as Platform,
      status: d.status as PostRecord["accounts"][number]["status"],
      attempts: d.attempts,
      nextAttemptAt: iso(d.nextAttemptAt),
      jobId: d.jobId,
      providerPostId: d.providerPostId,
      publishedAt: iso(d.publishedAt),
      error: d.errorCode ? { code: d.errorCode, message: d.errorMessage ?? "" } : null,
    })),
  };
}

/** Records of the given posts of `userId`, in the order of `ids`; ids of others or of no post are skipped. */
export async function loadPostRecords(db: Db, userId: string, ids: string[], now: Date): Promise<PostRecord[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .select({ post: posts, status: postStatusSql(now) })
    .from(posts)
    .where(and(eq(posts.userId, userId), inArray(posts.id, ids)));
  const byId = new Map(rows.map((r) => [r.post.id, r]));
  const targets = await loadTargets(db, rows.map((r) => r.post.id));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    return row ? [toPostRecord(row.post, row.status, targets.get(id) ?? [])] : [];
  });
}

async function loadTargets(db: Db, postIds: string[]): Promise<Map<string, DeliveryRow[]>> {
  const out = new Map<string, DeliveryRow[]>();
  if (postIds.length === 0) return out;
  const rows = await db
    .select()
    .from(deliveries)
    .where(inArray(deliveries.postId, postIds))
    .orderBy(asc(deliveries.postId), asc(deliveries.accountId));
  for (const row of rows) {
    const list = out.get(row.postId) ?? [];
    list.push(row);
    out.set(row.postId, list);
  }
  return out;
}

export interface ListFilter {
  status?: PostStatus;
  platform?: Platform;
  /** Inclusive lower bound. */
  from?: Date;
  /** Upper bound: inclusive, or exclusive when `toExclusive` (a whole day given as a date). */
  to?: Date;
  toExclusive?: boolean;
  limit: number;
  offset: number;
}

/** One page of a user's posts, newest first, with the total matching the same filters. */
export async function listPostRecords(db: Db, userId: string, filter: ListFilter, now: Date) {
  const status = postStatusSql(now);
  const effectiveDate = sql`coalesce("posts"."scheduled_for", "posts"."created_at")`;
  const conditions: SQL[] = [eq(posts.userId, userId)];
  if (filter.status) conditions.push(sql`${status} = ${filter.status}`);
  if (filter.platform) {
    conditions.push(sql`exists (select 1 from "deliveries" d where d.post_id = "posts"."id" and d.platform = ${filter.platform})`);
  }
  if (filter.from) conditions.push(sql`${effectiveDate} >= ${filter.from.toISOString()}::timestamptz`);
  if (filter.to) {
    const bound = sql`${filter.to.toISOString()}::timestamptz`;
    conditions.push(filter.toExclusive ? sql`${effectiveDate} < ${bound}` : sql`${effectiveDate} <= ${bound}`);
  }
  const where = and(...conditions);

  const [counted] = await db.select({ total: sql<number>`count(*)::int` }).from(posts).where(where);
  const rows = await db
    .select({ post: posts, status })
    .from(posts)
    .where(where)
    .orderBy(desc(posts.createdAt), desc(posts.id))
    .limit(filter.limit)
    .offset(filter.offset);
  const targets = await loadTargets(db, rows.map((r) => r.post.id));
  const total = counted?.total ?? 0;
  return {
    items: rows.map((r) => toPostRecord(r.post, r.status, targets.get(r.post.id) ?? [])),
    total,
    hasMore: filter.offset + rows.length < total,
    limit: filter.limit,
    offset: filter.offset,
  };
}
