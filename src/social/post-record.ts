/**
 * The post record (the fields a post answers with) and the post-level status. The status is stored on the post
 * (`posts.status`) and kept by database triggers (migration 0004) from the targets, whoever writes them, so a
 * status filter, `total` and paging read an index instead of every post's deliveries.
 *
 * Status, first match wins:
 *   publishing           a target is being published right now
 *   scheduled            targets outstanding, none attempted yet, scheduledFor still ahead
 *   queued               targets outstanding (pending, or failed and awaiting a retry)
 *   published            every target published
 *   partially_published  all targets final, some published (the rest failed or were cancelled)
 *   cancelled            all final, none published, some cancelled
 *   failed               all final, all failed
 * "scheduledFor still ahead" changes with the clock, not with a write: the stored `scheduled` means
 * "outstanding, none attempted, has a scheduledFor" and reads as `queued` once that time has passed.
 *
 * `total` comes from per-user counts by stored status (`post_status_counts`, signed deltas the triggers
 * append; a reader folds a user's rows into one per status when they pile up). Filters the counts do not
 * split by (platform, dates) count the matching posts instead.
 *
 * @example
 * const [post] = await loadPostRecords(db, userId, [postId], clock.now());
 */
import { and, desc, eq, sql, type Placeholder, type SQL, type SQLWrapper } from "drizzle-orm";
import type { Db } from "../../db/client";
import { namesStatements, prepared } from "../../db/prepared";
import { deliveries, postStatusCounts, posts } from "../../db/schema";
import type { Platform } from "./accounts";
import { uuidArray } from "../lib/encoding";
import { LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, type PostRecord, type PostStatus } from "./schemas";

/** A user's count rows beyond which a read folds them into one row per status. */
const FOLD_COUNTS_AT = 64;

/** An instant as a timestamptz parameter: a time, or a placeholder a prepared statement fills with one. */
const instant = (at: Date | Placeholder) => sql`${at instanceof Date ? at.toISOString() : at}::timestamptz`;

/** The status as shown, from the stored one and the clock `at` (SQL, for the `posts` row of the enclosing query). */
function postStatusSql(at: SQL): SQL<PostStatus> {
  return sql<PostStatus>`(case when ${posts.status} = 'scheduled' and not (${posts.scheduledFor} > ${at}) then 'queued' else ${posts.status} end)`;
}

/** The same in code, for a post this request has just written. */
export function shownStatus(stored: PostStatus, scheduledFor: Date | null, now: Date): PostStatus {
  return stored === "scheduled" && !(scheduledFor && scheduledFor.getTime() > now.getTime()) ? "queued" : stored;
}

/** Posts whose shown status is `status` at `at`. */
function statusIs(status: PostStatus, at: SQL): SQL {
  if (status === "scheduled") return sql`${posts.status} = 'scheduled' and ${posts.scheduledFor} > ${at}`;
  if (status === "queued") {
    return sql`${posts.status} in ('queued', 'scheduled') and (${posts.status} = 'queued' or not (${posts.scheduledFor} > ${at}))`;
  }
  return eq(posts.status, status);
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
  const byId = new Map((await recordsOf(db, userId, ids, now)).map((json) => JSON.parse(json) as PostRecord).map((r) => [r.id, r]));
  // The database writes ids in lower case; a uuid may be given in either.
  return ids.flatMap((id) => byId.get(id.toLowerCase()) ?? []);
}

/** The record of one post of `userId` (a uuid) as JSON text, as the database writes it; undefined when there is none. */
export async function loadPostRecordJson(db: Db, userId: string, id: string, now: Date): Promise<string | undefined> {
  const [json] = await recordsOf(db, userId, [id], now);
  return json;
}

/**
 * The records (JSON text) of the given posts of `userId` (uuids), newest first; with `status`, only those whose
 * shown status is still that one at `now`.
 */
async function recordsOf(db: Db, userId: string, ids: readonly string[], now: Date, status?: PostStatus): Promise<string[]> {
  const statement = prepared(db, `post_records_${status ?? "any"}`, () => recordsStatement(db, status));
  const rows = await statement.execute({ userId, ids: uuidArray(ids), now: now.toISOString() });
  return rows.map((r) => r.json);
}

/**
 * A post's record as JSON text is written by concatenation, not by `json_build_object`: PostgreSQL's
 * `json_build_object` looks up how to write each argument's type on every call, several times the cost of
 * concatenating the same text, and a page of 50 posts builds about 200 objects, so concatenation takes a
 * large share off the page's database CPU (docs/performance.md). Every value goes through one of these, which write JSON's `null`
 * for SQL's NULL (concatenating a NULL would null the whole record).
 */
/** A text, uuid or number column as JSON (strings escaped by `to_json`). */
const jsonValue = (value: SQLWrapper) => sql`coalesce(to_json(${value})::text, 'null')`;
/** An instant as JSON: a string as `Date.toISOString` writes it, or null (PostgreSQL keeps microseconds; both truncate to ms). */
const jsonIso = (column: SQLWrapper) => sql`coalesce('"' || to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null')`;
/** A JSON object's text from its keys (plain names, written as they are) and their values' JSON text. */
function jsonObject(fields: Record<string, SQL>): SQL {
  const parts = Object.entries(fields).map(([key, value], i) => sql`${sql.raw(`'${i === 0 ? "{" : ","}"${key}":'`)} || ${value}`);
  return sql`(${sql.join(parts, sql` || `)} || '}')`;
}
/** A JSON array's text of the rows of `from`, each `item`, in `order`; `[]` when there are none. */
const jsonArray = (item: SQL, order: SQL, from: SQL) => sql`coalesce((select '[' || string_agg(${item}, ',' order by ${order}) || ']' ${from}), '[]')`;

/**
 * The record of the `posts` row in scope as JSON text, built by PostgreSQL: the same fields, order and
 * formats as `toPostRecord` (the stored `hashtags` and `images` arrays written as jsonb writes them, with a space
 * after each comma and colon), its targets ordered by account id. A page of 50 posts is 50 short strings for
 * the server to join, instead of 100 wide rows to map into objects, turn into Dates and back, and serialise
 * (most of a list request's time on the Node server; docs/performance.md).
 * Stored images are objects with exactly `url`, `width`, `height` and (when the image came from a media
 * row, as every writer's does) `mediaId`; jsonb writes keys shortest first, which is that order, so the
 * stored array is the record's `images` as it is. An image without `mediaId` gets it as null.
 */
function recordJson(at: SQL): SQL<string> {
  const d = sql.raw("d");
  const image = sql.raw("i");
  const target = targetJson(d);
  const member = (key: string) => sql`coalesce((${image}->${sql.raw(`'${key}'`)})::text, 'null')`;
  const eachImage = jsonObject({ url: member("url"), width: member("width"), height: member("height"), mediaId: member("mediaId") });
  const images = sql`case when ${posts.images} @? '$[*] ? (!exists(@.mediaId))'
      then ${jsonArray(eachImage, sql`n`, sql`from jsonb_array_elements(${posts.images}) with ordinality as e(${image}, n)`)}
      else ${posts.images}::text end`;
  return sql<string>`${jsonObject({
    id: jsonValue(posts.id),
    status: jsonValue(postStatusSql(at)),
    caption: jsonValue(posts.caption),
    hashtags: sql`${posts.hashtags}::text`,
    imageUrls: sql`jsonb_path_query_array(${posts.images}, '$[*].url')::text`,
    images,
    scheduledFor: jsonIso(posts.scheduledFor),
    createdAt: jsonIso(posts.createdAt),
    updatedAt: jsonIso(posts.updatedAt),
    cancelledAt: jsonIso(posts.cancelledAt),
    accounts: jsonArray(target, sql`${d}.account_id`, sql`from ${deliveries} ${d} where ${d}.post_id = ${posts.id}`),
  })}`;
}

/** A target (`accounts` item) of the record as JSON text, from the `deliveries` row aliased `d`. */
function targetJson(d: SQL): SQL {
  return jsonObject({
    accountId: jsonValue(sql`${d}.account_id`),
    platform: jsonValue(sql`${d}.platform`),
    status: jsonValue(sql`${d}.status`),
    attempts: jsonValue(sql`${d}.attempts`),
    nextAttemptAt: jsonIso(sql`${d}.next_attempt_at`),
    jobId: jsonValue(sql`${d}.job_id`),
    providerPostId: jsonValue(sql`${d}.provider_post_id`),
    publishedAt: jsonIso(sql`${d}.published_at`),
    error: sql`case when coalesce(${d}.error_code, '') <> '' then ${jsonObject({ code: jsonValue(sql`${d}.error_code`), message: jsonValue(sql`coalesce(${d}.error_message, '')`) })} else 'null' end`,
  });
}

/**
 * A post event's webhook message body as JSON text, built by PostgreSQL for the `webhook_messages` row aliased
 * `m`: `{"type", "timestamp", "data"}` with `data` the post's record (status shown at `at`), or for a target
 * event `{"target", "post"}`; the same JSON as src/webhooks/payloads.ts makes (the stored arrays, `hashtags` and
 * `images`, keep jsonb's spacing after commas and colons, which JSON ignores). NULL
 * when the post or the target no longer exists.
 */
export function postEventBodySql(m: SQL, at: SQL): SQL<string | null> {
  const t = sql.raw("t");
  const record = recordJson(at);
  return sql<string | null>`(select '{"type":' || to_json(${m}.type)::text || ',"timestamp":' || ${jsonIso(sql`${m}.created_at`)} || ',"data":' ||
      case when ${m}.type like 'post.target.%'
        then '{"target":' || (select ${targetJson(t)} from ${deliveries} ${t} where ${t}.post_id = ${posts.id} and ${t}.account_id = ${m}.account_id) || ',"post":' || ${record} || '}'
        else ${record} end || '}'
    from ${posts} where ${posts.id} = ${m}.subject_id::uuid and ${posts.userId} = ${m}.user_id)`;
}

/**
 * The records (JSON text) of a user's posts given as a uuid[] parameter (`ids`), newest first, prepared once per
 * `status`: the ids drive the join, so the plan PostgreSQL keeps is a primary-key lookup per id, whatever the
 * user's history (filtered on `posts` by user and ids instead, the kept plan would read all of a large user's
 * entries in the user index, a cost that grows with the user's posts).
 */
function recordsStatement(db: Db, status?: PostStatus) {
  const at = instant(sql.placeholder("now"));
  const owned = and(eq(posts.id, sql`page.id`), eq(posts.userId, sql.placeholder("userId")), status ? statusIs(status, at) : undefined);
  return db
    .select({ json: recordJson(at) })
    .from(sql`unnest(${sql.placeholder("ids")}::uuid[]) as page(id)`)
    .innerJoin(posts, owned)
    .orderBy(desc(posts.createdAt), desc(posts.id));
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
  const values = { userId, now: now.toISOString(), limit: filter.limit, offset: filter.offset };
  const firstPage = filter.offset === 0 && FIRST_PAGES.has(filter.limit) ? filter.limit : undefined;
  const byCounts = totalByCounts(filter);
  let row: { items: string; count: number; total: number; countRows: number };
  if (!byCounts) row = (await listStatement(db, filter).execute(values))[0]!;
  else if (firstPage || !namesStatements(db)) row = (await preparedList(db, filter.status, firstPage).execute(values))[0]!;
  else {
    // A later page: its ids, then their records, each statement with a plan PostgreSQL keeps or makes cheaply.
    const page = (await prepared(db, `list_page_${filter.status ?? "all"}`, () => pageStatement(db, { status: filter.status })).execute(values))[0]!;
    const ids = page.ids ? page.ids.split(",") : [];
    row = { ...page, items: ids.length ? (await recordsOf(db, userId, ids, now, filter.status)).join(",") : "" };
  }
  if (row.countRows > FOLD_COUNTS_AT) await foldCounts(db, userId);
  return {
    /** The page's records as JSON text, comma-separated: the inside of a JSON array (`recordJson`). */
    items: row.items,
    total: row.total,
    hasMore: filter.offset + row.count < row.total,
    limit: filter.limit,
    offset: filter.offset,
  };
}

/**
 * The statement of a list filtered by status alone (or not at all), prepared once per database handle and
 * status (db/prepared.ts): building a statement this size costs Drizzle about a millisecond. A first page of
 * a common size has a statement of its own (`firstPage`).
 */
const preparedList = (db: Db, status: PostStatus | undefined, firstPage: number | undefined) =>
  prepared(db, `list_posts_${status ?? "all"}${firstPage ? `_first_${firstPage}` : ""}`, () => listStatement(db, { status }, firstPage));

/**
 * The page sizes whose first page (offset 0, by far the most asked for) is its own statement, its LIMIT in
 * the SQL text instead of a parameter. PostgreSQL plans a statement with a LIMIT parameter as if a tenth of
 * the rows were wanted, so its generic plan for this one is a hash join over all the user's posts, and it
 * re-plans the statement on every run instead (a large part of what it costs); with the LIMIT written in,
 * the generic plan is the index scan of the custom one and is reused.
 *
 * Every other page of a list filtered by status alone (or not at all) is read by two prepared statements where
 * the handle names its statements: the page's ids with the total (`pageStatement`), which PostgreSQL may plan
 * again for each run's limit and offset (it decides by cost; a kept plan that sorted all of a large history's
 * posts to skip 5,000 would be far worse), but which is small and cheap to plan; then the records of those
 * ids (`recordsStatement`), whose plan is kept. As one statement, the records' large expression would be
 * planned again whenever the page is, most of such a request's cost (docs/performance.md). The two statements read two snapshots: a post deleted in between,
 * or whose status left the filter in between (the worker publishing it), is left out of the page, which
 * keeps its count. Where statements are not named (the Worker's Neon driver, a round trip per statement),
 * and for platform and date filters (built per request), it stays one statement.
 */
const FIRST_PAGES = new Set([10, LIST_DEFAULT_LIMIT, 25, 50, LIST_MAX_LIMIT]);

/** Whether a list's total comes from the count rows (filtered by status alone, or not at all). */
const totalByCounts = (filter: Omit<ListFilter, "limit" | "offset">) => !(filter.platform || filter.from || filter.to);

/** The parts of a list's statement (`listStatement`, `pageStatement`) for `filter` (see there). */
function listParts(db: Db, filter: Omit<ListFilter, "limit" | "offset">, firstPage?: number) {
  const userId = sql.placeholder("userId");
  const at = instant(sql.placeholder("now"));
  const effectiveDate = sql`coalesce(${posts.scheduledFor}, ${posts.createdAt})`;
  const conditions: SQL[] = [sql`${posts.userId} = ${userId}`];
  if (filter.status) conditions.push(statusIs(filter.status, at));
  if (filter.platform) {
    conditions.push(sql`exists (select 1 from ${deliveries} d where d.post_id = ${posts.id} and d.platform = ${filter.platform})`);
  }
  if (filter.from) conditions.push(sql`${effectiveDate} >= ${instant(filter.from)}`);
  if (filter.to) conditions.push(filter.toExclusive ? sql`${effectiveDate} < ${instant(filter.to)}` : sql`${effectiveDate} <= ${instant(filter.to)}`);
  const where = and(...conditions);
  const byCounts = totalByCounts(filter);
  const counts = db
    .$with("counts", { n: sql<number>`n`, rows: sql<number>`rows` })
    .as(sql`select status, sum(n)::int as n, count(*)::int as rows from ${postStatusCounts} where ${postStatusCounts.userId} = ${userId} group by status`);
  // The total from the count rows, computed once (a CTE read twice is materialised): a page past the end
  // then reads no posts at all, PostgreSQL checking the condition once before the scan (a one-time filter),
  // where the offset would otherwise walk every post of the user.
  const total = db.$with("total", { n: sql<number>`n` }).as(sql`select ${totalFromCounts(userId, filter.status, at)} as n`);
  const offset = firstPage ? sql.raw("0") : sql.placeholder("offset");
  const ids = db
    .select({ id: posts.id })
    .from(posts)
    .where(byCounts ? and(where, sql`${offset} < (select n from total)`) : where)
    .orderBy(desc(posts.createdAt), desc(posts.id));
  // Drizzle binds a number given to `limit` as a parameter, and renders SQL as written (its type says number).
  const page = db
    .$with("page")
    .as(firstPage ? ids.limit(sql.raw(String(firstPage)) as unknown as number) : ids.limit(sql.placeholder("limit")).offset(sql.placeholder("offset")));
  return {
    at,
    page,
    withs: byCounts ? [counts, total] : [],
    total: byCounts ? sql<number>`(select n from total)` : sql<number>`(select count(*)::int from ${posts} where ${where})`,
    countRows: byCounts ? sql<number>`(select coalesce(sum(rows), 0)::int from counts)` : sql<number>`0`,
  };
}

/**
 * One statement for a page of posts: the page's records joined as JSON text, how many there are, the total
 * matching the filters (from the count rows when only the status filters, else counted), and how many count
 * rows the user has. The user, clock, limit and offset are placeholders, or, for `firstPage`, the limit is
 * written in and there is no offset; the other filters are values.
 */
function listStatement(db: Db, filter: Omit<ListFilter, "limit" | "offset">, firstPage?: number) {
  const { at, page, withs, total, countRows } = listParts(db, filter, firstPage);
  return db
    .with(...withs, page)
    .select({
      items: sql<string>`coalesce(string_agg(${recordJson(at)}, ',' order by ${posts.createdAt} desc, ${posts.id} desc), '')`,
      count: sql<number>`count(*)::int`,
      total,
      countRows,
    })
    .from(page)
    .innerJoin(posts, eq(posts.id, page.id));
}

/** A page's ids (comma-separated), how many, the total and the count rows, as `listStatement` has them. */
function pageStatement(db: Db, filter: Pick<ListFilter, "status">) {
  const { page, withs, total, countRows } = listParts(db, filter);
  return db
    .with(...withs, page)
    .select({ ids: sql<string>`coalesce(string_agg(${page.id}::text, ','), '')`, count: sql<number>`count(*)::int`, total, countRows })
    .from(page);
}

/**
 * The user's posts in `status` (all when absent) from the count rows (`counts`). Stored `scheduled` posts whose
 * time has passed count as queued: those few are counted from the posts themselves, only when the filter needs them.
 */
function totalFromCounts(userId: SQLWrapper, status: PostStatus | undefined, at: SQL): SQL<number> {
  const of = (s: SQL) => sql<number>`(select coalesce(sum(n), 0)::int from counts where ${s})`;
  const due = sql`(select count(*)::int from ${posts} where ${posts.userId} = ${userId} and ${posts.status} = 'scheduled' and not (${posts.scheduledFor} > ${at}))`;
  if (!status) return of(sql`true`);
  if (status === "queued") return sql<number>`${of(sql`status = 'queued'`)} + ${due}`;
  if (status === "scheduled") return sql<number>`${of(sql`status = 'scheduled'`)} - ${due}`;
  return of(sql`status = ${status}`);
}

/**
 * Replaces the user's count rows by one per status, in one statement. Writers only ever insert, and rows
 * another fold holds are skipped, so this never waits and never loses a delta: what it deletes it re-inserts
 * as a sum.
 */
async function foldCounts(db: Db, userId: string): Promise<void> {
  await db.execute(sql`with gone as (
      delete from ${postStatusCounts} where id in (
        select id from ${postStatusCounts} where user_id = ${userId} for update skip locked)
      returning status, n)
    insert into ${postStatusCounts} (user_id, status, n) select ${userId}::uuid, status, sum(n) from gone group by status having sum(n) <> 0`);
}
