/**
 * The database tables. Postgres is the single source of truth; Redis and the queue only hold what may be lost.
 * Money is kept in exact numerics, never floats. Timestamps are `timestamptz`.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

export const users = pgTable("users", {
  id: uuid("id").primaryKey().defaultRandom(),
  email: text("email").notNull().unique(),
  /** `sub` of an identity-provider ID token mapped to this user (issuer + "|" + sub). */
  externalSubject: text("external_subject").unique(),
  createdAt: ts("created_at").notNull().defaultNow(),
});

export const apiKeys = pgTable(
  "api_keys",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    /** The first characters of the key, shown in listings and used to revoke; not secret. */
    prefix: text("prefix").notNull().unique(),
    /** Hex SHA-256 of the whole key; the key itself is never stored. */
    hash: text("hash").notNull().unique(),
    name: text("name").notNull().default("default"),
    createdAt: ts("created_at").notNull().defaultNow(),
    lastUsedAt: ts("last_used_at"),
    revokedAt: ts("revoked_at"),
  },
  (t) => [index("api_keys_user_idx").on(t.userId)],
);

export const socialAccounts = pgTable(
  "social_accounts",
  {
    /** `<platform>:<platformAccountId>`; stable across reconnection. */
    id: text("id").notNull(),
    userId: uuid("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    platform: text("platform").notNull(),
    platformAccountId: text("platform_account_id").notNull(),
    name: text("name").notNull(),
    selected: boolean("selected").notNull().default(true),
    /** AES-GCM ciphertext (base64url iv.ciphertext) of the platform access token. */
    tokenCiphertext: text("token_ciphertext").notNull(),
    /** active | invalid | expired */
    tokenStatus: text("token_status").notNull().default("active"),
    tokenError: text("token_error"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.id] })],
);

export const media = pgTable(
  "media",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    storageKey: text("storage_key").notNull(),
    url: text("url").notNull(),
    mimeType: text("mime_type").notNull(),
    width: integer("width").notNull(),
    height: integer("height").notNull(),
    bytes: integer("bytes").notNull(),
    sha256: text("sha256").notNull(),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [index("media_user_idx").on(t.userId)],
);

export interface PostImage {
  url: string;
  width: number;
  height: number;
  mediaId?: string;
}

export const posts = pgTable(
  "posts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    caption: text("caption").notNull().default(""),
    hashtags: jsonb("hashtags").$type<string[]>().notNull().default(sql`'[]'::jsonb`),
    images: jsonb("images").$type<PostImage[]>().notNull().default(sql`'[]'::jsonb`),
    scheduledFor: ts("scheduled_for"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
    cancelledAt: ts("cancelled_at"),
  },
  (t) => [index("posts_user_created_idx").on(t.userId, t.createdAt)],
);

export const deliveries = pgTable(
  "deliveries",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    postId: uuid("post_id").notNull().references(() => posts.id, { onDelete: "cascade" }),
    userId: uuid("user_id").notNull(),
    accountId: text("account_id").notNull(),
    platform: text("platform").notNull(),
    /** pending | publishing | published | failed | cancelled */
    status: text("status").notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    /** When the target is next due; null once it is final (published, failed for good, cancelled). */
    nextAttemptAt: ts("next_attempt_at"),
    lockedUntil: ts("locked_until"),
    jobId: text("job_id"),
    /** Platform-side intermediate id kept between steps (a photoplatform container), so a retry never publishes twice. */
    providerContainerId: text("provider_container_id"),
    providerPostId: text("provider_post_id"),
    publishedAt: ts("published_at"),
    /** The last attempt's outcome was ambiguous: reconcile with the platform before sending again. */
    ambiguous: boolean("ambiguous").notNull().default(false),
    errorCode: text("error_code"),
    errorMessage: text("error_message"),
    lastAttemptAt: ts("last_attempt_at"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("deliveries_post_account_idx").on(t.postId, t.accountId),
    index("deliveries_due_idx").on(t.status, t.nextAttemptAt),
  ],
);

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    userId: uuid("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    key: text("key").notNull(),
    fingerprint: text("fingerprint").notNull(),
    /** processing | done */
    state: text("state").notNull().default("processing"),
    /** No foreign key: the post may be purged while the key stays consumed. */
    postId: uuid("post_id"),
    responseStatus: integer("response_status"),
    lockedUntil: ts("locked_until"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.key] })],
);

export const generations = pgTable(
  "generations",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    model: text("model").notNull(),
    resolution: text("resolution").notNull(),
    aspectRatio: text("aspect_ratio").notNull(),
    images: integer("images").notNull(),
    credits: integer("credits").notNull(),
    usd: numeric("usd", { precision: 12, scale: 4 }).notNull(),
    inr: numeric("inr", { precision: 12, scale: 2 }).notNull(),
    status: text("status").notNull().default("succeeded"),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [index("generations_user_idx").on(t.userId)],
);

/** The built-in platform sandbox: what the fake platforms "published". */
export const sandboxItems = pgTable(
  "sandbox_items",
  {
    id: text("id").primaryKey(),
    platform: text("platform").notNull(),
    platformAccountId: text("platform_account_id").notNull(),
    /** feed | photo | container | media */
    kind: text("kind").notNull(),
    /** For containers: IN_PROGRESS | FINISHED | PUBLISHED | ERROR. For the rest: published | unpublished. */
    state: text("state").notNull(),
    caption: text("caption").notNull().default(""),
    imageUrls: jsonb("image_urls").$type<string[]>().notNull().default(sql`'[]'::jsonb`),
    attachedIds: jsonb("attached_ids").$type<string[]>().notNull().default(sql`'[]'::jsonb`),
    createdAt: ts("created_at").notNull().defaultNow(),
    /** Milliseconds since epoch when a container becomes FINISHED. */
    readyAt: bigint("ready_at", { mode: "number" }),
  },
  (t) => [index("sandbox_items_account_idx").on(t.platformAccountId)],
);

export const sandboxFaults = pgTable("sandbox_faults", {
  platformAccountId: text("platform_account_id").primaryKey(),
  kind: text("kind").notNull(),
  remaining: integer("remaining").notNull(),
});

export const sandboxTokens = pgTable("sandbox_tokens", {
  token: text("token").primaryKey(),
  platformAccountId: text("platform_account_id").notNull(),
  valid: boolean("valid").notNull().default(true),
});
