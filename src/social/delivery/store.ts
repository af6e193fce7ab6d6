/**
 * The delivery row's transitions, each one conditional UPDATE. A claim is fenced by the attempt number it
 * produced: every later write of that attempt requires `status = 'publishing' AND attempts = <claim>`, so a
 * publisher whose lock expired and was taken over can no longer write anything.
 */
import { and, eq, inArray, isNotNull, lte, ne, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../../db/client";
import { prepared } from "../../../db/prepared";
import { deliveries, posts, socialAccounts } from "../../../db/schema";
import { uuidArray } from "../../lib/encoding";
import { groupCommit } from "../../lib/group-commit";

export type DeliveryRow = typeof deliveries.$inferSelect;

export interface Claim {
  row: DeliveryRow;
  /** The attempt number this claim owns (the fence). */
  attempt: number;
  /** The target's post and account, when the claim read them already (a batch claim). */
  loaded?: PostAndAccount;
}

export interface PostAndAccount {
  post: typeof posts.$inferSelect | null;
  account: typeof socialAccounts.$inferSelect | null;
}

/** Claimable: pending, or failed with a retry time; due by `now` (a time, or an SQL timestamptz); post not cancelled. */
const claimable = (now: Date | SQL) =>
  and(
    inArray(deliveries.status, ["pending", "failed"]),
    isNotNull(deliveries.nextAttemptAt),
    lte(deliveries.nextAttemptAt, now),
    sql`not exists (select 1 from ${posts} where ${posts.id} = ${deliveries.postId} and ${posts.cancelledAt} is not null)`,
  );

/** The claim's writes: publishing, the next attempt, locked until `lockedUntil` (times, or SQL timestamptz values). */
const claimSet = (now: Date | SQL, lockedUntil: Date | SQL) => ({
  status: "publishing",
  attempts: sql`${deliveries.attempts} + 1`,
  lockedUntil,
  lastAttemptAt: now,
  updatedAt: now,
});

/** Claimable -> publishing. Null when someone else has it or it is not due. */
export async function claimDelivery(db: Db, id: string, now: Date, lockMs: number): Promise<Claim | null> {
  const [row] = await db
    .update(deliveries)
    .set(claimSet(now, new Date(now.getTime() + lockMs)))
    .where(and(eq(deliveries.id, id), claimable(now)))
    .returning();
  return row ? { row, attempt: row.attempts } : null;
}

export interface ClaimDueOptions {
  /** Leave these alone (the caller's publishes in flight). */
  exclude?: readonly string[];
  /** Also claim targets due within this many ms; their publish waits for the due time (publishClaimed). */
  aheadMs?: number;
}

/**
 * Claims up to `limit` due targets (oldest first) in one statement, then reads their posts and accounts in
 * a second one. Rows another transaction has locked (a publisher claiming one, a cancellation)
 * are skipped, not waited for; the outer conditions are checked again on the locked rows.
 */
export async function claimDue(db: Db, now: Date, limit: number, lockMs: number, options: ClaimDueOptions = {}): Promise<Claim[]> {
  const rows = await prepared(db, "claim_due", () => claimDueStatement(db)).execute({
    now: now.toISOString(),
    dueBy: new Date(now.getTime() + (options.aheadMs ?? 0)).toISOString(),
    lockedUntil: new Date(now.getTime() + lockMs).toISOString(),
    limit,
    exclude: JSON.stringify(options.exclude ?? []),
  });
  if (!rows.length) return [];
  const loaded = await loadPostsAndAccounts(db, rows);
  return rows
    .sort((a, b) => a.nextAttemptAt!.getTime() - b.nextAttemptAt!.getTime())
    .map((row) => ({ row, attempt: row.attempts, loaded: loaded.get(row.id) ?? { post: null, account: null } }));
}

/**
 * Ids given as one JSON array parameter (`name`): the statement's text stays the same however many there are,
 * so it is prepared once (db/prepared.ts) instead of built and planned again for every batch.
 */
const jsonIds = (name: string) => sql`(select value::uuid from json_array_elements_text(${sql.placeholder(name)}::json))`;

/**
 * The rows a batch writes or reads, as `id = any(<uuid[] parameter>)`: the condition the primary key's index
 * answers, and one whose size PostgreSQL estimates as a handful of rows. Joined to a JSON parameter instead
 * (`json_to_recordset`, `json_array_elements_text`), the batch is estimated at 100 rows, and a scan of the
 * whole deliveries table looks cheaper than a hundred lookups in the index until the table is large, so each
 * statement's cost would grow with every post. The JSON still
 * carries the per-row values; this array picks the rows.
 */
const byIds = (name: string) => sql`${deliveries.id} = any(${sql.placeholder(name)}::uuid[])`;

/** `claimDue`'s statement: times as ISO placeholders, the ids to leave alone as a JSON array. */
function claimDueStatement(db: Db) {
  const p = (name: string) => sql`${sql.placeholder(name)}::timestamptz`;
  const dueBy = p("dueBy");
  const due = db
    .select({ id: deliveries.id })
    .from(deliveries)
    .where(and(claimable(dueBy), sql`${deliveries.id} not in ${jsonIds("exclude")}`))
    .orderBy(deliveries.nextAttemptAt)
    .limit(sql.placeholder("limit"))
    .for("update", { skipLocked: true });
  return (
    db
      .update(deliveries)
      .set(claimSet(p("now"), p("lockedUntil")))
      // array(...) runs the LIMITed subquery exactly once; a plain IN may become a join that runs it again per row.
      .where(and(sql`${deliveries.id} = any(array(${due}))`, claimable(dueBy)))
      .returning()
  );
}

function held(claim: Claim) {
  return and(eq(deliveries.id, claim.row.id), eq(deliveries.status, "publishing"), eq(deliveries.attempts, claim.attempt));
}

/** Writes under the claim; false when the claim was lost (lock expired and released or taken over). */
async function updateHeld(db: Db, claim: Claim, values: Partial<DeliveryRow>): Promise<boolean> {
  const rows = await db.update(deliveries).set(values).where(held(claim)).returning({ id: deliveries.id });
  return rows.length === 1;
}

export function renewLock(db: Db, claim: Claim, now: Date, lockMs: number): Promise<boolean> {
  return updateHeld(db, claim, { lockedUntil: new Date(now.getTime() + lockMs) });
}

/**
 * Write-ahead before the publishing call: if we die or get no answer, the next attempt reconciles first.
 * Resolves once the mark is committed. Concurrent marks go out as one statement (group commit).
 */
export function markMaybeSent(db: Db, claim: Claim, now: Date): Promise<boolean> {
  return batched(db).mark({ claim, now });
}

export function saveContainer(db: Db, claim: Claim, containerId: string | null, now: Date): Promise<boolean> {
  return updateHeld(db, claim, { providerContainerId: containerId, updatedAt: now });
}

/**
 * Published at `now` (when the platform answered); concurrent records go out as one statement. With `after`
 * (the Node scheduler's send slots going idle, within a bound the scheduler sets), the record waits for it
 * too: in a burst the remaining sends go before the records of those answered. Records without `after` go
 * as their own statements, never held back by those that have one.
 */
export function recordPublished(db: Db, claim: Claim, providerPostId: string | null, now: Date, after?: () => Promise<void>): Promise<boolean> {
  const b = batched(db);
  return (after ? b.publishedAfter : b.published)({ claim, now, providerPostId, after });
}

/** The write-ahead mark waits this long for the marks of other targets: it delays the platform call. */
const MARK_WINDOW = { windowMs: 2 };
/** A record waits longer: `publishedAt` is taken when the platform answered, so only the row's update waits. */
const RECORD_WINDOW = { windowMs: 10 };
/** Records with `after` also wait for the first one's (each caller's waits for the same thing). */
const RECORD_AFTER_WINDOW = { windowMs: 10, ready: (items: readonly PublishedWrite[]) => items[0]!.after!() };

interface HeldWrite {
  claim: Claim;
  now: Date;
}

/** The group commits of one database handle (a Worker request has its own handle, so nothing crosses requests). */
const batches = new WeakMap<Db, ReturnType<typeof batchesOf>>();

function batched(db: Db) {
  let b = batches.get(db);
  if (!b) batches.set(db, (b = batchesOf(db)));
  return b;
}

function batchesOf(db: Db) {
  return {
    mark: groupCommit((items: HeldWrite[]) => flushMarks(db, items), MARK_WINDOW),
    published: groupCommit((items: PublishedWrite[]) => flushPublished(db, items), RECORD_WINDOW),
    publishedAfter: groupCommit((items: PublishedWrite[]) => flushPublished(db, items), RECORD_AFTER_WINDOW),
  };
}

function flushMarks(db: Db, items: HeldWrite[]): Promise<boolean[]> {
  // Each row's held attempt is read from a parallel array by the row's place in `ids`: a lookup in the filter
  // keeps the plan one scan of deliveries (`(id, attempts) IN (…)` is planned as a nested loop over the batch
  // per row, and a join to the pairs leaves fewer marks heap-only). A row claimed twice in one batch keeps its
  // newest attempt, the only one that can hold it.
  const statement = prepared(db, "mark_maybe_sent", () =>
    db
      .update(deliveries)
      .set({ ambiguous: true, updatedAt: sql`${sql.placeholder("now")}::timestamptz` })
      .where(
        and(
          byIds("ids"),
          eq(deliveries.status, "publishing"),
          sql`${deliveries.attempts} = (${sql.placeholder("attempts")}::int[])[array_position(${sql.placeholder("ids")}::uuid[], ${deliveries.id})]`,
        ),
      )
      .returning({ id: deliveries.id, attempts: deliveries.attempts }),
  );
  const newest = new Map<string, number>();
  for (const i of items) newest.set(i.claim.row.id, Math.max(i.claim.attempt, newest.get(i.claim.row.id) ?? 0));
  return heldIn(
    items,
    statement.execute({ now: latest(items).toISOString(), ids: uuidArray([...newest.keys()]), attempts: `{${[...newest.values()].join(",")}}` }),
  );
}

interface PublishedWrite extends HeldWrite {
  providerPostId: string | null;
  after?: () => Promise<void>;
}

function flushPublished(db: Db, items: PublishedWrite[]): Promise<boolean[]> {
  const statement = prepared(db, "record_published", () =>
    db
      .update(deliveries)
      .set({
        status: "published",
        providerPostId: sql`v.provider_post_id`,
        publishedAt: sql`v.published_at`,
        lockedUntil: null,
        nextAttemptAt: null,
        ambiguous: false,
        errorCode: null,
        errorMessage: null,
        updatedAt: sql`v.published_at`,
      })
      .from(sql`json_to_recordset(${sql.placeholder("published")}::json) as v(id uuid, attempt int, provider_post_id text, published_at timestamptz)`)
      .where(and(byIds("ids"), eq(deliveries.status, "publishing"), sql`${deliveries.id} = v.id`, sql`${deliveries.attempts} = v.attempt`))
      .returning({ id: deliveries.id, attempts: deliveries.attempts }),
  );
  const published = items.map((i) => ({ id: i.claim.row.id, attempt: i.claim.attempt, provider_post_id: i.providerPostId, published_at: i.now.toISOString() }));
  return heldIn(items, statement.execute({ ids: uuidArray(items.map((i) => i.claim.row.id)), published: JSON.stringify(published) }));
}

/**
 * Per claim, whether the write reached its row: matched on id and attempt, so an older claim of the same row
 * in the same batch never counts as held.
 */
async function heldIn(items: readonly HeldWrite[], written: Promise<Array<{ id: string; attempts: number }>>): Promise<boolean[]> {
  const rows = new Set((await written).map((r) => `${r.id}/${r.attempts}`));
  return items.map((i) => rows.has(`${i.claim.row.id}/${i.claim.attempt}`));
}

const latest = (items: readonly HeldWrite[]) => new Date(Math.max(...items.map((i) => i.now.getTime())));

export interface FailureRecord {
  errorCode: string;
  errorMessage: string;
  /** Null: failed for good. */
  nextAttemptAt: Date | null;
  ambiguous: boolean;
}

export function recordFailure(db: Db, claim: Claim, failure: FailureRecord, now: Date): Promise<boolean> {
  return updateHeld(db, claim, {
    status: "failed",
    lockedUntil: null,
    nextAttemptAt: failure.nextAttemptAt,
    ambiguous: failure.ambiguous,
    errorCode: failure.errorCode,
    errorMessage: failure.errorMessage.slice(0, 1000),
    updatedAt: now,
  });
}

export async function setJobId(db: Db, id: string, jobId: string, expectDue: Date): Promise<void> {
  await db
    .update(deliveries)
    .set({ jobId })
    .where(and(eq(deliveries.id, id), inArray(deliveries.status, ["pending", "failed"]), eq(deliveries.nextAttemptAt, expectDue)));
}

/** The account lost its token or permissions: every later publish needs a reconnect first. */
export async function markAccountNeedsReconnect(db: Db, userId: string, accountId: string, reason: string, now: Date): Promise<void> {
  await db
    .update(socialAccounts)
    .set({ tokenStatus: "invalid", tokenError: reason.slice(0, 500), updatedAt: now })
    .where(and(eq(socialAccounts.userId, userId), eq(socialAccounts.id, accountId)));
}

/** The target's post and its owner's account (null when gone), in one round trip. */
export async function loadPostAndAccount(db: Db, row: DeliveryRow): Promise<PostAndAccount> {
  return (await loadPostsAndAccounts(db, [row])).get(row.id) ?? { post: null, account: null };
}

/** Posts and accounts of several targets in one statement, by delivery id. */
async function loadPostsAndAccounts(db: Db, rows: readonly DeliveryRow[]): Promise<Map<string, PostAndAccount>> {
  const statement = prepared(db, "load_posts_and_accounts", () =>
    db
      .select({
        id: deliveries.id,
        post: posts,
        account: socialAccounts,
      })
      .from(deliveries)
      .innerJoin(posts, eq(posts.id, deliveries.postId))
      .leftJoin(socialAccounts, and(eq(socialAccounts.userId, deliveries.userId), eq(socialAccounts.id, deliveries.accountId)))
      .where(byIds("ids")),
  );
  const found = await statement.execute({ ids: uuidArray(rows.map((r) => r.id)) });
  return new Map(found.map((f) => [f.id, { post: f.post, account: f.account }]));
}

/** Platform ids other deliveries of this account already hold (reconciliation must not take them). */
export async function knownProviderPostIds(db: Db, row: DeliveryRow): Promise<Set<string>> {
  const rows = await db
    .select({ id: deliveries.providerPostId })
    .from(deliveries)
    .where(and(eq(deliveries.accountId, row.accountId), ne(deliveries.id, row.id), isNotNull(deliveries.providerPostId)));
  return new Set(rows.map((r) => r.id!).filter(Boolean));
}

/** The next due time of outstanding deliveries and how many fall due with it (`nextDue`). */
export interface NextDue {
  at: Date;
  /** Outstanding deliveries due from `at` to `withinMs` after it (counted up to `countCap`). */
  count: number;
}

/**
 * When the next outstanding delivery (not in `exclude`) is due, and how many are due from then to `withinMs`
 * later (at most `countCap` counted, so a large backlog is not read through); null when none is.
 */
export async function nextDue(db: Db, exclude: readonly string[] = [], options: { withinMs: number; countCap: number }): Promise<NextDue | null> {
  const statement = prepared(db, "next_due", () => {
    const outstanding = and(
      inArray(deliveries.status, ["pending", "failed"]),
      isNotNull(deliveries.nextAttemptAt),
      sql`${deliveries.id} not in ${jsonIds("exclude")}`,
    );
    const first = db
      .select({ at: sql<string | Date | null>`min(${deliveries.nextAttemptAt})`.as("at") })
      .from(deliveries)
      .where(outstanding)
      .as("first");
    const due = db
      .select({ one: sql`1` })
      .from(deliveries)
      .where(and(outstanding, sql`${deliveries.nextAttemptAt} <= ${first.at} + ${sql.placeholder("withinMs")}::int * interval '1 millisecond'`))
      .limit(sql.placeholder("countCap"));
    return db.select({ at: first.at, count: sql<number>`(select count(*)::int from (${due}) as due)` }).from(first);
  });
  const [row] = await statement.execute({ exclude: JSON.stringify(exclude), withinMs: options.withinMs, countCap: options.countCap });
  return row?.at ? { at: new Date(row.at), count: Number(row.count) } : null;
}
