/**
 * The database tables. Postgres is the single source of truth; Redis and the queue only hold what may be lost.
 * Money is kept in exact numerics, never floats. Timestamps are `timestamptz`.
 */
import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, jsonb, numeric, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";

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
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The first characters of the key, shown in listings and used to revoke; not secret. */
    prefix: text("prefix").notNull().unique(),
    /** Hex SHA-256 of the whole key; the key itself is never stored. */
    hash: text("hash").notNull().unique(),
    name: text("name").notNull().default("default"),
    /** The areas the key may call (`qr`, `photo`, `social`); null means every area, today's and later ones. */
    scopes: text("scopes").array(),
    /**
     * Pages a `qr` key may be used from: origins (`https://shop.example`) that the request's Origin or Referer
     * must match; null: any.
     */
    allowedOrigins: text("allowed_origins").array(),
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
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    platform: text("platform").notNull(),
    platformAccountId: text("platform_account_id").notNull(),
    name: text("name").notNull(),
    selected: boolean("selected").notNull().default(true),
    /** AES-GCM ciphertext (base64url iv.ciphertext) of the platform access token. */
    tokenCiphertext: text("token_ciphertext").notNull(),
    /** active | invalid | expired */
    tokenStatus: text("token_status").notNull().default("active"),
    tokenError: text("token_error"),
    /** For a photoplatform account connected through a page: that page's account id (`pageplatform:…`); else null. */
    pageAccountId: text("page_account_id"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.id] })],
);

export const media = pgTable(
  "media",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
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
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    caption: text("caption").notNull().default(""),
    hashtags: jsonb("hashtags").$type<string[]>().notNull().default(sql`'[]'::jsonb`),
    images: jsonb("images").$type<PostImage[]>().notNull().default(sql`'[]'::jsonb`),
    scheduledFor: ts("scheduled_for"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
    cancelledAt: ts("cancelled_at"),
    /**
     * The post-level status as stored: kept by triggers (migration 0004) from the deliveries, so every writer
     * keeps it right. `scheduled` here means "outstanding, none attempted, has a scheduledFor"; it reads as
     * `queued` once scheduledFor has passed (src/social/post-record.ts).
     */
    status: text("status").notNull().default("failed"),
  },
  (t) => [
    index("posts_user_created_idx").on(t.userId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("posts_user_status_created_idx").on(t.userId, t.status, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // The retention purge's way to the oldest posts, instead of reading the whole table every sweep.
    index("posts_created_idx").on(t.createdAt),
  ],
);

/**
 * Per-user post counts by stored status as signed deltas, appended by a trigger on posts (migration 0004):
 * writers only insert, so they never wait on each other; readers sum a user's rows and fold them into one row
 * per status now and then (src/social/post-record.ts). No foreign key: rows are written while a user's posts
 * are deleted with the user.
 */
export const postStatusCounts = pgTable(
  "post_status_counts",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    userId: uuid("user_id").notNull(),
    status: text("status").notNull(),
    n: integer("n").notNull(),
  },
  (t) => [index("post_status_counts_user_idx").on(t.userId, t.status)],
);

export const deliveries = pgTable(
  "deliveries",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    postId: uuid("post_id")
      .notNull()
      .references(() => posts.id, { onDelete: "cascade" }),
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
  (t) => [uniqueIndex("deliveries_post_account_idx").on(t.postId, t.accountId), index("deliveries_due_idx").on(t.status, t.nextAttemptAt)],
);

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
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

/**
 * One product-photography request (area B): the record behind `Idempotency-Key` replays and behind
 * `Prefer: respond-async` jobs. The input images are kept in storage (keys in `inputKeys`), never here.
 */
export const photoJobs = pgTable(
  "photo_jobs",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The client's Idempotency-Key, when it sent one; unique per user. */
    idempotencyKey: text("idempotency_key"),
    /** SHA-256 of the canonical request body: the same key with another body is refused. */
    fingerprint: text("fingerprint").notNull(),
    /** queued | running | succeeded | failed */
    status: text("status").notNull().default("queued"),
    async: boolean("async").notNull().default(false),
    /** The validated request with image bytes replaced by storage keys; what a job runner needs. */
    request: jsonb("request").$type<Record<string, unknown>>().notNull(),
    /** The response body's `data` once finished (succeeded: the result; failed: null). */
    result: jsonb("result").$type<Record<string, unknown>>(),
    responseStatus: integer("response_status"),
    errorCode: text("error_code"),
    errorMessage: text("error_message"),
    /** A runner holds the job until then; an expired lock (a crashed process) may be taken over. */
    lockedUntil: ts("locked_until"),
    attempts: integer("attempts").notNull().default(0),
    /**
     * When every item of an async job had its prediction (or its error): from then on the job is finished by
     * the predictions' callbacks, or by the sweep reading them, and no runner holds it.
     */
    dispatchedAt: ts("dispatched_at"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
    finishedAt: ts("finished_at"),
  },
  (t) => [
    uniqueIndex("photo_jobs_user_key_idx").on(t.userId, t.idempotencyKey),
    index("photo_jobs_user_created_idx").on(t.userId, t.createdAt),
    index("photo_jobs_due_idx").on(t.status, t.lockedUntil),
  ],
);

/**
 * One row per item of a photo job made by a provider's prediction: the prediction's id, stored as soon as it
 * is created, so a restarted runner, a retried request or the sweep picks up the same prediction instead
 * of paying for a second one; and the item's outcome once it is finished.
 */
export const photoJobItems = pgTable(
  "photo_job_items",
  {
    jobId: uuid("job_id")
      .notNull()
      .references(() => photoJobs.id, { onDelete: "cascade" }),
    itemIndex: integer("item_index").notNull(),
    /** The provider's prediction id; null for an item that failed before one was made (a bad input). */
    predictionId: text("prediction_id"),
    /**
     * The create under way, written before it is sent: the product input URL it sends, and when (null once a
     * prediction id is stored). A create whose answer was never stored is found among the provider's recent
     * predictions by this URL (a retried synchronous request stores its inputs again, under new URLs) from
     * this time (the sweep moves `updated_at` on).
     */
    createInputUrl: text("create_input_url"),
    createSentAt: ts("create_sent_at"),
    /** predicting | finishing | succeeded | failed */
    status: text("status").notNull().default("predicting"),
    /**
     * predicting: when the sweep may read the prediction whose callback has not come; finishing: when the
     * finisher's hold on the item ends (a dead finisher's item is finished again by the sweep).
     */
    checkAfter: ts("check_after"),
    /** The finished item as the job's result lists it (where its images are, or its error). */
    result: jsonb("result").$type<Record<string, unknown>>(),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.jobId, t.itemIndex] }),
    uniqueIndex("photo_job_items_prediction_idx").on(t.predictionId),
    index("photo_job_items_due_idx").on(t.status, t.checkAfter),
  ],
);

/** Webhook deliveries already taken (Standard Webhooks `webhook-id`): a replayed delivery changes nothing. */
export const photoWebhookDeliveries = pgTable(
  "photo_webhook_deliveries",
  {
    webhookId: text("webhook_id").primaryKey(),
    predictionId: text("prediction_id"),
    receivedAt: ts("received_at").notNull().defaultNow(),
  },
  (t) => [index("photo_webhook_deliveries_received_idx").on(t.receivedAt)],
);

export const generations = pgTable(
  "generations",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The request this image belonged to; one row per generated image. */
    jobId: uuid("job_id"),
    provider: text("provider").notNull().default("local"),
    /** Position of the product in the request's productImages; with jobId it makes a row unique. */
    itemIndex: integer("item_index").notNull().default(0),
    label: text("label"),
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
  (t) => [index("generations_user_idx").on(t.userId, t.createdAt), uniqueIndex("generations_job_item_idx").on(t.jobId, t.itemIndex)],
);

/**
 * A user's AI generation credits (area B): `balance` is the sum of the user's `credit_movements`, `reserved`
 * the part held by `credit_holds` for images being made. Every change is one conditional statement on this
 * row, so concurrent requests queue on it and the checks hold: nothing is reserved beyond the balance, and
 * the balance never goes below what is reserved (nor below zero).
 */
export const creditAccounts = pgTable(
  "credit_accounts",
  {
    userId: uuid("user_id")
      .primaryKey()
      .references(() => users.id, { onDelete: "cascade" }),
    balance: integer("balance").notNull().default(0),
    reserved: integer("reserved").notNull().default(0),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
  },
  (t) => [check("credit_accounts_within_balance", sql`${t.reserved} >= 0 and ${t.balance} >= ${t.reserved}`)],
);

/**
 * The credit ledger: every change of a balance (`grant`: the sign-up grant and the operator's top-ups, with a
 * note; `charge`: one delivered image, keyed by its job and item so it is charged once), with the balance
 * after it. A user's rows sum to `credit_accounts.balance`.
 */
export const creditMovements = pgTable(
  "credit_movements",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** grant | charge */
    kind: text("kind").notNull(),
    amount: integer("amount").notNull(),
    balanceAfter: integer("balance_after").notNull(),
    jobId: uuid("job_id"),
    itemIndex: integer("item_index"),
    model: text("model"),
    resolution: text("resolution"),
    note: text("note"),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [index("credit_movements_user_idx").on(t.userId, t.id), uniqueIndex("credit_movements_charge_idx").on(t.jobId, t.itemIndex)],
);

/**
 * Credits held for one item of a product-photography job between the check and the image: `held` counts in
 * `credit_accounts.reserved`; `settled` became a charge; `released` went back (the item failed, or its
 * runner died and the sweep let it go). No foreign key to the job: a hold outlives the job row of a refused
 * request only long enough to be released.
 */
export const creditHolds = pgTable(
  "credit_holds",
  {
    jobId: uuid("job_id").notNull(),
    itemIndex: integer("item_index").notNull(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    amount: integer("amount").notNull(),
    /** held | settled | released */
    state: text("state").notNull().default("held"),
    expiresAt: ts("expires_at").notNull(),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.itemIndex] }), index("credit_holds_held_idx").on(t.expiresAt).where(sql`state = 'held'`)],
);

/**
 * The user's gallery: one row per generated image (area B), with what made it and where its PNG and
 * thumbnail are in storage. Keyed by job and item, so a resumed job adds no second row.
 */
export const galleryItems = pgTable(
  "gallery_items",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    jobId: uuid("job_id").notNull(),
    itemIndex: integer("item_index").notNull(),
    label: text("label"),
    templateId: text("template_id"),
    scenePrompt: text("scene_prompt"),
    model: text("model").notNull(),
    resolution: text("resolution").notNull(),
    aspectRatio: text("aspect_ratio").notNull(),
    width: integer("width").notNull(),
    height: integer("height").notNull(),
    credits: integer("credits").notNull(),
    usd: numeric("usd", { precision: 12, scale: 4 }).notNull(),
    inr: numeric("inr", { precision: 12, scale: 2 }).notNull(),
    storageKey: text("storage_key").notNull(),
    thumbKey: text("thumb_key").notNull(),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("gallery_items_job_item_idx").on(t.jobId, t.itemIndex),
    index("gallery_items_user_created_idx").on(t.userId, t.createdAt.desc(), t.id.desc()),
  ],
);

/** The built-in platform sandbox: what the fake platforms "published". */
export const sandboxItems = pgTable(
  "sandbox_items",
  {
    id: text("id").primaryKey(),
    /** Whose sandbox this is: the user who connected the account, or one consent of the OAuth dialog ('' = before owners). */
    owner: text("owner").notNull().default(""),
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
  (t) => [index("sandbox_items_account_idx").on(t.owner, t.platformAccountId)],
);

/** Unused since 0003 (faults became per owner in sandbox_account_faults); kept so the migration is purely additive. */
export const sandboxFaults = pgTable("sandbox_faults", {
  platformAccountId: text("platform_account_id").primaryKey(),
  kind: text("kind").notNull(),
  remaining: integer("remaining").notNull(),
});

/** Pending faults of one owner's sandbox account. */
export const sandboxAccountFaults = pgTable(
  "sandbox_account_faults",
  {
    owner: text("owner").notNull(),
    platformAccountId: text("platform_account_id").notNull(),
    kind: text("kind").notNull(),
    remaining: integer("remaining").notNull(),
  },
  (t) => [primaryKey({ columns: [t.owner, t.platformAccountId] })],
);

export const sandboxTokens = pgTable("sandbox_tokens", {
  token: text("token").primaryKey(),
  /** The sandbox the token speaks in (see sandbox_items.owner). */
  owner: text("owner").notNull().default(""),
  platformAccountId: text("platform_account_id").notNull(),
  valid: boolean("valid").notNull().default(true),
});

/** Sandbox OAuth grants: authorization codes and user tokens of the sandbox's consent dialog, with the pages picked. */
export const sandboxGrants = pgTable("sandbox_grants", {
  /** The code or the user access token itself (sandbox values, never real secrets). */
  value: text("value").primaryKey(),
  /** code | user_token */
  kind: text("kind").notNull(),
  /** A fresh sandbox per consent, handed on to the user and page tokens made from it. */
  owner: text("owner").notNull().default(""),
  pageIds: jsonb("page_ids").$type<string[]>().notNull(),
  redirectUri: text("redirect_uri"),
  expiresAt: ts("expires_at").notNull(),
  usedAt: ts("used_at"),
});

/** Signed-in hub sessions. The cookie holds a random id; only its SHA-256 is stored. */
export const hubSessions = pgTable(
  "hub_sessions",
  {
    idHash: text("id_hash").primaryKey(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** Synchronizer token every state-changing hub form must carry. */
    csrfToken: text("csrf_token").notNull(),
    /** The message the next page shows once (AES-GCM ciphertext: it may hold a new API key), or null. */
    flash: text("flash"),
    createdAt: ts("created_at").notNull().defaultNow(),
    expiresAt: ts("expires_at").notNull(),
  },
  (t) => [index("hub_sessions_user_idx").on(t.userId)],
);

/** One-time sign-in links (admin CLI, embedded start). Only the SHA-256 of the token is stored. */
export const loginLinks = pgTable("login_links", {
  tokenHash: text("token_hash").primaryKey(),
  userId: uuid("user_id")
    .notNull()
    .references(() => users.id, { onDelete: "cascade" }),
  createdAt: ts("created_at").notNull().defaultNow(),
  expiresAt: ts("expires_at").notNull(),
  usedAt: ts("used_at"),
});

/** Pending OAuth/OIDC redirects: the state (hashed), and what the callback must check and send. */
export const oauthStates = pgTable("oauth_states", {
  stateHash: text("state_hash").primaryKey(),
  /** oidc | meta */
  kind: text("kind").notNull(),
  /** The hub session that started a platform connection; null for sign-in (bound by a cookie instead). */
  sessionHash: text("session_hash"),
  nonce: text("nonce"),
  codeVerifier: text("code_verifier"),
  createdAt: ts("created_at").notNull().defaultNow(),
  expiresAt: ts("expires_at").notNull(),
});

/**
 * A user's webhook endpoints (at most 10 each). The signing secret is stored encrypted (the token cipher), as
 * it must be read back to sign; after a rotation the secret it replaced also signs, until its `until`
 * (`earlierSecrets`: every secret rotated out in the overlap, so rotating twice drops none a receiver holds).
 */
export const webhookEndpoints = pgTable(
  "webhook_endpoints",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    /** The event types sent here; null means every type. */
    events: text("events").array(),
    description: text("description").notNull().default(""),
    enabled: boolean("enabled").notNull().default(true),
    /** Why it is disabled: manual | gone (the receiver answered 410) | failing (every attempt failed for 5 days). */
    disabledReason: text("disabled_reason"),
    secretCiphertext: text("secret_ciphertext").notNull(),
    /** Unused since 0017 (copied into `earlierSecrets`); kept so the migration is purely additive. */
    previousSecretCiphertext: text("previous_secret_ciphertext"),
    previousSecretUntil: ts("previous_secret_until"),
    /** Secrets rotated out that still sign beside the current one, each until its `until` (ISO time), oldest first. */
    earlierSecrets: jsonb("earlier_secrets").$type<Array<{ ciphertext: string; until: string }>>().notNull().default([]),
    /**
     * The first failed attempt of the endpoint's current run of failures (no success, and no two days without a
     * failed attempt, since); null while the endpoint answers.
     */
    failingSince: ts("failing_since"),
    /** The latest failed attempt; a failure two days or more after it begins a new run. */
    lastFailureAt: ts("last_failure_at"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
  },
  (t) => [index("webhook_endpoints_user_idx").on(t.userId, t.createdAt)],
);

/**
 * The outbox: one row per event, written by triggers in the transaction of the state change that causes it
 * (the `webhooks` migration), only for users with an endpoint that takes the event. `payload` is the message's JSON
 * text, made at its first send and then kept, so every retry and replay sends the same bytes.
 */
export const webhookMessages = pgTable(
  "webhook_messages",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    type: text("type").notNull(),
    /** The resource the event is about: a post, a photo job, an account or an endpoint (webhook.test). */
    subjectId: text("subject_id").notNull(),
    /** post.target.* events: the target's account id. */
    accountId: text("account_id"),
    payload: text("payload"),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [index("webhook_messages_user_idx").on(t.userId, t.createdAt), index("webhook_messages_created_idx").on(t.createdAt)],
);

/** One message to one endpoint: its state, the claim fence (`attempts`) and the log of attempts. */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    messageId: uuid("message_id")
      .notNull()
      .references(() => webhookMessages.id, { onDelete: "cascade" }),
    endpointId: uuid("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    userId: uuid("user_id").notNull(),
    /** pending | sending | delivered | failed */
    status: text("status").notNull().default("pending"),
    /** Attempts started; a claim's number is its fence, as for post deliveries. */
    attempts: integer("attempts").notNull().default(0),
    /** Attempts of the current round (a replay starts a new round of the retry schedule). */
    roundAttempts: integer("round_attempts").notNull().default(0),
    nextAttemptAt: ts("next_attempt_at"),
    lockedUntil: ts("locked_until"),
    jobId: text("job_id"),
    /** Every attempt: `{at, status, error, durationMs}`, the newest last. */
    log: jsonb("log").$type<WebhookAttempt[]>().notNull().default(sql`'[]'::jsonb`),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
  },
  (t) => [
    index("webhook_deliveries_due_idx").on(t.status, t.nextAttemptAt),
    index("webhook_deliveries_endpoint_idx").on(t.endpointId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("webhook_deliveries_message_idx").on(t.messageId),
  ],
);

export interface WebhookAttempt {
  at: string;
  /** The receiver's HTTP status; null when no answer came (the error says why). */
  status: number | null;
  error: string | null;
  durationMs: number;
}
