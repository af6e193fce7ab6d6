/**
 * API keys and users.
 *
 * Format: `sk_` + 32 random base62 characters + 6 base62 characters of CRC-32 over the random part
 * (GitHub's token scheme: scanners and this service can tell a real key from a typo offline). Only a
 * SHA-256 hash is stored, with the first 11 characters as a display prefix used for listing and revoking.
 *
 * @example
 * const { key } = await createApiKey(db, userId, "ci");
 * const userId = await verifyApiKey(db, key); // null when unknown, revoked or malformed
 */
import { and, eq, isNull, lt, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { apiKeys, users } from "../../db/schema";
import { base62Fixed, constantTimeEqual, crc32, randomBase62, sha256Hex } from "../lib/encoding";
import type { ApiKeyCache, VerifiedKey } from "./key-cache";

const KEY_PREFIX = "sk_";
const RANDOM_LENGTH = 32;
const DISPLAY_PREFIX_LENGTH = 11;
const KEY_PATTERN = /^sk_[0-9A-Za-z]{38}$/;

export function generateApiKey(): string {
  const random = randomBase62(RANDOM_LENGTH);
  return `${KEY_PREFIX}${random}${base62Fixed(crc32(new TextEncoder().encode(random)))}`;
}

/** Shape and checksum check, done before any database lookup. */
export function isWellFormedApiKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const random = key.slice(KEY_PREFIX.length, KEY_PREFIX.length + RANDOM_LENGTH);
  const checksum = key.slice(KEY_PREFIX.length + RANDOM_LENGTH);
  return constantTimeEqual(checksum, base62Fixed(crc32(new TextEncoder().encode(random))));
}

export function looksLikeApiKey(value: string): boolean {
  return value.startsWith(KEY_PREFIX);
}

export const hashApiKey = (key: string) => sha256Hex(key);

export interface ApiKeyRecord {
  prefix: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/**
 * Returns the owner's user id for a valid, unrevoked key; null otherwise. With a cache, a key verified in
 * the last few seconds is not looked up again (`fresh` tells the caller whether the database was asked).
 */
export async function verifyApiKey(db: Db, key: string, cache?: ApiKeyCache): Promise<(VerifiedKey & { fresh: boolean }) | null> {
  if (!isWellFormedApiKey(key)) return null;
  const hash = await hashApiKey(key);
  const now = Date.now();
  const cached = cache?.get(hash, now);
  // Written out rather than spread: a spread's result took a new hidden class on every request here.
  if (cached) return { userId: cached.userId, keyId: cached.keyId, fresh: false };
  const [row] = await db
    .select({ id: apiKeys.id, userId: apiKeys.userId, hash: apiKeys.hash, revokedAt: apiKeys.revokedAt })
    .from(apiKeys)
    .where(eq(apiKeys.hash, hash))
    .limit(1);
  // The lookup is by hash already; the comparison below keeps the check explicit and constant-time.
  if (!row || row.revokedAt || !constantTimeEqual(row.hash, hash)) return null;
  const verified = { userId: row.userId, keyId: row.id };
  cache?.set(hash, verified, now);
  return { userId: verified.userId, keyId: verified.keyId, fresh: true };
}

/** Records use at most once a minute per key, so a busy key does not write on every request. */
export async function touchApiKey(db: Db, keyId: string): Promise<void> {
  await db
    .update(apiKeys)
    .set({ lastUsedAt: sql`now()` })
    .where(and(eq(apiKeys.id, keyId), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, sql`now() - interval '60 seconds'`))));
}

export async function createUser(db: Db, email: string): Promise<{ userId: string }> {
  const [row] = await db.insert(users).values({ email: normaliseEmail(email) }).returning({ id: users.id });
  return { userId: row!.id };
}

export async function findUserByEmail(db: Db, email: string): Promise<{ userId: string } | null> {
  const [row] = await db.select({ id: users.id }).from(users).where(eq(users.email, normaliseEmail(email))).limit(1);
  return row ? { userId: row.id } : null;
}

/** A new key for the user; `key` stores a given well-formed key instead (a dev key shared by two local databases). */
export async function createApiKey(db: Db, userId: string, name = "default", key = generateApiKey()): Promise<{ key: string; prefix: string }> {
  if (!isWellFormedApiKey(key)) throw new Error("not a well-formed API key");
  const prefix = key.slice(0, DISPLAY_PREFIX_LENGTH);
  await db.insert(apiKeys).values({ userId, prefix, hash: await hashApiKey(key), name });
  return { key, prefix };
}

/** Revokes by display prefix; returns false when no live key has it. */
export async function revokeApiKey(db: Db, prefix: string): Promise<boolean> {
  const rows = await db
    .update(apiKeys)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(apiKeys.prefix, prefix), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id });
  return rows.length > 0;
}

export async function listApiKeys(db: Db, userId: string): Promise<ApiKeyRecord[]> {
  const rows = await db.select().from(apiKeys).where(eq(apiKeys.userId, userId)).orderBy(apiKeys.createdAt);
  return rows.map((r) => ({
    prefix: r.prefix,
    name: r.name,
    createdAt: r.createdAt.toISOString(),
    lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
    revokedAt: r.revokedAt?.toISOString() ?? null,
  }));
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}
