/**
 * Posts of area C: idempotent creation, reading, listing and cancellation.
 *
 * Creation order (contract rules 1-9; the key is claimed first so a retry replays instead of posting twice):
 *   1. normalise the submission and fingerprint it; claim the Idempotency-Key (or replay / 409 / 410)
 *   2. validate everything that needs no image work: schedule, every target (404, 409 reconnect,
 *      per-platform rules), media ownership; any refusal releases the key
 *   3. fetch and sniff the images; photoplatform's aspect ratio is checked from the headers, before decoding
 *   4. normalise and store the images
 *   5. one transaction: media rows, the post, one delivery per target, the key marked done
 *   6. after commit, enqueue each delivery (a lost enqueue is repaired by the sweep)
 *
 * @example
 * const { status, post } = await createPost(services, userId, key, body);
 */
import { withImageDigests } from "../http/inline-images";
import { and, asc, eq, getTableColumns, inArray, or, isNotNull, sql } from "drizzle-orm";
import { prepared } from "../../db/prepared";
import { deliveries, idempotencyKeys, media, posts, socialAccounts, type PostImage } from "../../db/schema";
import { ApiError, type ErrorDetail } from "../http/errors";
import { planSocialSize, readImageHeader, uprightSize, type NormalisedJpeg } from "../images";
import { isUuid } from "../lib/encoding";
import { groupCommit } from "../lib/group-commit";
import type { Services } from "../services";
import { platformOfAccountId, type Platform } from "./accounts";
import { bareHashtag, checkPlatformRules, photoplatformAspectOk } from "./caption";
import { claimKey, completeKey, fingerprint, KEY_LOCK_MS, readKey, releaseKey, requestInProgressError, type KeyLock } from "./idempotency";
import { galleryImageBytes } from "../photo/gallery";
import { findOwnedMedia, loadSource, mediaNotFound, sourceOfString, storeNormalised, type ImageSource, type MediaRow } from "./media";
import { listPostRecords, loadPostRecordJson, loadPostRecords, shownStatus, toPostRecord, type ListFilter } from "./post-record";
import { LIST_DEFAULT_LIMIT, type PostCreate, type PostListQuery, type PostRecord, type PostStatus } from "./schemas";

export type ImageSpec = ImageSource | { mediaId: string } | { galleryId: string };

/** A valid body in one canonical shape; its fingerprint is the idempotency fingerprint. */
export interface Submission {
  accountIds: string[];
  caption: string;
  hashtags: string[];
  images: ImageSpec[];
  /** The instant, as UTC ISO, or null for immediate delivery. */
  scheduledFor: string | null;
}

export interface CreatePostResult {
  status: 200 | 201 | 202;
  post: PostRecord;
  replayed: boolean;
}

interface Target {
  id: string;
  platform: Platform;
}

/**
 * Equivalent spellings collapse: a string accountIds and a one-element array, `#tag` and `tag`, an image
 * URL string and `{url}`, a data URI string and `{base64}`, omitted and empty caption/hashtags/images, and
 * one instant written with different offsets. `mimeType` is dropped: the format is read from the bytes.
 * Everything else (order of accounts, images and hashtags included) is significant.
 */
export function normaliseSubmission(body: PostCreate): Submission {
  return {
    accountIds: typeof body.accountIds === "string" ? [body.accountIds] : body.accountIds,
    caption: body.caption ?? "",
    hashtags: (body.hashtags ?? []).map(bareHashtag),
    images: (body.images ?? []).map((item): ImageSpec => {
      if (typeof item === "string") return sourceOfString(item);
      if ("mediaId" in item) return { mediaId: item.mediaId };
      if ("galleryId" in item) return { galleryId: item.galleryId };
      if ("url" in item) return { url: item.url };
      return { base64: item.base64 };
    }),
    scheduledFor: body.scheduledFor === undefined ? null : new Date(body.scheduledFor).toISOString(),
  };
}

export async function createPost(services: Services, userId: string, key: string, body: PostCreate): Promise<CreatePostResult> {
  const submission = normaliseSubmission(body);
  const fp = await fingerprint({ operation: "POST /api/v1/social/posts", ...submission }, services.inlineImages);
  if (submission.images.length === 0) {
    const created = await createTextPost(services, userId, { key, fingerprint: fp }, submission);
    if (created) return created;
  }
  const claim = await claimKey(services.db, { userId, key, fingerprint: fp, now: services.clock.now(), lockMs: KEY_LOCK_MS });
  if (claim.kind === "replay") return replay(services, userId, claim.postId);

  const stored: string[] = [];
  let committed = false;
  try {
    const targets = await validateTargets(services, userId, submission);
    const mediaById = await validateMedia(services, userId, submission, targets);
    const prepared = await prepareImages(services, userId, submission, targets);
    const { images, newMedia } = await storeImages(services, userId, submission, prepared, mediaById, stored);
    const outcome = await commitPost(services, claim.lock, submission, targets, images, newMedia);
    if (outcome === "lost-key") {
      await discardObjects(services, stored.splice(0));
      return await answerLostKey(services, userId, key);
    }
    committed = true;
    await enqueueDeliveries(services, outcome.deliveryIds, submission.scheduledFor);
    const [post] = await loadPostRecords(services.db, userId, [outcome.postId], services.clock.now());
    return { status: submission.scheduledFor ? 201 : 202, post: post!, replayed: false };
  } catch (err) {
    if (!committed) {
      // Nothing was committed: free the key so the client can correct the request (or retry a 500) with it.
      await releaseKey(services.db, claim.lock).catch((e) => services.log.warn("releasing idempotency key failed", { err: String(e) }));
      await discardObjects(services, stored);
    }
    throw err;
  }
}

/** Stored images of a request that did not commit: nothing refers to them. */
async function discardObjects(services: Services, keys: string[]): Promise<void> {
  await Promise.all(keys.map((k) => services.storage.delete(k).catch(() => undefined)));
}

async function replay(services: Services, userId: string, postId: string): Promise<CreatePostResult> {
  const [post] = await loadPostRecords(services.db, userId, [postId], services.clock.now());
  if (!post) {
    throw new ApiError(
      "ORIGINAL_REMOVED",
      "The post created with this Idempotency-Key has been removed (retention period); the key stays consumed. Use a new key only for a new post.",
    );
  }
  return { status: 200, post, replayed: true };
}

/** Our lock was taken over while we worked and our transaction rolled back: answer as a retry would be answered. */
async function answerLostKey(services: Services, userId: string, key: string): Promise<CreatePostResult> {
  const row = await readKey(services.db, userId, key);
  if (row?.state === "done" && row.postId) return replay(services, userId, row.postId);
  throw requestInProgressError();
}

// ---------------------------------------------------------------- posts without images

/**
 * A post without images in one round trip: its targets' platforms are read from their ids
 * (`platformOfAccountId`) and checked against the platforms' rules here, then one statement checks that every
 * target is the caller's connected account with an active token, takes the Idempotency-Key straight to
 * `done`, inserts the post and one delivery per target, and returns the deliveries; the answer is built from
 * what was written. Null when the general path must answer instead, exactly as it always has: the key exists
 * (replay, 409, 410, takeover of a crashed request), or the submission is refused, here or by the statement's
 * account check (the general path claims the key first, so a retry of a stored post stays a replay even if its
 * account has since been disconnected, and then reports the refusal and releases the key).
 * Nothing is left behind on a null: the key, the post and the deliveries are written together or not at all.
 */
async function createTextPost(services: Services, userId: string, key: { key: string; fingerprint: string }, s: Submission): Promise<CreatePostResult | null> {
  const platforms = s.accountIds.map(platformOfAccountId);
  if (platforms.includes(null)) return null;
  const targets = s.accountIds.map((id, i) => ({ id, platform: platforms[i]! }));
  try {
    checkSubmission(services, s);
    checkTargets(s, targets);
  } catch (err) {
    if (err instanceof ApiError) return null;
    throw err;
  }
  const now = services.clock.now();
  const scheduledFor = s.scheduledFor ? new Date(s.scheduledFor) : null;
  const status = scheduledFor ? 201 : 202;
  // Every target pending and unattempted: the status the triggers would store (they check it anyway).
  const stored: PostStatus = scheduledFor ? "scheduled" : "queued";
  const post = {
    id: crypto.randomUUID(),
    userId,
    caption: s.caption,
    hashtags: s.hashtags,
    images: [],
    scheduledFor,
    createdAt: now,
    updatedAt: now,
    cancelledAt: null,
    status: stored,
  };
  const at = now.toISOString();
  const rows = await writeTextPost(services.db, {
    user_id: userId,
    key: key.key,
    fingerprint: key.fingerprint,
    post_id: post.id,
    status,
    at,
    caption: s.caption,
    hashtags: s.hashtags,
    scheduled_for: scheduledFor?.toISOString() ?? null,
    stored,
    due: (scheduledFor ?? now).toISOString(),
    targets: targets.map((t) => ({ account_id: t.id, platform: t.platform })),
  });
  if (rows.length === 0) return null;
  const jobs = await enqueueDeliveries(
    services,
    rows.map((r) => r.id),
    s.scheduledFor,
  );
  const targetsOut = rows.map((r) => ({ ...r, jobId: jobs.get(r.id) ?? r.jobId }));
  return { status, post: toPostRecord(post, shownStatus(stored, scheduledFor, now), targetsOut), replayed: false };
}

/** What `createTextPost` writes for one post, by the SQL names its statements read. */
interface TextPostWrite {
  user_id: string;
  key: string;
  fingerprint: string;
  post_id: string;
  /** The answer's HTTP status, kept with the key for replays. */
  status: number;
  at: string;
  caption: string;
  hashtags: string[];
  scheduled_for: string | null;
  stored: PostStatus;
  due: string;
  targets: Array<{ account_id: string; platform: Platform }>;
}

type DeliveryRow = typeof deliveries.$inferSelect;
type TextPostOutcome = { rows: DeliveryRow[] } | { error: unknown };

/**
 * Writes one text post (`textPostsStatement`) and answers its deliveries, none when nothing was written. Posts
 * created together (while the previous write is running, or in the same turn of the event loop) are written by
 * the same statement (`groupCommit`): one round trip, one commit and one run of the statement-level triggers for
 * all of them instead of one each. Each request still gets its own answer or its own error. On the Worker every
 * request has its own database handle, so each writes alone.
 */
async function writeTextPost(db: Services["db"], post: TextPostWrite): Promise<DeliveryRow[]> {
  let write = textPostWrites.get(db);
  if (!write) textPostWrites.set(db, (write = groupCommit((batch: TextPostWrite[]) => writeTextPosts(db, batch), { windowMs: 0 })));
  const outcome = await write(post);
  if ("error" in outcome) throw outcome.error;
  return outcome.rows;
}

const textPostWrites = new WeakMap<Services["db"], (post: TextPostWrite) => Promise<TextPostOutcome>>();

/**
 * The posts of a batch by one statement. Should it fail for several (one post refused by a rule the database
 * has, or a deadlock with another process's batch), every post is written on its own, so that a post fails
 * only for itself.
 */
async function writeTextPosts(db: Services["db"], batch: TextPostWrite[]): Promise<TextPostOutcome[]> {
  let rows: DeliveryRow[];
  try {
    rows = await prepared(db, "create_text_posts", () => textPostsStatement(db)).execute({ posts: JSON.stringify(batch) });
  } catch (error) {
    if (batch.length === 1) return [{ error }];
    return Promise.all(batch.map(async (post) => (await writeTextPosts(db, [post]))[0]!));
  }
  const byPost = new Map<string, DeliveryRow[]>(batch.map((p) => [p.post_id, []]));
  for (const row of rows) byPost.get(row.postId)?.push(row);
  return batch.map((p) => ({ rows: byPost.get(p.post_id)! }));
}

/**
 * `createTextPost`'s statement, prepared once per database handle (db/prepared.ts), for one post or several
 * (`posts`: a JSON array of `TextPostWrite`), each exactly as alone: every target checked to be the user's
 * account on that platform with an active token, then the key taken straight to `done` unless it exists (a key
 * twice in the batch: one of the two takes it), the post, and a delivery per target. Nothing is inserted for a
 * post whose target fails the check or whose key exists. Keys are inserted in (user, key) order, so two batches
 * that share keys wait for each other in the same order instead of deadlocking. Returns the deliveries by post,
 * then account id.
 */
function textPostsStatement(db: Services["db"]) {
  const input = db.$with("input", { postId: sql<string>`post_id`.as("post_id") }).as(
    sql`select * from json_to_recordset(${sql.placeholder("posts")}::json) as i(user_id uuid, key text, fingerprint text, post_id uuid,
      status int, at timestamptz, caption text, hashtags jsonb, scheduled_for timestamptz, stored text, due timestamptz, targets json)`,
  );
  const targets = sql`json_to_recordset(i.targets) as t(account_id text, platform text)`;
  const keyRow = db.$with("key", { postId: sql<string>`post_id`.as("post_id") }).as(
    sql`insert into ${idempotencyKeys} (user_id, key, fingerprint, state, post_id, response_status, locked_until, created_at, updated_at)
      select i.user_id, i.key, i.fingerprint, 'done', i.post_id, i.status, null, i.at, i.at
      from input i
      where json_array_length(i.targets) = (select count(*) from ${targets} join ${socialAccounts} a
        on a.user_id = i.user_id and a.id = t.account_id and a.platform = t.platform and a.token_status = 'active')
      order by i.user_id, i.key
      on conflict do nothing returning post_id`,
  );
  const postRow = db.$with("post", { id: sql<string>`id`.as("id") }).as(
    sql`insert into ${posts} (id, user_id, caption, hashtags, images, scheduled_for, created_at, updated_at, status)
      select i.post_id, i.user_id, i.caption, i.hashtags, '[]'::jsonb, i.scheduled_for, i.at, i.at, i.stored
      from key join input i on i.post_id = key.post_id returning id`,
  );
  const added = db.$with("added", getTableColumns(deliveries)).as(
    sql`insert into ${deliveries} (post_id, user_id, account_id, platform, status, next_attempt_at, created_at, updated_at)
      select i.post_id, i.user_id, t.account_id, t.platform, 'pending', i.due, i.at, i.at
      from post join input i on i.post_id = post.id cross join ${targets} returning *`,
  );
  return db.with(input, keyRow, postRow, added).select().from(added).orderBy(asc(added.postId), asc(added.accountId));
}

// ---------------------------------------------------------------- validation (no image work)

async function validateTargets(services: Services, userId: string, s: Submission): Promise<Target[]> {
  checkSubmission(services, s);
  const rows = await services.db
    .select({ id: socialAccounts.id, platform: socialAccounts.platform, tokenStatus: socialAccounts.tokenStatus })
    .from(socialAccounts)
    .where(and(eq(socialAccounts.userId, userId), inArray(socialAccounts.id, s.accountIds)));
  const byId = new Map(rows.map((r) => [r.id, r]));
  const missing = s.accountIds.filter((id) => !byId.has(id));
  if (missing.length > 0) {
    throw new ApiError(
      "ACCOUNT_NOT_FOUND",
      `No connected account ${missing.map((m) => JSON.stringify(m)).join(", ")} for this API key's owner; use ids from GET /api/v1/social/accounts.`,
      {
        details: missing.map((id) => ({ path: "accountIds", message: `${id} is not connected` })),
      },
    );
  }
  const reconnect = s.accountIds.filter((id) => byId.get(id)!.tokenStatus !== "active");
  if (reconnect.length > 0) {
    throw new ApiError(
      "ACCOUNT_NEEDS_RECONNECT",
      `Reconnect ${reconnect.join(", ")} in the social hub before publishing to ${reconnect.length === 1 ? "it" : "them"}.`,
      {
        details: reconnect.map((id) => ({ path: "accountIds", message: `${id} must be reconnected` })),
      },
    );
  }
  const targets = s.accountIds.map((id) => ({ id, platform: byId.get(id)!.platform as Platform }));
  checkTargets(s, targets);
  return targets;
}

const LAST_INSTANT = Date.parse("9999-12-31T23:59:59.999Z");

/** What validates a submission without the database: the schedule's window, and that it has something to post. */
function checkSubmission(services: Services, s: Submission): void {
  const now = services.clock.now().getTime();
  if (s.scheduledFor) {
    const at = Date.parse(s.scheduledFor);
    if (at <= now) throw field("scheduledFor", "must be in the future");
    // Any future instant the database can hold: an offset may carry a year-9999 time past 9999-12-31 UTC.
    if (at > LAST_INSTANT) throw field("scheduledFor", "must be before the year 10000 (UTC)");
  }
  if (s.caption.trim() === "" && s.images.length === 0) {
    throw field("caption", "a post needs a caption or at least one image");
  }
}

/** Each target's platform rules (caption length, hashtags, images), all problems at once. */
function checkTargets(s: Submission, targets: readonly Target[]): void {
  const problems: ErrorDetail[] = [];
  for (const t of targets) {
    const problem = checkPlatformRules(t.platform, t.id, { caption: s.caption, hashtags: s.hashtags, imageCount: s.images.length });
    if (problem) problems.push(problem);
  }
  if (problems.length > 0) throw invalid(problems);
}

async function validateMedia(services: Services, userId: string, s: Submission, targets: Target[]): Promise<Map<string, MediaRow>> {
  const ids = s.images.flatMap((i) => ("mediaId" in i ? [i.mediaId] : []));
  const found = await findOwnedMedia(services.db, userId, ids);
  const missing = s.images.findIndex((i) => "mediaId" in i && !found.has(i.mediaId));
  if (missing >= 0) throw withImagePath(mediaNotFound((s.images[missing] as { mediaId: string }).mediaId), missing);
  if (targets.some((t) => t.platform === "photoplatform")) {
    s.images.forEach((img, i) => {
      if ("mediaId" in img) checkAspect(found.get(img.mediaId)!, i, targets);
    });
  }
  return found;
}

function checkAspect(size: { width: number; height: number }, index: number, targets: Target[]): void {
  const photo = targets.filter((t) => t.platform === "photoplatform");
  if (photo.length === 0 || photoplatformAspectOk(size.width, size.height)) return;
  // Two decimals, or four where two would round onto a limit (1000x1251 is 0.7994, not 0.80).
  const exact = size.width / size.height;
  const two = exact.toFixed(2);
  const ratio = two === "0.80" || two === "1.91" ? exact.toFixed(4) : two;
  throw invalid(
    photo.map((t) => ({
      path: `images.${index}`,
      message: `${t.id}: photoplatform accepts aspect ratios from 4:5 (0.80) to 1.91:1; this image is ${size.width}x${size.height} (${ratio}) after normalisation`,
    })),
  );
}

// ---------------------------------------------------------------- images

interface Prepared {
  index: number;
  image: NormalisedJpeg;
}

/**
 * Fetches (each distinct source once; a gallery item's PNG from storage, as its owner's), sniffs, checks
 * photoplatform's ratio, then normalises (heavy work) into a media asset of the post's own.
 */
async function prepareImages(services: Services, userId: string, s: Submission, targets: Target[]): Promise<Prepared[]> {
  const inline = s.images.flatMap((img, index) => ("mediaId" in img ? [] : [{ index, source: img }]));
  if (inline.length === 0) return [];
  const loads = new Map<string, Promise<Uint8Array>>();
  // An image read as the body streamed in is known by its bytes' digest (two spellings of one image are one).
  const keys = await Promise.all(inline.map(async ({ source }) => JSON.stringify(await withImageDigests(source, services.inlineImages))));
  const bytesOf = inline.map(({ source }, i) => {
    const k = keys[i]!;
    if (!loads.has(k)) loads.set(k, "galleryId" in source ? galleryImageBytes(services, userId, source.galleryId) : loadSource(services, source));
    return loads.get(k)!;
  });
  // Settle every load before reporting, so no fetch is left running after the request is answered.
  const settled = await Promise.allSettled(bytesOf);
  const failed = settled.findIndex((r) => r.status === "rejected");
  if (failed >= 0) throw withImagePath((settled[failed] as PromiseRejectedResult).reason, inline[failed]!.index);

  const all = settled.map((r) => (r as PromiseFulfilledResult<Uint8Array>).value);
  all.forEach((bytes, i) => {
    const index = inline[i]!.index;
    try {
      const upright = uprightSize(readImageHeader(bytes));
      checkAspect(planSocialSize(upright.width, upright.height), index, targets);
    } catch (err) {
      throw withImagePath(err, index);
    }
  });

  const out: Prepared[] = [];
  const done = new Map<Uint8Array, NormalisedJpeg>();
  for (let i = 0; i < inline.length; i++) {
    const index = inline[i]!.index;
    const bytes = all[i]!;
    try {
      // Handed over (see heavy.run): after this only its identity is used, as the key of `done`.
      const image = done.get(bytes) ?? (await services.heavy.run(userId, "normaliseMedia", { bytes, limits: services.imageLimits }, [bytes]));
      done.set(bytes, image);
      checkAspect(image, index, targets);
      out.push({ index, image });
    } catch (err) {
      throw withImagePath(err, index);
    }
  }
  return out;
}

/** Puts each normalised image in storage (once per distinct image); mediaId images reuse their asset. */
async function storeImages(
  services: Services,
  userId: string,
  s: Submission,
  prepared: Prepared[],
  mediaById: Map<string, MediaRow>,
  stored: string[],
): Promise<{ images: PostImage[]; newMedia: Array<typeof media.$inferInsert> }> {
  const byIndex = new Map(prepared.map((p) => [p.index, p.image]));
  const rowOf = new Map<NormalisedJpeg, typeof media.$inferInsert>();
  const images: PostImage[] = [];
  for (let index = 0; index < s.images.length; index++) {
    const spec = s.images[index]!;
    if ("mediaId" in spec) {
      const row = mediaById.get(spec.mediaId)!;
      images.push({ url: row.url, width: row.width, height: row.height, mediaId: row.id });
      continue;
    }
    const image = byIndex.get(index)!;
    let row = rowOf.get(image);
    if (!row) {
      row = await storeNormalised(services, userId, image);
      stored.push(row.storageKey);
      rowOf.set(image, row);
    }
    images.push({ url: row.url, width: row.width, height: row.height, mediaId: row.id! });
  }
  return { images, newMedia: [...rowOf.values()] };
}

// ---------------------------------------------------------------- commit and queue

async function commitPost(
  services: Services,
  lock: KeyLock,
  s: Submission,
  targets: Target[],
  images: PostImage[],
  newMedia: Array<typeof media.$inferInsert>,
): Promise<{ postId: string; deliveryIds: string[] } | "lost-key"> {
  const now = services.clock.now();
  const postId = crypto.randomUUID();
  const scheduledFor = s.scheduledFor ? new Date(s.scheduledFor) : null;
  try {
    const deliveryIds = await services.db.transaction(async (tx) => {
      // The key first: its row lock makes a concurrent takeover wait for this transaction's outcome.
      if (!(await completeKey(tx, lock, postId, scheduledFor ? 201 : 202, now))) throw new LostKey();
      if (newMedia.length > 0) await tx.insert(media).values(newMedia);
      await tx.insert(posts).values({
        id: postId,
        userId: lock.userId,
        caption: s.caption,
        hashtags: s.hashtags,
        images,
        scheduledFor,
        createdAt: now,
        updatedAt: now,
      });
      const rows = await tx
        .insert(deliveries)
        .values(
          targets.map((t) => ({
            postId,
            userId: lock.userId,
            accountId: t.id,
            platform: t.platform,
            status: "pending",
            nextAttemptAt: scheduledFor ?? now,
            createdAt: now,
            updatedAt: now,
          })),
        )
        .returning({ id: deliveries.id });
      return rows.map((r) => r.id);
    });
    return { postId, deliveryIds };
  } catch (err) {
    if (err instanceof LostKey) return "lost-key";
    throw err;
  }
}

class LostKey extends Error {
  override readonly name = "LostKey";
}

/**
 * Hands each delivery to the queue; the job id of each delivery that got one. Failures are logged, not
 * raised: the post is committed, and the sweep re-queues deliveries that have no live job.
 */
async function enqueueDeliveries(services: Services, deliveryIds: string[], scheduledFor: string | null): Promise<Map<string, string>> {
  const notBefore = scheduledFor ? new Date(scheduledFor) : undefined;
  const jobs = new Map<string, string>();
  await Promise.all(
    deliveryIds.map(async (id) => {
      try {
        const jobId = await services.queue.enqueue(id, notBefore);
        if (jobId) {
          await services.db.update(deliveries).set({ jobId }).where(eq(deliveries.id, id));
          jobs.set(id, jobId);
        }
      } catch (err) {
        services.log.warn("enqueue failed; the sweep will re-queue the delivery", { deliveryId: id, err: String(err) });
      }
    }),
  );
  return jobs;
}

// ---------------------------------------------------------------- reading

export async function getPost(services: Services, userId: string, id: string): Promise<PostRecord> {
  const [post] = isUuid(id) ? await loadPostRecords(services.db, userId, [id], services.clock.now()) : [];
  if (!post) throw postNotFound(id);
  return post;
}

/** `getPost`'s record as the JSON text the database writes, for an answer that need not parse and write it again. */
export async function getPostJson(services: Services, userId: string, id: string): Promise<string> {
  const json = isUuid(id) ? await loadPostRecordJson(services.db, userId, id, services.clock.now()) : undefined;
  if (json === undefined) throw postNotFound(id);
  return json;
}

export async function listPosts(services: Services, userId: string, query: PostListQuery) {
  const filter: ListFilter = {
    status: query.status,
    platform: query.platform,
    limit: query.limit ?? LIST_DEFAULT_LIMIT,
    offset: query.offset ?? 0,
  };
  const from = query.fromDate ? dayStart(query.fromDate) : undefined;
  const dateOnly = query.toDate !== undefined && DATE_ONLY.test(query.toDate);
  // A date-only toDate is its whole day: up to the next day's start, exclusive.
  const to = query.toDate ? (dateOnly ? new Date(dayStart(query.toDate).getTime() + 86_400_000) : new Date(query.toDate)) : undefined;
  if (from && to && (dateOnly ? from >= to : from > to)) throw field("fromDate", "must not be after toDate");
  if (from) filter.from = withinCalendar(from);
  if (to) {
    filter.to = withinCalendar(to);
    // Past the calendar's end the bound is its last instant, inclusive; before its start, nothing is.
    filter.toExclusive = to < CALENDAR.first || (dateOnly && to <= CALENDAR.last);
  }
  return listPostRecords(services.db, userId, filter, services.clock.now());
}

/**
 * The first and last instants a bound is sent to the database as (years 1 to 9999): PostgreSQL has no year 0
 * and `toISOString` writes years past 9999 with six digits, which it refuses. Every stored time is inside,
 * so a bound clamped to them selects what it did: `toDate=9999-12-31` every post, `fromDate=0000-06-01` too.
 */
const CALENDAR = { first: new Date("0001-01-01T00:00:00.000Z"), last: new Date("9999-12-31T23:59:59.999Z") };

function withinCalendar(at: Date): Date {
  return at < CALENDAR.first ? CALENDAR.first : at > CALENDAR.last ? CALENDAR.last : at;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** A date is its first instant in UTC; a timestamp is itself. */
function dayStart(value: string): Date {
  return DATE_ONLY.test(value) ? new Date(`${value}T00:00:00Z`) : new Date(value);
}

// ---------------------------------------------------------------- cancellation

/**
 * DELETE /posts/{id}: with the post's delivery rows and then the post locked, refuses while a target is publishing or when
 * every target is published, else cancels the outstanding targets in one conditional UPDATE. The delivery
 * engine claims with a conditional UPDATE too, so once this commits nothing cancelled can be sent; queue
 * jobs are cancelled afterwards, best effort.
 */
export async function cancelPost(services: Services, userId: string, id: string): Promise<PostRecord> {
  if (!isUuid(id)) throw postNotFound(id);
  const now = services.clock.now();
  const jobs = await services.db.transaction(async (tx) => {
    // Targets before the post: a delivery writer holds its target's row and then, through the status
    // trigger, the post's row; taking them in the same order means the two never wait on each other crosswise.
    const targets = await tx
      .select()
      .from(deliveries)
      .where(and(eq(deliveries.postId, id), eq(deliveries.userId, userId)))
      .for("update");
    const [post] = await tx
      .select({ id: posts.id })
      .from(posts)
      .where(and(eq(posts.id, id), eq(posts.userId, userId)))
      .for("update");
    if (!post) throw postNotFound(id);
    const busy = targets.filter((t) => t.status === "publishing");
    if (busy.length > 0) {
      throw new ApiError(
        "POST_NOT_CANCELLABLE",
        `The post is being published to ${busy.map((t) => t.accountId).join(", ")} right now and cannot be cancelled; check GET /posts/${id} in a few seconds.`,
      );
    }
    if (targets.length > 0 && targets.every((t) => t.status === "published")) {
      throw new ApiError("POST_NOT_CANCELLABLE", "The post is already published to every target; cancelling does not remove live posts from the platforms.");
    }
    const cancelled = await tx
      .update(deliveries)
      .set({ status: "cancelled", nextAttemptAt: null, updatedAt: now })
      .where(and(eq(deliveries.postId, id), or(eq(deliveries.status, "pending"), and(eq(deliveries.status, "failed"), isNotNull(deliveries.nextAttemptAt)))))
      .returning({ jobId: deliveries.jobId });
    if (cancelled.length > 0) {
      await tx
        .update(posts)
        .set({ cancelledAt: sql`coalesce(${posts.cancelledAt}, ${now.toISOString()}::timestamptz)`, updatedAt: now })
        .where(eq(posts.id, id));
    }
    return cancelled.flatMap((c) => (c.jobId ? [c.jobId] : []));
  });
  services.kickWebhooks?.();
  const results = await Promise.allSettled(jobs.map((jobId) => services.queue.cancel(jobId)));
  results.forEach((r, i) => {
    if (r.status === "rejected") services.log.warn("cancelling a queue job failed; the delivery claim will skip it", { jobId: jobs[i], err: String(r.reason) });
  });
  return getPost(services, userId, id);
}

// ---------------------------------------------------------------- errors

export function postNotFound(id: string): ApiError {
  return new ApiError("POST_NOT_FOUND", `No post with id ${JSON.stringify(id.slice(0, 80))} belongs to this API key's owner.`);
}

function field(path: string, message: string): ApiError {
  return invalid([{ path, message }]);
}

function invalid(details: ErrorDetail[]): ApiError {
  const first = details[0]!;
  const more = details.length > 1 ? ` (and ${details.length - 1} more)` : "";
  return new ApiError("VALIDATION_FAILED", `${first.path}: ${first.message}${more}`, { details });
}

/** Image errors name the image they are about. */
function withImagePath(err: unknown, index: number): unknown {
  if (!(err instanceof ApiError)) return err;
  if (err.message.startsWith(`images.${index}`)) return err;
  const details = err.details?.length ? err.details.map((d) => ({ ...d, path: `images.${index}` })) : [{ path: `images.${index}`, message: err.message }];
  return new ApiError(err.code, `images.${index}: ${err.message}`, { details, headers: err.headers });
}
