/**
 * The product-photography request from end to end: resolve and check the body, claim the job (the
 * Idempotency-Key's record), load the inputs, generate (now, or in the background for `Prefer:
 * respond-async`), keep the outcome on the job, and shape the answer. Replays and job polls render the
 * same answer from the job row.
 *
 * @example
 * const answer = await createPhoto(services, userId, body, { idempotencyKey, respondAsync: false });
 * return c.json(answer.body, answer.status);
 */
import { ApiError } from "../http/errors";
import { Base64Value } from "../http/streamed-json";
import type { Services } from "../services";
import { queueAsyncJob } from "./async-jobs";
import { generateItems, loadInputs, prepareInputs, wholeFailure, type GenerationResult, type Inputs } from "./generate";
import { releaseJobHolds, reserveCredits } from "./credits";
import { claimJob, finishJob, getJob, holdJobLock, releaseJob, SYNC_LOCK_MS, type JobRow } from "./jobs";
import { checkDrawable, requestFingerprint, resolveRequest, type PhotoRequest } from "./request";
import type { PhotoRequestBody } from "./schemas";
import type { Price } from "./types";

export interface PhotoAnswer {
  status: 200 | 202;
  body: { data: Record<string, unknown> };
  headers: Record<string, string>;
}

export const JOBS_PATH = "/api/image/product-photography/jobs";

export async function createPhoto(
  services: Services,
  userId: string,
  body: PhotoRequestBody,
  options: { idempotencyKey: string | null; respondAsync: boolean },
): Promise<PhotoAnswer> {
  const request = resolveRequest(body, services.config.photoModels);
  await checkDrawable(request);
  const claim = await claimJob(services.db, {
    userId,
    key: options.idempotencyKey,
    fingerprint: await requestFingerprint({ body, async: options.respondAsync }, services.inlineImages),
    async: options.respondAsync,
    request: {},
    now: services.clock.now(),
  });
  if (claim.kind === "replay") {
    const answer = await answerFor(services, claim.job);
    return { ...answer, headers: { ...answer.headers, "Idempotency-Replayed": "true" } };
  }
  const job = claim.job;
  // The request holds its job, and so the credits it holds, from its claim to its answer (an async one until
  // its inputs are stored): loading the inputs alone may take most of a minute (each image up to its fetch
  // timeout), and a job whose lock ran out is a dead request's to every sweep.
  const stopHolding = holdJobLock(services, job, SYNC_LOCK_MS);
  try {
    return await runClaimed(services, userId, body, request, job, options.respondAsync);
  } finally {
    stopHolding();
  }
}

async function runClaimed(
  services: Services,
  userId: string,
  body: PhotoRequestBody,
  request: PhotoRequest,
  job: JobRow,
  respondAsync: boolean,
): Promise<PhotoAnswer> {
  // The whole price is held before anything is loaded or any model is called; a 402 frees the key.
  const price = request.model.pricing[request.resolution]!.credits;
  const items = request.products.length;
  try {
    await reserveCredits(services.db, {
      userId,
      jobId: job.id,
      items,
      price,
      expiresAt: job.lockedUntil ?? new Date(services.clock.now().getTime() + SYNC_LOCK_MS),
      signupCredits: services.config.photoSignupCredits,
      describe: `${items} image${items === 1 ? "" : "s"} of ${request.model.model} at ${request.resolution}`,
    });
  } catch (err) {
    await releaseJob(services.db, job);
    throw err;
  }

  let inputs: Inputs;
  try {
    const loaded = await loadInputs(services, request);
    inputs = await prepareInputs(services, loaded, respondAsync || services.generator.name !== "local");
  } catch (err) {
    await abandon(services, job); // bad input: nothing was done, the key may be used again
    throw err;
  }

  if (respondAsync) {
    await queueAsyncJob(services, job.id, body, inputs);
    return asyncAccepted(job);
  }

  let generated: Awaited<ReturnType<typeof generateItems>>;
  try {
    generated = await generateItems(services, { userId, jobId: job.id }, request, inputs);
  } catch (err) {
    await abandon(services, job); // e.g. a logo that sniffs well but does not decode: nothing was charged
    throw err;
  }
  const { result, pngs } = generated;
  const failure = wholeFailure(result);
  if (failure) {
    // Nothing was made and nothing charged: the key is released so the same request may be retried.
    await abandon(services, job);
    throw new ApiError(failure.code as ConstructorParameters<typeof ApiError>[0], failure.message);
  }
  await finishJob(services.db, job, { status: "succeeded", result: result as unknown as Record<string, unknown>, responseStatus: 200 }, services.clock.now());
  return { status: 200, body: { data: await renderResult(services, result, pngs) }, headers: {} };
}

/**
 * A request that ends before any image: its job row (the key) is freed and what it held goes back, unless
 * another attempt has taken the job over (this one's lock ran out): that attempt's holds are its own.
 */
async function abandon(services: Services, job: Pick<JobRow, "id" | "attempts">): Promise<void> {
  if (await releaseJob(services.db, job)) await releaseJobHolds(services.db, job.id);
}

function asyncAccepted(job: JobRow): PhotoAnswer {
  return {
    status: 202,
    body: { data: jobView(job) },
    headers: { Location: `${JOBS_PATH}/${job.id}`, "Preference-Applied": "respond-async", "Retry-After": "2" },
  };
}

/** The answer a replay gets: the stored result of a finished request, or the job of an async one. */
async function answerFor(services: Services, job: JobRow): Promise<PhotoAnswer> {
  if (job.async) return asyncAccepted(job);
  if (job.status === "succeeded" && job.result) {
    return { status: 200, body: { data: await renderResult(services, job.result as unknown as GenerationResult) }, headers: {} };
  }
  throw new ApiError((job.errorCode ?? "GENERATION_FAILED") as ConstructorParameters<typeof ApiError>[0], job.errorMessage ?? "The request failed.");
}

/** GET /jobs/{id}: status, and the result once done. */
export async function jobStatus(services: Services, userId: string, id: string): Promise<Record<string, unknown>> {
  const job = await getJob(services.db, userId, id);
  const view: Record<string, unknown> = jobView(job);
  if (job.status === "succeeded" && job.result) view.result = await renderResult(services, job.result as unknown as GenerationResult);
  if (job.status === "failed") view.error = { code: job.errorCode ?? "GENERATION_FAILED", message: job.errorMessage ?? "The job failed." };
  return view;
}

function jobView(job: JobRow) {
  return { id: job.id, status: job.status, createdAt: job.createdAt.toISOString(), finishedAt: job.finishedAt?.toISOString() ?? null };
}

/**
 * The response `data`: one product flat (`imageUrl`/`thumbnailUrl` or `photoDataUri`), several as
 * `{images: [...]}` with what the failed items got back (`refunded`); both with the cost of what was made and
 * the credit balance after it. PNGs come from `pngs` or from storage.
 */
export async function renderResult(services: Services, result: GenerationResult, pngs = new Map<number, Uint8Array>()): Promise<Record<string, unknown>> {
  const money = (p: Price) => ({ credits: p.credits, usd: Number(p.usd), inr: Number(p.inr) });
  const items = await Promise.all(
    result.items.map(async (item) => {
      if (item.status === "failed") return { label: item.label, status: item.status, error: item.error };
      const size = { width: item.width, height: item.height };
      if (result.output === "url") {
        return {
          label: item.label,
          status: item.status,
          imageUrl: services.storage.urlFor(item.key!),
          thumbnailUrl: services.storage.urlFor(item.thumbKey!),
          ...size,
        };
      }
      let bytes = pngs.get(item.index);
      if (!bytes) {
        const stored = item.key ? await services.storage.get(item.key) : null;
        if (!stored) throw new ApiError("ORIGINAL_REMOVED", "An image of this request was deleted from the gallery; its answer cannot be given again.");
        bytes = stored.bytes;
      }
      // Written into the answer from the bytes as it streams out (src/http/streamed-json.ts).
      return { label: item.label, status: item.status, photoDataUri: new Base64Value("data:image/png;base64,", bytes), ...size };
    }),
  );
  const balance = result.balance === undefined ? {} : { balance: result.balance };
  if (!result.batch) {
    const { label: _label, status: _status, ...flat } = items[0]! as Record<string, unknown>;
    return { ...flat, cost: money(result.cost), ...balance };
  }
  return { images: items, cost: money(result.cost), ...(result.refunded ? { refunded: money(result.refunded) } : {}), ...balance };
}
