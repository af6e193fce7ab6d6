/**
 * `Prefer: respond-async` jobs: the POST stores its checked inputs and answers 202 with the job's
 * Location; the work runs in the background (`services.defer`), and a sweep restarts a job whose process
 * died (its lock expired) up to MAX_JOB_ATTEMPTS times. The ledger is keyed by (job, item), so a restarted
 * job never charges an image twice.
 *
 * @example
 * await queueAsyncJob(services, job.id, body, inputs);   // in the POST
 * await resumePhotoJobs(services);                        // in the sweep
 */
import { and, eq, gte, lt } from "drizzle-orm";
import { photoJobs } from "../../db/schema";
import { ApiError } from "../http/errors";
import type { Services } from "../services";
import { generateItems, inputKey, isItemError, wholeFailure, type Inputs, type ItemError } from "./generate";
import { dueAsyncJobs, finishJob, MAX_JOB_ATTEMPTS, takeAsyncJob, type JobRow } from "./jobs";
import { resolveRequest } from "./request";
import type { PhotoRequestBody } from "./schemas";
import type { InputImage } from "./types";

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
  await services.db
    .update(photoJobs)
    .set({ request: request as unknown as Record<string, unknown> })
    .where(eq(photoJobs.id, jobId));
  services.defer(runAsyncJob(services, jobId));
}

/** Runs one async job if it can be taken (queued, or its runner's lock expired); never throws. */
export async function runAsyncJob(services: Services, jobId: string): Promise<void> {
  const job = await takeAsyncJob(services.db, jobId, services.clock.now());
  if (!job) return;
  try {
    await runTaken(services, job);
  } catch (err) {
    services.log.error("photo job failed", { jobId, error: err instanceof Error ? err.message : String(err) });
    const error =
      err instanceof ApiError
        ? { code: err.code, message: err.message }
        : { code: "GENERATION_FAILED", message: "The job failed because of a failure on our side; submit it again." };
    await finishJob(
      services.db,
      job,
      { status: "failed", result: null, responseStatus: err instanceof ApiError ? err.status : 500, error },
      services.clock.now(),
    );
  }
}

async function runTaken(services: Services, job: JobRow): Promise<void> {
  const stored = job.request as unknown as StoredRequest;
  const body = { ...stored.body, productImages: stored.body.productImages.map((p) => ({ ...p, url: "stored" })) } as PhotoRequestBody;
  const request = resolveRequest(body, services.config.photoModels);
  const load = async (img: StoredImage): Promise<InputImage> => {
    const object = await services.storage.get(img.key);
    if (!object) throw new ApiError("INTERNAL", "An input image of this job is missing from storage.");
    return { bytes: object.bytes, mimeType: img.mimeType, width: img.width, height: img.height, key: img.key, url: services.storage.urlFor(img.key) };
  };
  const inputs: Inputs = {
    products: await Promise.all(stored.products.map((p) => (isItemError(p) ? p : load(p)))),
    logo: stored.logo ? await load(stored.logo) : undefined,
    reference: stored.reference ? await load(stored.reference) : undefined,
  };
  const { result } = await generateItems(services, { userId: job.userId, jobId: job.id }, request, inputs, { persist: true });
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
 * The sweep's part for area B: restarts async jobs that were never picked up or whose runner died, and
 * fails for good the ones that used up their attempts.
 */
export async function resumePhotoJobs(services: Services): Promise<number> {
  const now = services.clock.now();
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
    .where(and(eq(photoJobs.async, true), eq(photoJobs.status, "running"), lt(photoJobs.lockedUntil, now), gte(photoJobs.attempts, MAX_JOB_ATTEMPTS)))
    .returning({ id: photoJobs.id });
  const due = await dueAsyncJobs(services.db, now);
  for (const id of due) services.defer(runAsyncJob(services, id));
  return due.length + exhausted.length;
}
