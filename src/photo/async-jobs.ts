/**
 * `Prefer: respond-async` jobs: the POST stores its checked inputs and answers 202 with the job's
 * Location; the work starts in the background (`services.defer`), and a sweep restarts a job whose runner
 * died (its lock expired) up to MAX_JOB_ATTEMPTS times. The ledger is keyed by (job, item), so a restarted
 * job never charges an image twice.
 *
 * On a generator of predictions (Replicate) the runner only dispatches: it creates each item's prediction,
 * stores its id (photo_job_items) and ends, so nothing waits for a model. Where the service can be called
 * back, each prediction's signed webhook (callback.ts) finishes its item; otherwise (Node without
 * PUBLIC_BASE_URL) the runner polls. Either way the sweep reads predictions whose callback has not come,
 * finishes their items, and finishes a job once every item is done.
 *
 * @example
 * await queueAsyncJob(services, job.id, body, inputs);   // in the POST
 * await resumePhotoJobs(services);                        // in the sweep
 */
import { and, eq, gte, inArray, isNotNull, isNull, lt, notExists, sql } from "drizzle-orm";
import { photoJobItems, photoJobs, photoWebhookDeliveries } from "../../db/schema";
import { ApiError } from "../http/errors";
import type { PredictionState, Services } from "../services";
import {
  composeScene,
  generateItems,
  inputKey,
  isItemError,
  itemErrorOf,
  keepItem,
  mapPool,
  prepareLogo,
  resultOf,
  sceneRequestFor,
  wholeFailure,
  type Inputs,
  type ItemError,
  type StoredItem,
} from "./generate";
import { DISPATCH_LOCK_MS, dueAsyncJobs, finishJob, holdJobLock, JOB_LOCK_MS, MAX_JOB_ATTEMPTS, QUEUED_LEASE_MS, takeAsyncJob, type JobRow } from "./jobs";
import { claimFinish, ENDED, failItem, itemPrediction, jobItems, predictionCallbackUrl, recordItem, releaseItem, takeDueItems } from "./items";
import { resolveRequest, type PhotoRequest } from "./request";
import type { PhotoRequestBody } from "./schemas";
import { GenerationError, type InputImage } from "./types";
import { creditState, releaseExpiredHolds, releaseItemHold, releaseJobHolds } from "./credits";

interface StoredImage {
  key: string;
  mimeType: InputImage["mimeType"];
  width: number;
  height: number;
}

/** What the job row keeps: the body without its images, and where the checked images are stored. */
interface StoredRequest {
  body: Omit<PhotoRequestBody, "productImages" | "logoImage" | "referenceImage"> & { productImages: Array<{ label?: string; prompt?: string }> };
  products: Array<StoredImage | ItemError>;
  logo?: StoredImage;
  reference?: StoredImage;
}

export async function queueAsyncJob(services: Services, jobId: string, body: PhotoRequestBody, inputs: Inputs): Promise<void> {
  const stored = (img: InputImage): StoredImage => ({ key: img.key!, mimeType: img.mimeType, width: img.width, height: img.height });
  let logo: StoredImage | undefined;
  if (inputs.logo) {
    const key = inputKey(inputs.logo.mimeType);
    await services.storage.put(key, inputs.logo.bytes, inputs.logo.mimeType);
    logo = { key, mimeType: inputs.logo.mimeType, width: inputs.logo.width, height: inputs.logo.height };
  }
  const { productImages, logoImage: _logo, referenceImage: _reference, ...rest } = body;
  const request: StoredRequest = {
    body: { ...rest, productImages: productImages.map((p) => ({ label: p.label, prompt: p.prompt })) },
    products: inputs.products.map((p) => (isItemError(p) ? p : stored(p))),
    logo,
    reference: inputs.reference ? stored(inputs.reference) : undefined,
  };
  // Stored inputs make the job startable by anyone: this process's runner first, any sweep after the lease.
  await services.db
    .update(photoJobs)
    .set({ request: request as unknown as Record<string, unknown>, lockedUntil: new Date(services.clock.now().getTime() + QUEUED_LEASE_MS) })
    .where(eq(photoJobs.id, jobId));
  services.defer(runAsyncJob(services, jobId));
}

/**
 * Starts the async jobs that are due (queued past their lease, or whose runner died before dispatching):
 * part of the sweep, and run on its own between sweeps where that is cheap (Node's housekeeping, every 5 s).
 */
export async function startDueAsyncJobs(services: Services, options: { anyAge?: boolean } = {}): Promise<number> {
  const due = await dueAsyncJobs(services.db, services.clock.now(), options.anyAge ? 1000 : 10, options.anyAge);
  for (const id of due) services.defer(runAsyncJob(services, id));
  return due.length;
}

/** Runs one async job if it can be taken (queued, or its runner's lock expired); never throws. */
export async function runAsyncJob(services: Services, jobId: string): Promise<void> {
  // A dispatching runner is done in seconds; only the local compositor's runner makes the images itself.
  const lockMs = services.generator.predictions ? DISPATCH_LOCK_MS : JOB_LOCK_MS;
  const job = await takeAsyncJob(services.db, jobId, services.clock.now(), lockMs);
  if (!job) return;
  try {
    if (services.generator.predictions) await dispatch(services, job);
    else await runTaken(services, job);
  } catch (err) {
    services.log.error("photo job failed", { jobId, error: err instanceof Error ? err.message : String(err) });
    const error =
      err instanceof ApiError
        ? { code: err.code, message: err.message }
        : { code: "GENERATION_FAILED", message: "The job failed because of a failure on our side; submit it again." };
    const failed = await finishJob(
      services.db,
      job,
      { status: "failed", result: null, responseStatus: err instanceof ApiError ? err.status : 500, error },
      services.clock.now(),
    );
    // Only the attempt that failed the job gives its credits back (a runner taken over holds nothing).
    if (failed) await releaseJobHolds(services.db, job.id);
  }
}

/** The job's stored request, resolved again, and its stored images (only their URLs when `withBytes` is false). */
async function loadJob(services: Services, job: JobRow, withBytes: boolean): Promise<{ request: PhotoRequest; inputs: Inputs }> {
  const stored = job.request as unknown as StoredRequest;
  const body = { ...stored.body, productImages: stored.body.productImages.map((p) => ({ ...p, url: "stored" })) } as PhotoRequestBody;
  const request = resolveRequest(body, services.config.photoModels);
  const load = async (img: StoredImage): Promise<InputImage> => {
    const url = services.storage.urlFor(img.key);
    if (!withBytes) return { bytes: new Uint8Array(0), mimeType: img.mimeType, width: img.width, height: img.height, key: img.key, url };
    const object = await services.storage.get(img.key);
    if (!object) throw new ApiError("INTERNAL", "An input image of this job is missing from storage.");
    return { bytes: object.bytes, mimeType: img.mimeType, width: img.width, height: img.height, key: img.key, url };
  };
  const inputs: Inputs = {
    products: await Promise.all(stored.products.map((p) => (isItemError(p) ? p : load(p)))),
    logo: stored.logo ? await load(stored.logo) : undefined,
    reference: stored.reference ? await load(stored.reference) : undefined,
  };
  return { request, inputs };
}

async function runTaken(services: Services, job: JobRow): Promise<void> {
  const { request, inputs } = await loadJob(services, job, true);
  const { result } = await generateItems(services, { userId: job.userId, jobId: job.id }, request, inputs);
  const failure = wholeFailure(result);
  await finishJob(
    services.db,
    job,
    failure
      ? { status: "failed", result: null, responseStatus: 502, error: failure }
      : { status: "succeeded", result: result as unknown as Record<string, unknown>, responseStatus: 200 },
    services.clock.now(),
  );
}

/**
 * Starts (or, for a resumed job, continues) each item's prediction and ends: the callbacks or the sweep
 * finish the items. An item whose prediction has already ended is finished here. Without callbacks the
 * runner polls the predictions itself. Until every item has its prediction the runner renews its lock (a
 * heartbeat every third of DISPATCH_LOCK_MS), so a runner that died is taken over within seconds.
 */
async function dispatch(services: Services, job: JobRow): Promise<void> {
  const dispatched = holdJobLock(services, job, DISPATCH_LOCK_MS);
  try {
    await dispatchItems(services, job, dispatched);
  } finally {
    dispatched();
  }
}

async function dispatchItems(services: Services, job: JobRow, dispatched: () => void): Promise<void> {
  const { request, inputs } = await loadJob(services, job, false);
  const webhook = predictionCallbackUrl(services.config);
  const done = new Map((await jobItems(services.db, job.id)).filter((i) => i.status === "succeeded" || i.status === "failed").map((i) => [i.itemIndex, i]));
  const ended: Array<{ index: number; prediction: PredictionState }> = [];
  const running: Array<{ index: number; prediction: PredictionState }> = [];
  await mapPool(request.products, 4, async (product, index) => {
    if (done.has(index)) return;
    const input = inputs.products[index]!;
    if (isItemError(input)) {
      await failItem(services.db, job.id, index, { index, label: product.label, status: "failed", error: input }, services.clock.now());
      await releaseItemHold(services.db, job.id, index);
      return;
    }
    try {
      const prediction = await itemPrediction(services, job.id, index, sceneRequestFor(request, input, inputs.reference, product.prompt), webhook);
      (ENDED.has(prediction.status) ? ended : running).push({ index, prediction });
    } catch (err) {
      const error = itemErrorOf(services, err, job.id, index);
      await failItem(services.db, job.id, index, { index, label: product.label, status: "failed", error }, services.clock.now());
      await releaseItemHold(services.db, job.id, index);
    }
  });
  // Every item has its prediction or its error: the job is no runner's any more.
  await services.db
    .update(photoJobs)
    .set({ dispatchedAt: services.clock.now(), lockedUntil: null, updatedAt: services.clock.now() })
    .where(and(eq(photoJobs.id, job.id), eq(photoJobs.attempts, job.attempts), eq(photoJobs.status, "running")));
  dispatched();
  services.log.info("photo job dispatched", { jobId: job.id, items: request.products.length, callbacks: !!webhook, ended: ended.length });
  // From here on the job is its items': a fault finishing one (given back for a later try) is the sweep's to
  // retry, never a reason to fail the job.
  const finish = (index: number, prediction: PredictionState) =>
    finishItem(services, job.id, index, prediction).catch((err: unknown) =>
      services.log.warn("photo item not finished; the sweep tries again", { jobId: job.id, index, error: String(err) }),
    );
  for (const { index, prediction } of ended) await finish(index, prediction);
  if (!webhook) {
    const predictions = services.generator.predictions!;
    await mapPool(running, 4, async ({ index, prediction }) => {
      const last = await predictions.wait(prediction).catch(() => null);
      if (last) await finish(index, last);
    });
  }
  await completeJobIfDone(services, job.id).catch((err: unknown) =>
    services.log.warn("photo job not completed; the sweep tries again", { jobId: job.id, error: String(err) }),
  );
}

/**
 * Finishes one item from its ended prediction (callback, sweep or runner, whoever claims it first): the
 * output copied into storage, the logo and texts composed, the images stored and the item charged once;
 * a failed prediction fails the item. Then the job, when it was the last item. Answers whether this call
 * finished the item.
 */
export async function finishItem(services: Services, jobId: string, index: number, prediction: PredictionState): Promise<boolean> {
  if (!ENDED.has(prediction.status)) return false;
  const held = await claimFinish(services.db, jobId, index, prediction.id, services.clock.now());
  if (!held) return false;
  const [job] = await services.db.select().from(photoJobs).where(eq(photoJobs.id, jobId)).limit(1);
  if (!job) return false;
  const { request, inputs } = await loadJob(services, job, false);
  const label = request.products[index]?.label ?? null;
  let item: StoredItem;
  try {
    const scene = await services.generator.predictions!.scene(prediction);
    const logo = inputs.logo ? await prepareLogo(services, job.userId, request, await withBytes(services, inputs.logo)) : undefined;
    const png = await composeScene(services, job.userId, request, { image: scene }, logo);
    item = await keepItem(services, { userId: job.userId, jobId }, request, index, label, png);
  } catch (err) {
    if (passing(err) && services.clock.now().getTime() - held.createdAt.getTime() < OUTPUT_KEPT_MS) {
      await releaseItem(services.db, held, new Date(services.clock.now().getTime() + RETRY_SOON_MS));
      services.log.warn("photo item finish deferred", { jobId, index, predictionId: prediction.id, error: err instanceof Error ? err.message : String(err) });
      throw err;
    }
    item = { index, label, status: "failed", error: itemErrorOf(services, err, jobId, index) };
    await releaseItemHold(services.db, jobId, index);
  }
  const recorded = await recordItem(services.db, held, item.status, item as unknown as Record<string, unknown>, services.clock.now());
  services.log.info("photo item finished", { jobId, index, predictionId: prediction.id, status: item.status, recorded });
  await completeJobIfDone(services, jobId);
  return recorded;
}

/** Replicate keeps a prediction's output this long; past it a failed download will not succeed later. */
const OUTPUT_KEPT_MS = 50 * 60_000;
/** When an item given back after a passing fault is looked at again (by the sweep, if no callback comes first). */
const RETRY_SOON_MS = 5_000;

/**
 * A fault that passes: the heavy-work queue full, the provider or storage unreachable, our own database or
 * code failing. What the model made or refused is not one.
 */
function passing(err: unknown): boolean {
  if (err instanceof GenerationError) return err.code === "UPSTREAM_UNAVAILABLE" || err.code === "UPSTREAM_RATE_LIMITED";
  if (err instanceof ApiError) return err.code === "RATE_LIMITED" || err.status >= 500;
  return true;
}

async function withBytes<T extends { key?: string; bytes: Uint8Array }>(services: Services, image: T): Promise<T> {
  const object = image.key ? await services.storage.get(image.key) : null;
  if (!object) throw new ApiError("INTERNAL", "An input image of this job is missing from storage.");
  return { ...image, bytes: object.bytes };
}

/**
 * Finishes a dispatched job once every item is done, from the items' outcomes. Each finisher records its
 * item before it calls this, so the last one to record sees every item done; the update is fenced on the
 * job still running, so only one finishes it.
 */
export async function completeJobIfDone(services: Services, jobId: string): Promise<boolean> {
  const [job] = await services.db.select().from(photoJobs).where(eq(photoJobs.id, jobId)).limit(1);
  if (job?.status !== "running" || !job.dispatchedAt) return false;
  const rows = await jobItems(services.db, jobId);
  const { request } = await loadJob(services, job, false);
  if (rows.length < request.products.length || rows.some((r) => r.status !== "succeeded" && r.status !== "failed")) return false;
  const result = resultOf(
    request,
    rows.map((r) => r.result as unknown as StoredItem),
    (await creditState(services.db, job.userId)).balance,
  );
  const failure = wholeFailure(result);
  const now = services.clock.now();
  const finished = await services.db
    .update(photoJobs)
    .set({
      status: failure ? "failed" : "succeeded",
      result: failure ? null : (result as unknown as Record<string, unknown>),
      responseStatus: failure ? 502 : 200,
      errorCode: failure?.code ?? null,
      errorMessage: failure?.message ?? null,
      lockedUntil: null,
      finishedAt: now,
      updatedAt: now,
    })
    .where(and(eq(photoJobs.id, jobId), eq(photoJobs.status, "running")))
    .returning({ id: photoJobs.id });
  if (finished.length) services.log.info("photo job finished", { jobId, status: failure ? "failed" : "succeeded", items: rows.length });
  return finished.length > 0;
}

/**
 * The sweep's part for area B: restarts async jobs that were never picked up or whose runner died before
 * dispatching, fails for good the ones that used up their attempts, reads the predictions whose callback
 * has not come (finishing the items that ended), and finishes jobs whose last item was recorded by a
 * finisher that died before finishing the job. Credits held by requests whose runner died go back
 * (credits.ts releaseExpiredHolds), as do those of jobs failed for good. `takeOverAll` (a process that holds
 * the database alone, at its start) restarts every undispatched job at once.
 */
export async function resumePhotoJobs(services: Services, options: { takeOverAll?: boolean } = {}): Promise<number> {
  const now = services.clock.now();
  if (options.takeOverAll) {
    // The database is this process's alone (embedded PGlite at its start): every running job's runner is dead.
    await services.db
      .update(photoJobs)
      .set({ lockedUntil: new Date(now.getTime() - 1) })
      .where(and(eq(photoJobs.async, true), eq(photoJobs.status, "running"), isNull(photoJobs.dispatchedAt)));
  }
  const exhausted = await services.db
    .update(photoJobs)
    .set({
      status: "failed",
      errorCode: "GENERATION_FAILED",
      errorMessage: "The job could not be completed after several attempts; submit it again.",
      responseStatus: 502,
      lockedUntil: null,
      finishedAt: now,
      updatedAt: now,
    })
    .where(
      and(
        eq(photoJobs.async, true),
        eq(photoJobs.status, "running"),
        isNull(photoJobs.dispatchedAt),
        lt(photoJobs.lockedUntil, now),
        gte(photoJobs.attempts, MAX_JOB_ATTEMPTS),
      ),
    )
    .returning({ id: photoJobs.id });
  for (const { id } of exhausted) await releaseJobHolds(services.db, id);
  const started = await startDueAsyncJobs(services, { anyAge: options.takeOverAll });

  let read = 0;
  const predictions = services.generator.predictions;
  if (predictions) {
    for (const item of await takeDueItems(services.db, now)) {
      if (!item.predictionId) continue;
      read += 1;
      services.defer(
        predictions
          .get(item.predictionId)
          .then((prediction) => finishItem(services, item.jobId, item.itemIndex, prediction))
          .catch((err) => services.log.warn("photo prediction check failed", { jobId: item.jobId, index: item.itemIndex, error: String(err) })),
      );
    }
  }
  const unfinished = await services.db
    .select({ id: photoJobs.id })
    .from(photoJobs)
    .where(
      and(
        eq(photoJobs.async, true),
        eq(photoJobs.status, "running"),
        isNotNull(photoJobs.dispatchedAt),
        notExists(
          services.db
            .select({ one: sql`1` })
            .from(photoJobItems)
            .where(and(eq(photoJobItems.jobId, photoJobs.id), inArray(photoJobItems.status, ["predicting", "finishing"]))),
        ),
      ),
    )
    .limit(10);
  for (const job of unfinished) await completeJobIfDone(services, job.id);
  await services.db.delete(photoWebhookDeliveries).where(lt(photoWebhookDeliveries.receivedAt, new Date(now.getTime() - WEBHOOK_MEMORY_MS)));
  // Taking over everything, every lock is dead: what a request that will not run again held goes back now.
  const later = new Date(now.getTime() + 365 * 86_400_000);
  const released = options.takeOverAll ? await releaseExpiredHolds(services.db, later, later) : await releaseExpiredHolds(services.db, now);
  return started + exhausted.length + read + unfinished.length + released;
}

/** How long a webhook-id is remembered: longer than Replicate goes on retrying a delivery. */
const WEBHOOK_MEMORY_MS = 7 * 24 * 3600_000;
