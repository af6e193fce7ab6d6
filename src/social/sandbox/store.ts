/**
 * What the sandbox platforms hold, in the service's own database (so it survives a restart): access tokens,
 * published items and containers, and pending faults per account. Everything belongs to an owner (the user
 * who connected the account through the control routes, or one consent of the OAuth dialog): the same
 * account id may exist in two owners' sandboxes, and a token only ever sees its own owner's items.
 */
import { and, asc, eq, gt, inArray, isNotNull, isNull, like, lt, lte, or, sql } from "drizzle-orm";
import type { Db } from "../../../db/client";
import { prepared } from "../../../db/prepared";
import { sandboxAccountFaults, sandboxGrants, sandboxItems, sandboxTokens } from "../../../db/schema";
import type { FaultKind } from "./graph-errors";
import { toHex } from "../../lib/encoding";
import { groupCommit } from "../../lib/group-commit";
import { keptLookups } from "../../lib/kept-lookups";

export type SandboxItem = typeof sandboxItems.$inferSelect;

/** Graph ids are decimal strings; a 1 and 15 random digits keep them unique enough for a sandbox. */
export function newGraphId(): string {
  let id = "1";
  for (const b of randomBytes(15)) id += b % 10;
  return id;
}

/**
 * Random bytes drawn from a pool filled 4 KB at a time (on first use: a Worker may not draw them at start-up):
 * a `getRandomValues` call per publish would be a noticeable share of a burst's CPU in the sandbox.
 */
let pool = new Uint8Array(0);
let used = 0;
function randomBytes(n: number): Uint8Array {
  if (used + n > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(4096));
    used = 0;
  }
  used += n;
  return pool.subarray(used - n, used);
}

/** Sandbox tokens name their platform, so the sandbox knows which API an id speaks without a registry. */
export function newSandboxToken(platform: string): string {
  const random = toHex(crypto.getRandomValues(new Uint8Array(24)));
  return `sandbox-${platform}-${random}`;
}

export function platformOfToken(token: string): string | null {
  return /^sandbox-(pageplatform|photoplatform)-[0-9a-f]+$/.exec(token)?.[1] ?? null;
}

/** An account in one owner's sandbox. */
export interface SandboxAccount {
  owner: string;
  platformAccountId: string;
}

export async function saveToken(db: Db, token: string, account: SandboxAccount): Promise<void> {
  await db.insert(sandboxTokens).values({ token, owner: account.owner, platformAccountId: account.platformAccountId, valid: true });
}

/**
 * The page token of one consent's page (`me/accounts`): the one it was given before, or a new one. Listing the
 * pages again hands out the same token, so the table grows with consents, not with calls.
 */
export async function pageToken(db: Db, account: SandboxAccount): Promise<string> {
  const [row] = await db
    .select({ token: sandboxTokens.token })
    .from(sandboxTokens)
    .where(
      and(
        eq(sandboxTokens.owner, account.owner),
        eq(sandboxTokens.platformAccountId, account.platformAccountId),
        like(sandboxTokens.token, "sandbox-pageplatform-%"),
        eq(sandboxTokens.valid, true),
      ),
    )
    .limit(1);
  if (row) return row.token;
  const token = newSandboxToken("pageplatform");
  await saveToken(db, token, account);
  return token;
}

/**
 * Tokens this process has seen valid, per database handle. A token's row is written once and never changed,
 * so a hit is what the database would answer; the age limit only bounds how long a hand edit goes unseen.
 * A burst of publishes with one token asks the database once (`keptLookups` keeps the lookup from its
 * start). Unknown tokens are not kept (every miss asks the database).
 */
const knownTokens = new WeakMap<object, (token: string, lookup: () => Promise<SandboxAccount | null>) => Promise<SandboxAccount | null>>();
const TOKEN_CACHE_MS = 60_000;
const TOKEN_CACHE_SIZE = 10_000;

/** The account a valid token speaks for, or null. */
export function tokenAccount(db: Db, token: string): Promise<SandboxAccount | null> {
  let known = knownTokens.get(db);
  if (!known) knownTokens.set(db, (known = keptLookups({ ttlMs: TOKEN_CACHE_MS, maxEntries: TOKEN_CACHE_SIZE, keep: (account) => account !== null })));
  return known(token, async () => {
    const byToken = prepared(db, "sandbox_token", () =>
      db
        .select()
        .from(sandboxTokens)
        .where(eq(sandboxTokens.token, sql.placeholder("token")))
        .limit(1),
    );
    const [row] = await byToken.execute({ token });
    return row?.valid ? { owner: row.owner, platformAccountId: row.platformAccountId } : null;
  });
}

export async function setFault(db: Db, account: SandboxAccount, kind: FaultKind, times: number): Promise<void> {
  await db
    .insert(sandboxAccountFaults)
    .values({ ...account, kind, remaining: times })
    .onConflictDoUpdate({ target: [sandboxAccountFaults.owner, sandboxAccountFaults.platformAccountId], set: { kind, remaining: times } });
}

/** Consumes one pending fault atomically (two concurrent publishes never share one). */
export async function takeFault(db: Db, account: SandboxAccount): Promise<FaultKind | null> {
  const [row] = await prepared(db, "sandbox_take_fault", () => takeFaultQuery(db)).execute({ ...account });
  return (row?.kind as FaultKind | undefined) ?? null;
}

/** One pending fault of the account (`owner`, `platformAccountId` placeholders), taken: its kind, or no row. */
function takeFaultQuery(db: Db) {
  return db
    .update(sandboxAccountFaults)
    .set({ remaining: sql`${sandboxAccountFaults.remaining} - 1` })
    .where(
      and(
        eq(sandboxAccountFaults.owner, sql.placeholder("owner")),
        eq(sandboxAccountFaults.platformAccountId, sql.placeholder("platformAccountId")),
        gt(sandboxAccountFaults.remaining, 0),
      ),
    )
    .returning({ kind: sandboxAccountFaults.kind });
}

/**
 * Consumes one pending fault of the item's account or, when it has none, inserts `item`. Answers the fault
 * taken, in which case nothing was inserted, or null when the item was. Publishes that come together (within
 * 2 ms of the first, or while the previous batch is being written; a burst of scheduled targets) are stored
 * by one statement (`groupCommit`): on the embedded default every statement runs on the request thread, and
 * one insert per publish was the sandbox's largest cost in a burst. Each publish still gets its own answer
 * or its own error.
 */
export async function insertUnlessFault(db: Db, item: NewItem): Promise<FaultKind | null> {
  let insert = itemInserts.get(db);
  if (!insert) itemInserts.set(db, (insert = groupCommit((items: NewItem[]) => insertAllUnlessFault(db, items), ITEM_WINDOW)));
  const outcome = await insert(item);
  if ("error" in outcome) throw outcome.error;
  return outcome.fault;
}

/** A publish waits this long for others to store with it (the platform's answer waits with it). */
const ITEM_WINDOW = { windowMs: 2 };
type ItemOutcome = { fault: FaultKind | null } | { error: unknown };
const itemInserts = new WeakMap<Db, (item: NewItem) => Promise<ItemOutcome>>();

/**
 * The items of accounts without a pending fault, all in one statement; then, one by one in the order given,
 * those of accounts with one, so that each fault is taken by exactly one publish, the earliest, as when every
 * publish had its own statement (while a fault is pending, its account's publishes are written one after
 * another). Should the batch's statement fail (one item PostgreSQL's JSON refuses, say), every item is tried
 * on its own, so that an item fails only for itself. Within a batch `created_at` follows the given order
 * (a microsecond apart, for a clock that reads milliseconds, as PGlite's does).
 */
async function insertAllUnlessFault(db: Db, items: NewItem[]): Promise<ItemOutcome[]> {
  const one = (item: NewItem): Promise<ItemOutcome> =>
    insertOneUnlessFault(db, item).then(
      (fault) => ({ fault }),
      (error: unknown) => ({ error }),
    );
  if (items.length === 1) return [await one(items[0]!)];
  const statement = prepared(db, "sandbox_insert_unless_faults", () => {
    const columns = sql.raw(ITEM_COLUMNS.map((c) => sandboxItems[c].name).join(", "));
    const types = sql.raw(ITEM_COLUMNS.map((c) => `${sandboxItems[c].name} ${sandboxItems[c].getSQLType()}`).join(", "));
    const added = db.$with("added", { id: sql<string>`id`.as("id") }).as(
      sql`insert into ${sandboxItems} (${columns}, created_at)
        select ${columns}, clock_timestamp() + n * interval '1 microsecond'
        from json_to_recordset(${sql.placeholder("items")}::json) as i(n int, ${types})
        where not exists (select 1 from ${sandboxAccountFaults} f
          where f.owner = i.owner and f.platform_account_id = i.platform_account_id and f.remaining > 0)
        order by n
        returning id`,
    );
    return db.with(added).select().from(added);
  });
  // Each item as a JSON object of its columns by their SQL names, with its place in the batch as `n`.
  const rows = items.map(withDefaults).map((item, n) => Object.fromEntries([["n", n], ...ITEM_COLUMNS.map((c) => [sandboxItems[c].name, item[c]])]));
  let stored: Set<string>;
  try {
    stored = new Set((await statement.execute({ items: JSON.stringify(rows) })).map((r) => r.id));
  } catch {
    stored = new Set();
  }
  const outcomes: ItemOutcome[] = [];
  for (const item of items) outcomes.push(stored.has(item.id) ? { fault: null } : await one(item));
  return outcomes;
}

/** `insertUnlessFault` for one item, in one statement: a publish without faults costs one round trip. */
async function insertOneUnlessFault(db: Db, item: NewItem): Promise<FaultKind | null> {
  const statement = prepared(db, "sandbox_insert_unless_fault", () => {
    const p = (name: string) => sql.placeholder(name);
    const fault = db.$with("fault").as(takeFaultQuery(db));
    const added = db.$with("added", { id: sql<string>`id`.as("id") }).as(
      sql`insert into ${sandboxItems} (id, owner, platform, platform_account_id, kind, state, caption, image_urls, attached_ids, ready_at)
        select ${p("id")}, ${p("owner")}, ${p("platform")}, ${p("platformAccountId")}, ${p("kind")}, ${p("state")}, ${p("caption")},
          ${p("imageUrls")}::jsonb, ${p("attachedIds")}::jsonb, ${p("readyAt")}::bigint
        where not exists (select 1 from fault) returning id`,
    );
    // A data-modifying WITH runs whether or not the main query reads it: one row when a fault was taken.
    return db.with(fault, added).select({ kind: fault.kind }).from(fault);
  });
  const values = withDefaults(item);
  const [row] = await statement.execute({ ...values, imageUrls: JSON.stringify(values.imageUrls), attachedIds: JSON.stringify(values.attachedIds) });
  return (row?.kind as FaultKind | undefined) ?? null;
}

// Object.assign, not `{ ...ITEM_DEFAULTS, ...item }`: V8 ran that spread at some 15 µs an item, a share of a burst's
// sandbox inserts; this takes well under one.
const withDefaults = (item: NewItem): { [K in keyof NewItem]-?: Exclude<NewItem[K], undefined> } => Object.assign({}, ITEM_DEFAULTS, item);

type NewItem = Omit<typeof sandboxItems.$inferInsert, "createdAt">;

/** What an item's optional columns hold when the caller leaves them out. */
const ITEM_DEFAULTS = { owner: "", caption: "", imageUrls: [] as string[], attachedIds: [] as string[], readyAt: null };

/** Every column but `createdAt` (now): the placeholders of `insertItem`'s statement, the batch insert's JSON fields. */
const ITEM_COLUMNS = ["id", "owner", "platform", "platformAccountId", "kind", "state", "caption", "imageUrls", "attachedIds", "readyAt"] as const;

export async function insertItem(db: Pick<Db, "insert">, item: NewItem): Promise<SandboxItem> {
  const insert = prepared(db, "sandbox_insert_item", () =>
    db
      .insert(sandboxItems)
      .values(Object.fromEntries(ITEM_COLUMNS.map((c) => [c, sql.placeholder(c)])) as unknown as typeof sandboxItems.$inferInsert)
      .returning(),
  );
  const [row] = await insert.execute(withDefaults(item));
  return row!;
}

export async function getItem(db: Db, id: string): Promise<SandboxItem | null> {
  const [row] = await db.select().from(sandboxItems).where(eq(sandboxItems.id, id)).limit(1);
  return row ?? null;
}

export async function getItems(db: Db, ids: readonly string[]): Promise<SandboxItem[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(sandboxItems)
    .where(inArray(sandboxItems.id, [...ids]));
}

export async function listItems(db: Db, account: SandboxAccount, kinds: readonly string[]): Promise<SandboxItem[]> {
  return db
    .select()
    .from(sandboxItems)
    .where(
      and(
        eq(sandboxItems.owner, account.owner),
        eq(sandboxItems.platformAccountId, account.platformAccountId),
        inArray(sandboxItems.kind, [...kinds]),
        eq(sandboxItems.state, "published"),
      ),
    )
    .orderBy(asc(sandboxItems.createdAt));
}

/** FINISHED -> PUBLISHED exactly once, even under concurrent media_publish calls. */
export async function markContainerPublished(db: Pick<Db, "update">, containerId: string, mediaId: string): Promise<boolean> {
  const rows = await db
    .update(sandboxItems)
    .set({ state: "PUBLISHED", attachedIds: [mediaId] })
    .where(and(eq(sandboxItems.id, containerId), eq(sandboxItems.kind, "container"), eq(sandboxItems.state, "FINISHED")))
    .returning({ id: sandboxItems.id });
  return rows.length === 1;
}

/** A container becomes FINISHED once its processing delay has passed; stored on first read after that. */
export async function containerState(db: Db, item: SandboxItem, nowMs: number): Promise<string> {
  if (item.state === "IN_PROGRESS" && item.readyAt !== null && nowMs >= item.readyAt) {
    await db
      .update(sandboxItems)
      .set({ state: "FINISHED" })
      .where(and(eq(sandboxItems.id, item.id), eq(sandboxItems.state, "IN_PROGRESS")));
    return "FINISHED";
  }
  if ((item.state === "IN_PROGRESS" || item.state === "FINISHED") && nowMs - item.createdAt.getTime() > 24 * 3600_000) return "EXPIRED";
  return item.state;
}

/** Publishes of the account in the last 24 hours: what content_publishing_limit reports as quota_usage. */
export async function publishedSince(db: Db, account: SandboxAccount, since: Date): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(sandboxItems)
    .where(
      and(
        eq(sandboxItems.owner, account.owner),
        eq(sandboxItems.platformAccountId, account.platformAccountId),
        eq(sandboxItems.kind, "media"),
        sql`${sandboxItems.createdAt} >= ${since.toISOString()}::timestamptz`,
      ),
    );
  return Number(row?.n ?? 0);
}

export type GrantKind = "code" | "user_token";

export async function saveGrant(
  db: Db,
  grant: { value: string; kind: GrantKind; owner: string; pageIds: string[]; redirectUri: string | null; expiresAt: Date },
): Promise<void> {
  await db.insert(sandboxGrants).values(grant);
}

/** Uses up an authorization code: the first exchange wins, a second one finds nothing. */
export async function useCode(db: Db, code: string, now: Date): Promise<typeof sandboxGrants.$inferSelect | null> {
  const [row] = await db
    .update(sandboxGrants)
    .set({ usedAt: now })
    .where(and(eq(sandboxGrants.value, code), eq(sandboxGrants.kind, "code"), isNull(sandboxGrants.usedAt), gt(sandboxGrants.expiresAt, now)))
    .returning();
  return row ?? null;
}

export async function userToken(db: Db, token: string, now: Date): Promise<typeof sandboxGrants.$inferSelect | null> {
  const [row] = await db
    .select()
    .from(sandboxGrants)
    .where(and(eq(sandboxGrants.value, token), eq(sandboxGrants.kind, "user_token"), gt(sandboxGrants.expiresAt, now)))
    .limit(1);
  return row ?? null;
}

/** Rows one purge removes from each table at most (the sweep runs again within a minute). */
const PURGE_BATCH = 1000;
const DAY_MS = 24 * 3600_000;
/** Containers never published and photos never attached are dead after a day (containerState: EXPIRED); kept one more. */
const UNUSED_ITEM_DAYS = 2;

/**
 * Removes what the sandbox no longer answers for: authorization codes used or expired and user tokens past
 * their expiry; items past the retention period (RETENTION_DAYS, as posts); containers never published and
 * unpublished photos older than two days; faults with nothing left to inject. Page and account tokens have no
 * expiry on the platform and stay. Returns how many rows went.
 *
 * @example
 * await purgeExpired(services.db, services.clock.now(), services.config.retentionDays); // run by the sweep
 */
export async function purgeExpired(db: Db, now: Date, retentionDays: number): Promise<number> {
  const grantVictims = db
    .select({ value: sandboxGrants.value })
    .from(sandboxGrants)
    .where(or(lte(sandboxGrants.expiresAt, now), and(eq(sandboxGrants.kind, "code"), isNotNull(sandboxGrants.usedAt))))
    .limit(PURGE_BATCH);
  const grants = await db.delete(sandboxGrants).where(inArray(sandboxGrants.value, grantVictims)).returning({ value: sandboxGrants.value });

  const retained = new Date(now.getTime() - retentionDays * DAY_MS);
  const unused = new Date(now.getTime() - UNUSED_ITEM_DAYS * DAY_MS);
  const itemVictims = db
    .select({ id: sandboxItems.id })
    .from(sandboxItems)
    .where(
      or(
        lt(sandboxItems.createdAt, retained),
        and(
          lt(sandboxItems.createdAt, unused),
          or(
            and(eq(sandboxItems.kind, "container"), inArray(sandboxItems.state, ["IN_PROGRESS", "FINISHED", "ERROR"])),
            and(eq(sandboxItems.kind, "photo"), eq(sandboxItems.state, "unpublished")),
          ),
        ),
      ),
    )
    .limit(PURGE_BATCH);
  const items = await db.delete(sandboxItems).where(inArray(sandboxItems.id, itemVictims)).returning({ id: sandboxItems.id });

  const faults = await db.delete(sandboxAccountFaults).where(lte(sandboxAccountFaults.remaining, 0)).returning({ owner: sandboxAccountFaults.owner });
  return grants.length + items.length + faults.length;
}
