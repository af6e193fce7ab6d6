/**
 * Idempotency keys for POST /posts: a retry of the same request never makes a second post.
 *
 * The key row is inserted in its own statement (state `processing`, fingerprint, lock expiry) before any work.
 * On conflict the existing row decides: another fingerprint -> 409 IDEMPOTENCY_KEY_REUSED; `processing` with a
 * live lock -> 409 REQUEST_IN_PROGRESS (Retry-After: 10); `done` -> replay of the original post, or 410 when
 * the post was purged. An expired lock (a request that crashed) is taken over with a conditional UPDATE.
 *
 * The lock expiry doubles as a fencing token: the request that holds the key is the one whose `lockedUntil`
 * is in the row. Completion (`done`, in the post's transaction) and release are conditional on it, so a slow
 * request whose lock was taken over can neither complete nor release the key: its transaction rolls back and
 * only one post ever exists per key. Keys are never deleted except by `release` of a request that made no
 * side effect.
 *
 * @example
 * const claim = await claimKey(db, { userId, key, fingerprint, now, lockMs: KEY_LOCK_MS });
 * if (claim.kind === "claimed") { ...; await completeKey(tx, claim.lock, postId, 202, now); }
 */
import { withImageDigests, type InlineImages } from "../http/inline-images";
import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { idempotencyKeys } from "../../db/schema";
import { ApiError } from "../http/errors";
import { canonicalJson, sha256Hex } from "../lib/encoding";
import { readIdempotencyKey } from "../http/idempotency-key";

/** How long a request may hold its key before a retry may take it over (fetching ten images fits well inside). */
export const KEY_LOCK_MS = 60_000;

/** Seconds a client should wait before retrying a request that is still in progress (the contract's value). */
export const RETRY_AFTER_SECONDS = 10;

export interface KeyLock {
  userId: string;
  key: string;
  lockedUntil: Date;
}

export type Claim = { kind: "claimed"; lock: KeyLock; tookOver: boolean } | { kind: "replay"; postId: string; responseStatus: number };

type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

/**
 * The header value as a key. `"abc"` (an RFC 8941 sf-string, as the IETF draft writes it) and `abc` are the
 * same key, so a client that switches styles never gets two posts.
 */
export function parseIdempotencyKey(header: string | undefined): string {
  const key = readIdempotencyKey(header);
  if (key === null) {
    throw new ApiError(
      "IDEMPOTENCY_KEY_REQUIRED",
      "The Idempotency-Key header is required: send a unique value (e.g. a UUID) per post you create, and the same value when you retry it.",
    );
  }
  return key;
}

/**
 * Hex SHA-256 of `value` as canonical JSON (object keys sorted, no whitespace), an inline image read as the
 * body streamed in counted by its bytes' digest (`withImageDigests`).
 */
export async function fingerprint(value: unknown, inline?: InlineImages): Promise<string> {
  return sha256Hex(canonicalJson(await withImageDigests(value, inline)));
}

interface ClaimInput {
  userId: string;
  key: string;
  fingerprint: string;
  now: Date;
  lockMs: number;
}

/**
 * Takes the key for this request, or says how to answer instead (replay), or throws the 409/410.
 * Loops only when the row it saw vanished or changed between two statements (a release or a takeover by
 * another request), which settles within a few rounds.
 */
export async function claimKey(db: Db, input: ClaimInput): Promise<Claim> {
  const { userId, key, now } = input;
  const lockedUntil = new Date(now.getTime() + input.lockMs);
  for (let round = 0; round < 5; round++) {
    const inserted = await db
      .insert(idempotencyKeys)
      .values({ userId, key, fingerprint: input.fingerprint, state: "processing", lockedUntil, createdAt: now, updatedAt: now })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key });
    if (inserted.length > 0) return { kind: "claimed", lock: { userId, key, lockedUntil }, tookOver: false };

    const [row] = await db
      .select()
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.userId, userId), eq(idempotencyKeys.key, key)))
      .limit(1);
    if (!row) continue; // released by a request that failed validation: try the insert again

    const outcome = settledOutcome(row, input);
    if (outcome) return outcome;

    // processing, lock expired: the holder crashed (or is far too slow). Take the key over.
    const taken = await db
      .update(idempotencyKeys)
      .set({ lockedUntil, updatedAt: now })
      .where(
        and(
          eq(idempotencyKeys.userId, userId),
          eq(idempotencyKeys.key, key),
          eq(idempotencyKeys.state, "processing"),
          row.lockedUntil ? eq(idempotencyKeys.lockedUntil, row.lockedUntil) : sql`${idempotencyKeys.lockedUntil} is null`,
        ),
      )
      .returning({ key: idempotencyKeys.key });
    if (taken.length > 0) return { kind: "claimed", lock: { userId, key, lockedUntil }, tookOver: true };
  }
  throw inProgress();
}

/** What an existing key row means for this request, or null when its lock has expired and may be taken. */
function settledOutcome(row: typeof idempotencyKeys.$inferSelect, input: ClaimInput): Claim | null {
  if (row.fingerprint !== input.fingerprint) {
    throw new ApiError(
      "IDEMPOTENCY_KEY_REUSED",
      "This Idempotency-Key was already used for a different request body. Use a new key for a new post, or resend the original body unchanged.",
    );
  }
  if (row.state === "done") {
    if (!row.postId) throw new ApiError("ORIGINAL_REMOVED", "The post created with this Idempotency-Key has been removed; the key stays consumed.");
    return { kind: "replay", postId: row.postId, responseStatus: row.responseStatus ?? 200 };
  }
  if (row.lockedUntil && row.lockedUntil.getTime() > input.now.getTime()) throw inProgress();
  return null;
}

function inProgress(): ApiError {
  return new ApiError(
    "REQUEST_IN_PROGRESS",
    `A request with this Idempotency-Key is still being processed; retry in ${RETRY_AFTER_SECONDS} seconds with the same key and body.`,
    { headers: { "Retry-After": String(RETRY_AFTER_SECONDS) } },
  );
}

/**
 * Marks the key done inside the post's transaction. Returns false when this request no longer holds the
 * key (taken over after its lock expired): the caller must roll back.
 */
export async function completeKey(tx: Tx, lock: KeyLock, postId: string, responseStatus: number, now: Date): Promise<boolean> {
  const done = await tx
    .update(idempotencyKeys)
    .set({ state: "done", postId, responseStatus, lockedUntil: null, updatedAt: now })
    .where(holds(lock))
    .returning({ key: idempotencyKeys.key });
  return done.length > 0;
}

/**
 * Releases the key of a request that was refused before any side effect, so the client can fix the body and
 * retry with the same key. Only the holder's own `processing` row is deleted.
 */
export async function releaseKey(db: Db, lock: KeyLock): Promise<void> {
  await db.delete(idempotencyKeys).where(holds(lock));
}

function holds(lock: KeyLock) {
  return and(
    eq(idempotencyKeys.userId, lock.userId),
    eq(idempotencyKeys.key, lock.key),
    eq(idempotencyKeys.state, "processing"),
    eq(idempotencyKeys.lockedUntil, lock.lockedUntil),
  );
}

/** The key's row as it stands, for a request that lost its key and must say what happened instead. */
export async function readKey(db: Db, userId: string, key: string) {
  const [row] = await db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.userId, userId), eq(idempotencyKeys.key, key)))
    .limit(1);
  return row ?? null;
}

export { inProgress as requestInProgressError };
