/**
 * The items of a photo job that a provider's predictions make (`photo_job_items`): each item's prediction
 * id is stored as soon as the prediction exists, so whoever comes next (a retried request with the same
 * Idempotency-Key, a restarted runner, the callback, the sweep) continues that prediction instead of paying
 * for another. A new prediction is made only when the stored one failed or was canceled.
 *
 * An item goes predicting -> finishing (one finisher holds it: output copied, logo and texts composed,
 * stored, charged) -> succeeded | failed. A finisher that dies leaves `finishing` with an expired hold, and
 * the sweep finishes the item again; the images' keys and the ledger's (job, item) key make that harmless.
 *
 * @example
 * const prediction = await itemPrediction(services, jobId, 0, sceneRequest, predictionCallbackUrl(services.config));
 * const row = await claimFinish(services.db, jobId, 0, prediction.id, services.clock.now());
 */
import { and, asc, eq, inArray, lt, or, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { photoJobItems, photoJobs } from "../../db/schema";
import type { Config } from "../config";
import type { PredictionState, SceneRequest, Services } from "../services";

/** Where Replicate calls back; an internal route, outside the API document. */
export const PREDICTION_CALLBACK_PATH = "/api/internal/photo/predictions";
/** A prediction whose callback has not come is read by the sweep at most this often. */
export const RECHECK_MS = 20_000;
/** How long a finisher holds an item (download, compose, store); a dead finisher's item is taken again after. */
export const FINISH_HOLD_MS = 120_000;
/** Prediction states after which a resumed item gets a new prediction. */
const RESTARTABLE = new Set<PredictionState["status"]>(["failed", "canceled", "aborted"]);
export const ENDED = new Set<PredictionState["status"]>(["succeeded", "failed", "canceled", "aborted"]);

export type ItemRow = typeof photoJobItems.$inferSelect;

/** The webhook URL predictions are created with, when the service can be called back (config.replicateCallbacks). */
export function predictionCallbackUrl(config: Config): string | undefined {
  return config.replicateCallbacks ? `${config.publicBaseUrl}${PREDICTION_CALLBACK_PATH}` : undefined;
}

export async function jobItems(db: Db, jobId: string): Promise<ItemRow[]> {
  return db.select().from(photoJobItems).where(eq(photoJobItems.jobId, jobId)).orderBy(asc(photoJobItems.itemIndex));
}

export async function itemByPrediction(db: Db, predictionId: string): Promise<ItemRow | null> {
  const [row] = await db.select().from(photoJobItems).where(eq(photoJobItems.predictionId, predictionId)).limit(1);
  return row ?? null;
}

/**
 * The item's prediction: the stored one while it is starting, processing or has succeeded; otherwise the one
 * a create under way made (found by what it sent, when its answer was never stored), or a new one, whose id
 * is stored before anything else.
 */
export async function itemPrediction(services: Services, jobId: string, index: number, request: SceneRequest, webhook?: string): Promise<PredictionState> {
  const predictions = services.generator.predictions!;
  const where = and(eq(photoJobItems.jobId, jobId), eq(photoJobItems.itemIndex, index));
  const [row] = await services.db.select().from(photoJobItems).where(where).limit(1);
  if (row?.predictionId) {
    const stored = await predictions.get(row.predictionId, request.signal);
    if (!RESTARTABLE.has(stored.status)) return stored;
    services.log.info("photo item gets a new prediction", { jobId, index, predictionId: stored.id, status: stored.status });
  }
  if (row && (row.createSentAt || !row.predictionId)) {
    // A create was sent and its answer never stored (the process died in between): find that prediction by
    // what that create sent, which a retried synchronous request (its inputs stored again) no longer sends.
    const sent = { ...request, product: { ...request.product, url: row.createInputUrl ?? request.product.url } };
    const lost = await predictions.find(sent, row.createSentAt ?? row.updatedAt);
    if (
      lost &&
      lost.id !== row.predictionId &&
      !RESTARTABLE.has(lost.status) &&
      (await storePrediction(services.db, jobId, index, row.predictionId, lost.id, services.clock.now()))
    )
      return lost;
  }
  // The row says a create is under way, with what it sends and when, before it is sent, so a runner that
  // dies before storing the answer leaves a trace for the next one to look for.
  const now = services.clock.now();
  const underWay = { createInputUrl: request.product.url, createSentAt: now, updatedAt: now };
  await services.db
    .insert(photoJobItems)
    .values({ jobId, itemIndex: index, predictionId: null, status: "predicting", checkAfter: new Date(now.getTime() + RECHECK_MS), ...underWay })
    .onConflictDoUpdate({
      target: [photoJobItems.jobId, photoJobItems.itemIndex],
      set: underWay,
      setWhere: row?.predictionId ? eq(photoJobItems.predictionId, row.predictionId) : sql`${photoJobItems.predictionId} is null`,
    });
  let created: PredictionState;
  try {
    created = await predictions.create(request, { webhook });
  } catch (err) {
    // A create whose answer was lost on the way (the connection dropped) may still have made the prediction.
    const lost = await predictions.find(request, now).catch(() => null);
    if (!lost || lost.id === row?.predictionId) throw err;
    services.log.warn("photo item prediction found after a failed create", { jobId, index, predictionId: lost.id });
    created = lost;
  }
  if (await storePrediction(services.db, jobId, index, row?.predictionId ?? null, created.id, services.clock.now())) return created;
  // Another runner stored its prediction for this item first: continue that one.
  services.log.warn("photo item prediction raced; the stored one is kept", { jobId, index, predictionId: created.id });
  const [winner] = await services.db.select({ predictionId: photoJobItems.predictionId }).from(photoJobItems).where(where);
  return winner?.predictionId ? predictions.get(winner.predictionId, request.signal) : created;
}

/** Stores the item's prediction id, fenced on the one read before (null: none yet); no create is under way after it. */
async function storePrediction(db: Db, jobId: string, index: number, previous: string | null, predictionId: string, now: Date): Promise<boolean> {
  const checkAfter = new Date(now.getTime() + RECHECK_MS);
  const [kept] = await db
    .insert(photoJobItems)
    .values({ jobId, itemIndex: index, predictionId, status: "predicting", checkAfter })
    .onConflictDoUpdate({
      target: [photoJobItems.jobId, photoJobItems.itemIndex],
      set: { predictionId, status: "predicting", checkAfter, result: null, createSentAt: null, updatedAt: now },
      setWhere: previous ? eq(photoJobItems.predictionId, previous) : sql`${photoJobItems.predictionId} is null`,
    })
    .returning({ predictionId: photoJobItems.predictionId });
  return !!kept;
}

/**
 * Marks a synchronous request's item done once the request has its image or its error: the request itself
 * waited for the prediction, so the sweep has nothing to read for it.
 */
export async function closeItem(db: Db, jobId: string, index: number, status: "succeeded" | "failed", now: Date): Promise<void> {
  await db
    .update(photoJobItems)
    .set({ status, checkAfter: null, updatedAt: now })
    .where(and(eq(photoJobItems.jobId, jobId), eq(photoJobItems.itemIndex, index), eq(photoJobItems.status, "predicting")));
}

/** Records an item that ended without a prediction's image (a bad input, a failed prediction). */
export async function failItem(db: Db, jobId: string, index: number, result: Record<string, unknown>, now: Date): Promise<void> {
  await db
    .insert(photoJobItems)
    .values({ jobId, itemIndex: index, status: "failed", result, checkAfter: null })
    .onConflictDoUpdate({
      target: [photoJobItems.jobId, photoJobItems.itemIndex],
      set: { status: "failed", result, checkAfter: null, updatedAt: now },
      setWhere: inArray(photoJobItems.status, ["predicting", "finishing"]),
    });
}

/**
 * Takes the item to finish it from its ended prediction: one finisher at a time, fenced on the prediction
 * id; a finishing item whose hold expired (its finisher died) may be taken again. Null when someone else
 * finishes it, it is done, or its job has ended.
 */
export async function claimFinish(db: Db, jobId: string, index: number, predictionId: string, now: Date): Promise<ItemRow | null> {
  const [row] = await db
    .update(photoJobItems)
    .set({ status: "finishing", checkAfter: new Date(now.getTime() + FINISH_HOLD_MS), updatedAt: now })
    .where(
      and(
        eq(photoJobItems.jobId, jobId),
        eq(photoJobItems.itemIndex, index),
        eq(photoJobItems.predictionId, predictionId),
        or(eq(photoJobItems.status, "predicting"), and(eq(photoJobItems.status, "finishing"), lt(photoJobItems.checkAfter, now))),
        // A job that ended (failed for good, its holds given back) takes no more images, nor charges.
        sql`exists (select 1 from ${photoJobs} j where j.id = ${photoJobItems.jobId} and j.status = 'running')`,
      ),
    )
    .returning();
  return row ?? null;
}

/** Records the outcome of a finished item, fenced on its finisher's hold. */
export async function recordItem(
  db: Db,
  held: Pick<ItemRow, "jobId" | "itemIndex" | "checkAfter">,
  status: "succeeded" | "failed",
  result: Record<string, unknown>,
  now: Date,
): Promise<boolean> {
  const rows = await db
    .update(photoJobItems)
    .set({ status, result, checkAfter: null, updatedAt: now })
    .where(heldByFinisher(held))
    .returning({ jobId: photoJobItems.jobId });
  return rows.length > 0;
}

/** The item still held by the finisher that claimed it: finishing, with the hold (`checkAfter`) it was given. */
function heldByFinisher(held: Pick<ItemRow, "jobId" | "itemIndex" | "checkAfter">): SQL | undefined {
  return and(
    eq(photoJobItems.jobId, held.jobId),
    eq(photoJobItems.itemIndex, held.itemIndex),
    eq(photoJobItems.status, "finishing"),
    held.checkAfter ? eq(photoJobItems.checkAfter, held.checkAfter) : sql`true`,
  );
}

/**
 * Gives an item back after a finisher met a passing fault (the heavy-work queue full, the output's download
 * or the database failing): it is finished again by the next delivery of its callback or by the sweep.
 */
export async function releaseItem(db: Db, held: Pick<ItemRow, "jobId" | "itemIndex" | "checkAfter">, retryAt: Date): Promise<void> {
  await db.update(photoJobItems).set({ status: "predicting", checkAfter: retryAt, updatedAt: new Date() }).where(heldByFinisher(held));
}

/**
 * Items of running async jobs that the sweep should look at: a prediction whose callback has not come
 * (read it), or a finishing item whose finisher died. Each is taken for RECHECK_MS, so concurrent sweeps
 * read a prediction once.
 */
export async function takeDueItems(db: Db, now: Date, limit = 20): Promise<ItemRow[]> {
  const due = await db
    .select({ jobId: photoJobItems.jobId, itemIndex: photoJobItems.itemIndex, checkAfter: photoJobItems.checkAfter })
    .from(photoJobItems)
    .innerJoin(photoJobs, eq(photoJobs.id, photoJobItems.jobId))
    .where(
      and(
        inArray(photoJobItems.status, ["predicting", "finishing"]),
        lt(photoJobItems.checkAfter, now),
        eq(photoJobs.async, true),
        eq(photoJobs.status, "running"),
      ),
    )
    .orderBy(asc(photoJobItems.checkAfter))
    .limit(limit);
  const taken: ItemRow[] = [];
  for (const item of due) {
    const [row] = await db
      .update(photoJobItems)
      .set({ checkAfter: new Date(now.getTime() + RECHECK_MS), updatedAt: now })
      .where(
        and(
          eq(photoJobItems.jobId, item.jobId),
          eq(photoJobItems.itemIndex, item.itemIndex),
          inArray(photoJobItems.status, ["predicting", "finishing"]),
          item.checkAfter ? eq(photoJobItems.checkAfter, item.checkAfter) : sql`${photoJobItems.checkAfter} is null`,
        ),
      )
      .returning();
    // A finishing item is taken back as predicting, so claimFinish lets the next finisher in.
    if (row?.status === "finishing") {
      await db
        .update(photoJobItems)
        .set({ status: "predicting" })
        .where(and(eq(photoJobItems.jobId, row.jobId), eq(photoJobItems.itemIndex, row.itemIndex), eq(photoJobItems.status, "finishing")));
    }
    if (row) taken.push(row);
  }
  return taken;
}
