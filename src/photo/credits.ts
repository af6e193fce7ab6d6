/**
 * AI generation credits: a balance per user that each image draws on. The charging rule, in one place:
 *
 * - `reserveCredits` holds the whole price of a request (every item of a batch) before any model call, in one
 *   conditional statement on the user's `credit_accounts` row, or refuses with 402 INSUFFICIENT_CREDITS. So
 *   concurrent requests queue on that row and can never reserve more than the balance.
 * - `settleItem` turns one item's hold into a charge (a `credit_movements` row keyed by job and item, so an
 *   image is charged once however often its job runs); `releaseItemHold` gives a failed item's hold back at once.
 * - `releaseExpiredHolds` (the sweep) gives back what a dead runner held: holds past their expiry whose job
 *   is not live. An async job that the sweep will resume keeps its holds until it ends.
 *
 * A user's account is opened, with the sign-up grant (`PHOTO_SIGNUP_CREDITS`) as its first movement, the first
 * time area B meets them (`openAccount`), so users made before credits existed get it too.
 *
 * @example
 * await reserveCredits(db, { userId, jobId, items: 4, price, expiresAt, signupCredits });   // or throws 402
 * await settleItem(db, { jobId, itemIndex: 0, model: "pro", resolution: "2K" });             // balance after
 * await releaseItemHold(db, jobId, 3);                                                          // a failed item
 * await releaseExpiredHolds(db, now);                                                        // the sweep
 */
import { sql, type SQL } from "drizzle-orm";
import { executeRows, type Db } from "../../db/client";
import { ApiError } from "../http/errors";

export interface CreditState {
  /** The sum of the user's movements. */
  balance: number;
  /** Held for images being made. */
  reserved: number;
  /** What a new request may reserve: balance - reserved. */
  available: number;
}

/** How a 402 tells the customer to get more credits (the operator grants them). */
export const MORE_CREDITS_HINT = "Ask the service's operator for more credits; GET /api/image/credits shows your balance.";

/**
 * Opens the user's account with the sign-up grant if it has none (one statement: a second caller finds the
 * row and grants nothing). Returns whether it was opened now.
 */
export async function openAccount(db: Db, userId: string, signupCredits: number): Promise<boolean> {
  const rows = await executeRows<{ opened: number }>(
    db,
    sql`with opened as (
          insert into credit_accounts (user_id, balance) values (${userId}::uuid, ${signupCredits}::int)
          on conflict (user_id) do nothing returning user_id, balance
        ), granted as (
          insert into credit_movements (user_id, kind, amount, balance_after, note)
          select user_id, 'grant', balance, balance, 'sign-up grant' from opened where balance > 0
        )
        select count(*)::int as opened from opened`,
  );
  return Number(rows[0]?.opened ?? 0) > 0;
}

export interface Reservation {
  userId: string;
  jobId: string;
  /** Items of the request; each holds `price` credits. */
  items: number;
  /** Credits of one image at the request's model and resolution. */
  price: number;
  /** When the sweep may release what is still held, unless the job will run again. */
  expiresAt: Date;
  signupCredits: number;
  /** Words for the 402: what the price is for, e.g. "4 images of pro at 2K". */
  describe: string;
}

/**
 * Holds `items x price` credits for the job's items that hold nothing yet (a job taken over keeps what it
 * held and what it was charged), or throws 402 INSUFFICIENT_CREDITS naming the price and the balance.
 */
export async function reserveCredits(db: Db, r: Reservation): Promise<CreditState> {
  for (let round = 0; round < 2; round++) {
    const [row] = await executeRows<{ ok: number; balance: number | null; reserved: number | null }>(
      db,
      sql`with need as (
            select i from generate_series(0, ${r.items}::int - 1) as i
            where not exists (
              select 1 from credit_holds h where h.job_id = ${r.jobId}::uuid and h.item_index = i and h.state in ('held', 'settled')
            )
          ), total as (
            select ${r.price}::int * count(*)::int as amount from need
          ), account as (
            update credit_accounts set reserved = reserved + (select amount from total), updated_at = now()
            where user_id = ${r.userId}::uuid and balance - reserved >= (select amount from total)
            returning balance, reserved
          ), held as (
            insert into credit_holds (job_id, item_index, user_id, amount, state, expires_at)
            select ${r.jobId}::uuid, need.i, ${r.userId}::uuid, ${r.price}::int, 'held', ${r.expiresAt.toISOString()}::timestamptz
            from need, account
            on conflict (job_id, item_index) do update set state = 'held', amount = excluded.amount, expires_at = excluded.expires_at
            where credit_holds.state = 'released'
            returning item_index
          ), extended as (
            update credit_holds set expires_at = ${r.expiresAt.toISOString()}::timestamptz
            where job_id = ${r.jobId}::uuid and state = 'held' and exists (select 1 from account)
            returning item_index
          )
          select (select count(*)::int from account) as ok, (select balance from account) as balance, (select reserved from account) as reserved`,
    );
    if (Number(row?.ok ?? 0) > 0) return state(Number(row!.balance), Number(row!.reserved));
    // No account yet: open it with the sign-up grant and try once more.
    if (round === 0 && (await openAccount(db, r.userId, r.signupCredits))) continue;
    break;
  }
  const current = await creditState(db, r.userId);
  const total = r.items * r.price;
  throw new ApiError(
    "INSUFFICIENT_CREDITS",
    `This request costs ${total} credits (${r.describe}, ${r.price} each) and ${current.available} of your ${current.balance} credits are available${current.reserved ? ` (${current.reserved} are held for images being made)` : ""}. ${MORE_CREDITS_HINT}`,
    {
      details: [
        { path: "cost", message: `${total} credits` },
        { path: "balance", message: `${current.balance} credits, ${current.available} available` },
      ],
    },
  );
}

export interface SettleInput {
  jobId: string;
  itemIndex: number;
  model: string;
  resolution: string;
}

/**
 * Charges one delivered image: its hold becomes a `charge` movement. Returns the balance after it, or null
 * when the item was charged already (the unique (job, item) charge keeps it so). A hold the sweep released
 * while its runner was still alive is charged from what is available when it can be; when it cannot, the
 * image is not charged and the caller logs it. `deliver` (the gallery's insert) runs in the same statement as
 * the charge, so what is delivered is what is charged.
 */
export async function settleItem(db: Db, s: SettleInput, deliver?: SQL): Promise<number | null> {
  try {
    const [held] = await executeRows<{ balance: number | null }>(
      db,
      sql`with hold as (
            update credit_holds set state = 'settled'
            where job_id = ${s.jobId}::uuid and item_index = ${s.itemIndex}::int and state = 'held'
            returning user_id, amount
          ), account as (
            update credit_accounts c set balance = c.balance - hold.amount, reserved = c.reserved - hold.amount, updated_at = now()
            from hold where c.user_id = hold.user_id
            returning c.user_id, c.balance, hold.amount
          ), charged as (
            insert into credit_movements (user_id, kind, amount, balance_after, job_id, item_index, model, resolution)
            select user_id, 'charge', -amount, balance, ${s.jobId}::uuid, ${s.itemIndex}::int, ${s.model}, ${s.resolution} from account
          )${deliver ? sql`, delivered as (${deliver})` : sql``}
          select (select balance from account) as balance`,
    );
    if (held?.balance !== null && held?.balance !== undefined) return Number(held.balance);
    const [late] = await executeRows<{ balance: number | null }>(
      db,
      sql`with account as (
            update credit_accounts c set balance = c.balance - h.amount, updated_at = now()
            from credit_holds h
            where h.job_id = ${s.jobId}::uuid and h.item_index = ${s.itemIndex}::int and h.state = 'released'
              and c.user_id = h.user_id and c.balance - c.reserved >= h.amount
            returning c.user_id, c.balance, h.amount
          ), settled as (
            update credit_holds set state = 'settled' from account
            where job_id = ${s.jobId}::uuid and item_index = ${s.itemIndex}::int and state = 'released'
          ), charged as (
            insert into credit_movements (user_id, kind, amount, balance_after, job_id, item_index, model, resolution)
            select user_id, 'charge', -amount, balance, ${s.jobId}::uuid, ${s.itemIndex}::int, ${s.model}, ${s.resolution} from account
          )
          select (select balance from account) as balance`,
    );
    return late?.balance === null || late?.balance === undefined ? null : Number(late.balance);
  } catch (err) {
    // Two runners of one job raced to charge the same item: the unique charge refused the second.
    if (isUniqueViolation(err)) return null;
    throw err;
  }
}

/** Gives back the hold of one item that failed. */
export async function releaseItemHold(db: Db, jobId: string, itemIndex: number): Promise<void> {
  await releaseWhere(db, sql`job_id = ${jobId}::uuid and item_index = ${itemIndex}::int`);
}

/** Gives back every hold a job still has (it ended, or was refused after reserving). */
export async function releaseJobHolds(db: Db, jobId: string): Promise<void> {
  await releaseWhere(db, sql`job_id = ${jobId}::uuid`);
}

/**
 * The sweep: releases held credits past their expiry whose job is not live: not an unfinished async job (the
 * sweep runs those again, or fails them for good and releases their holds then), and not a request still
 * holding its job's lock (a synchronous request renews it while it runs). `liveAfter` is when a lock still
 * counts: now, or later to treat every lock as dead (a process that holds the database alone, at its
 * start). Returns how many holds were released.
 */
export async function releaseExpiredHolds(db: Db, now: Date, liveAfter: Date = now): Promise<number> {
  return releaseWhere(
    db,
    sql`expires_at < ${now.toISOString()}::timestamptz and not exists (
          select 1 from photo_jobs j
          where j.id = credit_holds.job_id and j.status in ('queued', 'running')
            and (j.async or j.locked_until > ${liveAfter.toISOString()}::timestamptz)
        )`,
  );
}

async function releaseWhere(db: Db, where: ReturnType<typeof sql>): Promise<number> {
  const [row] = await executeRows<{ released: number }>(
    db,
    sql`with released as (
          update credit_holds set state = 'released' where state = 'held' and ${where} returning user_id, amount
        ), per_user as (
          select user_id, sum(amount)::int as amount, count(*)::int as n from released group by user_id
        ), account as (
          update credit_accounts c set reserved = c.reserved - per_user.amount, updated_at = now()
          from per_user where c.user_id = per_user.user_id returning per_user.n
        )
        select coalesce(sum(n), 0)::int as released from account`,
  );
  return Number(row?.released ?? 0);
}

/** The operator's grant (`npm run admin -- credits --add N`): a `grant` movement with its note. */
export async function grantCredits(db: Db, userId: string, amount: number, note: string | null, signupCredits: number): Promise<number> {
  await openAccount(db, userId, signupCredits);
  const [row] = await executeRows<{ balance: number }>(
    db,
    sql`with account as (
          update credit_accounts set balance = balance + ${amount}::int, updated_at = now()
          where user_id = ${userId}::uuid returning user_id, balance
        ), granted as (
          insert into credit_movements (user_id, kind, amount, balance_after, note)
          select user_id, 'grant', ${amount}::int, balance, ${note} from account
        )
        select balance from account`,
  );
  return Number(row!.balance);
}

/** The user's balance and what is held (zeros for an account not opened yet). */
export async function creditState(db: Db, userId: string): Promise<CreditState> {
  const [row] = await executeRows<{ balance: number; reserved: number }>(
    db,
    sql`select balance, reserved from credit_accounts where user_id = ${userId}::uuid`,
  );
  return state(Number(row?.balance ?? 0), Number(row?.reserved ?? 0));
}

export interface Movement {
  id: number;
  kind: "grant" | "charge";
  amount: number;
  balanceAfter: number;
  jobId: string | null;
  model: string | null;
  resolution: string | null;
  note: string | null;
  createdAt: Date;
}

/** The user's movements, newest first, and how many there are. */
export async function listMovements(db: Db, userId: string, page: { limit: number; offset: number }): Promise<{ items: Movement[]; total: number }> {
  const rows = await executeRows<{
    id: number;
    kind: Movement["kind"];
    amount: number;
    balance_after: number;
    job_id: string | null;
    model: string | null;
    resolution: string | null;
    note: string | null;
    created_at: string | Date;
    total: number;
  }>(
    db,
    sql`select id, kind, amount, balance_after, job_id, model, resolution, note, created_at, count(*) over ()::int as total
        from credit_movements where user_id = ${userId}::uuid
        order by id desc limit ${page.limit}::int offset ${page.offset}::int`,
  );
  let total = Number(rows[0]?.total ?? 0);
  if (rows.length === 0 && page.offset > 0) {
    const [count] = await executeRows<{ n: number }>(db, sql`select count(*)::int as n from credit_movements where user_id = ${userId}::uuid`);
    total = Number(count?.n ?? 0);
  }
  return {
    items: rows.map((r) => ({
      id: Number(r.id),
      kind: r.kind,
      amount: Number(r.amount),
      balanceAfter: Number(r.balance_after),
      jobId: r.job_id,
      model: r.model,
      resolution: r.resolution,
      note: r.note,
      createdAt: new Date(r.created_at),
    })),
    total,
  };
}

/** Images and credits charged per model since `since` (the hub's month). */
export async function chargesByModel(
  db: Db,
  userId: string,
  since: Date,
): Promise<Array<{ model: string; resolution: string; images: number; credits: number }>> {
  const rows = await executeRows<{ model: string; resolution: string; images: number; credits: number }>(
    db,
    sql`select model, resolution, count(*)::int as images, (-sum(amount))::int as credits
        from credit_movements where user_id = ${userId}::uuid and kind = 'charge' and created_at >= ${since.toISOString()}::timestamptz
        group by model, resolution order by model, resolution`,
  );
  return rows.map((r) => ({ model: r.model, resolution: r.resolution, images: Number(r.images), credits: Number(r.credits) }));
}

function state(balance: number, reserved: number): CreditState {
  return { balance, reserved, available: balance - reserved };
}

function isUniqueViolation(err: unknown): boolean {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === "23505") return true;
  }
  return false;
}
