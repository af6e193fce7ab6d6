/**
 * The photo_jobs table: one row per product-photography request. It carries the Idempotency-Key (the same
 * semantics as area C: replay for the same body, 409 for another body, 409 REQUEST_IN_PROGRESS while a
 * live request holds it, takeover of a crashed one) and the state of `Prefer: respond-async` jobs.
 *
 * @example
 * const claim = await claimJob(db, { userId, key, fingerprint, async: false, request, now, lockMs });
 * if (claim.kind === "replay") return render(claim.job);
 */
import { and, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { photoJobs } from "../../db/schema";
import { ApiError } from "../http/errors";
import type { Services } from "../services";

export type JobRow = typeof photoJobs.$inferSelect;

/** How long a runner holds a job before another may take it over. */
export const JOB_LOCK_MS = 10 * 60_000;
/**
 * How long a synchronous request holds its job between heartbeats (renewed every third of it while it
 * runs): a request that died (a client that went away on the edge, a process killed) frees its key soon, and
 * the retry with the same Idempotency-Key takes it over and continues the stored predictions.
 */
export const SYNC_LOCK_MS = 30_000;
/**
 * How long a runner that only dispatches predictions holds an async job between heartbeats (renewed every
 * third of it while it creates them): a runner that died is taken over within seconds.
 */
export const DISPATCH_LOCK_MS = 15_000;
/**
 * How long the process that queued an async job has to start it itself once the job's inputs are stored (the
 * queued job's `locked_until`); then any sweep may start it, so a job whose process died right after its 202
 * waits seconds, not a sweep's half minute. Two starters are harmless: taking the job is one conditional UPDATE.
 */
export const QUEUED_LEASE_MS = 5_000;
/** Attempts of an async job before it is failed for good (a job that crashes its process every time). */
export const MAX_JOB_ATTEMPTS = 3;
const RETRY_AFTER_SECONDS = 10;

export type Claim = { kind: "new"; job: JobRow } | { kind: "replay"; job: JobRow };

interface ClaimInput {
  userId: string;
  key: string | null;
  fingerprint: string;
  async: boolean;
  request: Record<string, unknown>;
  now: Date;
}

/**
 * Creates the job row, or answers from the row the key already has. Throws 409 IDEMPOTENCY_KEY_REUSED for
 * another body and 409 REQUEST_IN_PROGRESS (Retry-After: 10) while a live request holds the key.
 */
export async function claimJob(db: Db, input: ClaimInput): Promise<Claim> {
  const lockedUntil = new Date(input.now.getTime() + SYNC_LOCK_MS);
  for (let round = 0; round < 5; round++) {
    const [created] = await db
      .insert(photoJobs)
      .values({
        userId: input.userId,
        idempotencyKey: input.key,
        fingerprint: input.fingerprint,
        async: input.async,
        status: input.async ? "queued" : "running",
        request: input.request,
        // The request holds its job while it loads the inputs, in either mode (createPhoto renews it).
        lockedUntil,
        attempts: input.async ? 0 : 1,
      })
      .onConflictDoNothing()
      .returning();
    if (created) return { kind: "new", job: created };

    const [existing] = await db
      .select()
      .from(photoJobs)
      .where(and(eq(photoJobs.userId, input.userId), eq(photoJobs.idempotencyKey, input.key!)))
      .limit(1);
    if (!existing) continue; // released between the two statements
    if (existing.fingerprint !== input.fingerprint) {
      // The fingerprint holds the mode too: say so when the mode is what differs (the body may be the same).
      const message =
        existing.async !== input.async
          ? `This Idempotency-Key was first used ${existing.async ? "with" : "without"} Prefer: respond-async; a replay is the same body sent the same way. Use a new key for a new request.`
          : "This Idempotency-Key was used with a different request body; use a new key for a new request.";
      throw new ApiError("IDEMPOTENCY_KEY_REUSED", message);
    }
    if (existing.status === "succeeded" || existing.status === "failed" || existing.async) return { kind: "replay", job: existing };
    if (existing.lockedUntil && existing.lockedUntil > input.now) {
      throw new ApiError("REQUEST_IN_PROGRESS", "A request with this Idempotency-Key is still being processed; retry in 10 seconds.", {
        headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
      });
    }
    // The request that held the key died: take it over, fenced on the lock we saw.
    const [taken] = await db
      .update(photoJobs)
      .set({ lockedUntil, attempts: sql`${photoJobs.attempts} + 1`, updatedAt: input.now })
      .where(and(eq(photoJobs.id, existing.id), existing.lockedUntil ? eq(photoJobs.lockedUntil, existing.lockedUntil) : sql`${photoJobs.lockedUntil} is null`))
      .returning();
    if (taken) return { kind: "new", job: taken };
  }
  throw new ApiError("REQUEST_IN_PROGRESS", "A request with this Idempotency-Key is still being processed; retry in 10 seconds.", {
    headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
  });
}

/**
 * Holds a job's lock while its holder works (a request loading its inputs and, when synchronous, generating,
 * SYNC_LOCK_MS; a dispatching runner, DISPATCH_LOCK_MS): renewed every third of `lockMs`, fenced on the holder's
 * attempt (a runner taking a queued job makes a new one) and only while the job is undispatched, so only a dead
 * holder's lock runs out. Answers the function that stops the renewals.
 */
export function holdJobLock(services: Pick<Services, "db" | "clock" | "log">, job: Pick<JobRow, "id" | "attempts">, lockMs: number): () => void {
  const heartbeat = setInterval(() => {
    services.db
      .update(photoJobs)
      .set({ lockedUntil: new Date(services.clock.now().getTime() + lockMs) })
      .where(
        and(eq(photoJobs.id, job.id), eq(photoJobs.attempts, job.attempts), inArray(photoJobs.status, ["queued", "running"]), isNull(photoJobs.dispatchedAt)),
      )
      .catch((err: unknown) => services.log.warn("photo job lock not renewed", { jobId: job.id, error: String(err) }));
  }, lockMs / 3);
  return () => clearInterval(heartbeat);
}

/**
 * Deletes a job that ended before any side effect (bad input), so its key can be used again; fenced on the
 * attempt, so a request whose job was taken over deletes nothing. Answers whether it deleted the job.
 */
export async function releaseJob(db: Db, job: Pick<JobRow, "id" | "attempts">): Promise<boolean> {
  const rows = await db
    .delete(photoJobs)
    .where(and(eq(photoJobs.id, job.id), eq(photoJobs.attempts, job.attempts), inArray(photoJobs.status, ["queued", "running"])))
    .returning({ id: photoJobs.id });
  return rows.length > 0;
}

export interface JobOutcome {
  status: "succeeded" | "failed";
  result: Record<string, unknown> | null;
  responseStatus: number;
  error?: { code: string; message: string };
}

/**
 * Records the outcome, fenced on the attempt that ran: a runner whose job was taken over (its lock expired,
 * another attempt started) writes nothing. Returns whether it was recorded.
 */
export async function finishJob(db: Db, job: Pick<JobRow, "id" | "attempts">, outcome: JobOutcome, now: Date): Promise<boolean> {
  const rows = await db
    .update(photoJobs)
    .set({
      status: outcome.status,
      result: outcome.result,
      responseStatus: outcome.responseStatus,
      errorCode: outcome.error?.code ?? null,
      errorMessage: outcome.error?.message ?? null,
      lockedUntil: null,
      finishedAt: now,
      updatedAt: now,
    })
    .where(and(eq(photoJobs.id, job.id), eq(photoJobs.attempts, job.attempts), inArray(photoJobs.status, ["queued", "running"])))
    .returning({ id: photoJobs.id });
  return rows.length > 0;
}

/** The job if the user owns it; 404 JOB_NOT_FOUND otherwise (another user's job is not found, not forbidden). */
export async function getJob(db: Db, userId: string, id: string): Promise<JobRow> {
  const [job] = await db
    .select()
    .from(photoJobs)
    .where(and(eq(photoJobs.id, id), eq(photoJobs.userId, userId)))
    .limit(1);
  if (!job) throw new ApiError("JOB_NOT_FOUND", "No product-photography job with this id for this key's owner.");
  return job;
}

/** Takes an async job to run it: queued, or running under an expired lock (its runner died). */
export async function takeAsyncJob(db: Db, id: string, now: Date, lockMs = JOB_LOCK_MS): Promise<JobRow | null> {
  const [job] = await db
    .update(photoJobs)
    .set({ status: "running", lockedUntil: new Date(now.getTime() + lockMs), attempts: sql`${photoJobs.attempts} + 1`, updatedAt: now })
    .where(
      and(
        eq(photoJobs.id, id),
        eq(photoJobs.async, true),
        lt(photoJobs.attempts, MAX_JOB_ATTEMPTS),
        or(eq(photoJobs.status, "queued"), and(eq(photoJobs.status, "running"), isNull(photoJobs.dispatchedAt), lt(photoJobs.lockedUntil, now))),
      ),
    )
    .returning();
  return job ?? null;
}

/**
 * Async jobs a sweep should (re)start: queued ones not picked up (once their request's lock or their lease ran
 * out; at once with `anyAge`), and running ones whose runner died.
 */
export async function dueAsyncJobs(db: Db, now: Date, limit = 10, anyAge = false): Promise<string[]> {
  const rows = await db
    .select({ id: photoJobs.id })
    .from(photoJobs)
    .where(
      and(
        eq(photoJobs.async, true),
        // Those out of attempts are the sweep's to fail; they never crowd out the ones that can run.
        lt(photoJobs.attempts, MAX_JOB_ATTEMPTS),
        or(
          and(
            eq(photoJobs.status, "queued"),
            anyAge
              ? undefined
              : // Nobody holds it: its request's lock (a request that died before storing the inputs: the job is
                // failed and its credits released) or its lease ran out.
                or(isNull(photoJobs.lockedUntil), lt(photoJobs.lockedUntil, now)),
          ),
          and(eq(photoJobs.status, "running"), isNull(photoJobs.dispatchedAt), lt(photoJobs.lockedUntil, now)),
        ),
      ),
    )
    .limit(limit);
  return rows.map((r) => r.id);
}
