/**
 * API keys and users.
 *
 * Format: `sk_` + 32 random base62 characters + 6 base62 characters of CRC-32 over the random part
 * (GitHub's token scheme: scanners and this service can tell a real key from a typo offline). Only a
 * SHA-256 hash is stored, with the first 11 characters as a display prefix used for listing and revoking.
 *
 * @example
 * Scopes: a key may call every area (`scopes` null, the default) or only the areas it names (`qr`,
 * `photo`, `social`). A key meant to sit in a public page (`<img src=".../generate/{apiKey}/...">`) is made
 * with `["qr"]`, so whoever copies it can make QR codes and nothing else.
 *
 * @example
 * const { key } = await createApiKey(db, userId, "ci");
 * const { key: embeddable } = await createApiKey(db, userId, "shop page", { scopes: ["qr"] });
 * const found = await verifyApiKey(db, key); // { userId, keyId, scopes } or null when unknown, revoked or malformed
 */
import { and, eq, isNull, lt, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { prepared } from "../../db/prepared";
import { apiKeys, users } from "../../db/schema";
import { base62Fixed, CONTROL_CHARACTER, constantTimeEqual, crc32, randomBase62, sha256Hex } from "../lib/encoding";
import type { ApiKeyCache, VerifiedKey } from "../lib/key-cache";
import { isApiKeyScope, mayHavePages, normaliseScopes, type ApiKeyScope } from "../lib/scopes";

export { describeScopes, parseOrigins, parseScopes, type ApiKeyScope } from "../lib/scopes";

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
  /** null: every area. */
  scopes: ApiKeyScope[] | null;
  /** Origins of the pages the key may be used from; null: any. */
  allowedOrigins: string[] | null;
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
  if (cached) return { userId: cached.userId, keyId: cached.keyId, scopes: cached.scopes, allowedOrigins: cached.allowedOrigins, fresh: false };
  const [row] = await prepared(db, "api_key_by_hash", () =>
    db
      .select({
        id: apiKeys.id,
        userId: apiKeys.userId,
        hash: apiKeys.hash,
        revokedAt: apiKeys.revokedAt,
        scopes: apiKeys.scopes,
        allowedOrigins: apiKeys.allowedOrigins,
      })
      .from(apiKeys)
      .where(eq(apiKeys.hash, sql.placeholder("hash")))
      .limit(1),
  ).execute({ hash });
  // The lookup is by hash already; the comparison below keeps the check explicit and constant-time.
  if (!row || row.revokedAt || !constantTimeEqual(row.hash, hash)) return null;
  const verified: VerifiedKey = {
    userId: row.userId,
    keyId: row.id,
    scopes: storedScopes(row.scopes),
    allowedOrigins: row.allowedOrigins,
  };
  cache?.set(hash, verified, now);
  return { userId: verified.userId, keyId: verified.keyId, scopes: verified.scopes, allowedOrigins: verified.allowedOrigins, fresh: true };
}

/** Records use at most once a minute per key, so a busy key does not write on every request. */
export async function touchApiKey(db: Db, keyId: string): Promise<void> {
  await db
    .update(apiKeys)
    .set({ lastUsedAt: sql`now()` })
    .where(and(eq(apiKeys.id, keyId), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, sql`now() - interval '60 seconds'`))));
}

export async function createUser(db: Db, email: string): Promise<{ userId: string }> {
  const [row] = await db
    .insert(users)
    .values({ email: normaliseEmail(email) })
    .returning({ id: users.id });
  return { userId: row!.id };
}

export async function findUserByEmail(db: Db, email: string): Promise<{ userId: string } | null> {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(eq(users.email, normaliseEmail(email)))
    .limit(1);
  return row ? { userId: row.id } : null;
}

export interface CreateApiKeyOptions {
  /** The areas the key may call; null or absent: every area. */
  scopes?: readonly ApiKeyScope[] | null;
  /**
   * Origins of the pages a `qr`-only key may be used from (as `parseOrigins` gives them); null or absent:
   * any. Only for a key whose scopes are `["qr"]`: a key that can publish or buy belongs on a server.
   */
  allowedOrigins?: readonly string[] | null;
  /** Store this well-formed key instead of a new one (a dev key shared by two local databases). */
  key?: string;
}

/** A key's scopes as the table stores them: names this version does not know are dropped; all of them is null. */
function storedScopes(scopes: string[] | null): ApiKeyScope[] | null {
  return normaliseScopes(scopes?.filter(isApiKeyScope));
}

/**
 * What is wrong with a key's name (1 to 100 characters, no line breaks or other control characters: the
 * name is shown in lists and in the hub's copyable shell steps), or null.
 */
export function keyNameProblem(name: string): string | null {
  if (name.length < 1 || name.length > 100) return "a key's name has 1 to 100 characters";
  if (CONTROL_CHARACTER.test(name)) return "a key's name must not contain line breaks or other control characters";
  return null;
}

/** A new key for the user, with every area unless `scopes` names some. */
export async function createApiKey(
  db: Db,
  userId: string,
  name = "default",
  options: CreateApiKeyOptions = {},
): Promise<{ key: string; prefix: string; scopes: ApiKeyScope[] | null; allowedOrigins: string[] | null }> {
  const key = options.key ?? generateApiKey();
  if (!isWellFormedApiKey(key)) throw new Error("not a well-formed API key");
  const nameProblem = keyNameProblem(name);
  if (nameProblem) throw new Error(nameProblem);
  const scopes = normaliseScopes(options.scopes);
  const allowedOrigins = options.allowedOrigins?.length ? [...options.allowedOrigins] : null;
  if (allowedOrigins && !mayHavePages(scopes)) throw new Error("allowed origins are only for a key with the qr scope alone");
  const prefix = key.slice(0, DISPLAY_PREFIX_LENGTH);
  await db.insert(apiKeys).values({ userId, prefix, hash: await hashApiKey(key), name, scopes, allowedOrigins });
  return { key, prefix, scopes, allowedOrigins };
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
    scopes: storedScopes(r.scopes),
    allowedOrigins: r.allowedOrigins,
    createdAt: r.createdAt.toISOString(),
    lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
    revokedAt: r.revokedAt?.toISOString() ?? null,
  }));
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}
