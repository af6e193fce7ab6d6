/**
 * The usage ledger (`generations`): one row per generated image with its owner, model, resolution and
 * price. A row is keyed by (job, item), so a retried or resumed job never charges an image twice.
 *
 * @example
 * await recordGeneration(db, { userId, jobId, itemIndex: 0, label: null, model, resolution: "2K", aspectRatio: "1:1", provider: "local" });
 * const totals = await usageTotals(db, userId); // { images, credits, usd, inr }
 */
import { eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { generations } from "../../db/schema";
import type { AspectRatio, ModelOption, Resolution } from "./types";

export interface GenerationRecord {
  userId: string;
  jobId: string;
  itemIndex: number;
  label: string | null;
  model: ModelOption;
  resolution: Resolution;
  aspectRatio: AspectRatio;
  provider: string;
}

export async function recordGeneration(db: Db, r: GenerationRecord): Promise<void> {
  const price = r.model.pricing[r.resolution]!;
  await db
    .insert(generations)
    .values({
      userId: r.userId,
      jobId: r.jobId,
      itemIndex: r.itemIndex,
      label: r.label,
      provider: r.provider,
      model: r.model.model,
      resolution: r.resolution,
      aspectRatio: r.aspectRatio,
      images: 1,
      credits: price.credits,
      usd: price.usd,
      inr: price.inr,
    })
    .onConflictDoNothing();
}

export interface UsageTotals {
  images: number;
  credits: number;
  usd: string;
  inr: string;
  byModel: Array<{ model: string; resolution: string; images: number; credits: number; usd: string; inr: string }>;
}

/** A user's totals, summed exactly in the database (numeric, never floats). */
export async function usageTotals(db: Db, userId: string): Promise<UsageTotals> {
  const rows = await db
    .select({
      model: generations.model,
      resolution: generations.resolution,
      images: sql<number>`sum(${generations.images})::int`,
      credits: sql<number>`sum(${generations.credits})::int`,
      usd: sql<string>`sum(${generations.usd})::text`,
      inr: sql<string>`sum(${generations.inr})::text`,
    })
    .from(generations)
    .where(eq(generations.userId, userId))
    .groupBy(generations.model, generations.resolution)
    .orderBy(generations.model, generations.resolution);
  const [total] = await db
    .select({
      images: sql<number>`coalesce(sum(${generations.images}), 0)::int`,
      credits: sql<number>`coalesce(sum(${generations.credits}), 0)::int`,
      usd: sql<string>`coalesce(sum(${generations.usd}), 0)::numeric(14,4)::text`,
      inr: sql<string>`coalesce(sum(${generations.inr}), 0)::numeric(14,2)::text`,
    })
    .from(generations)
    .where(eq(generations.userId, userId));
  return {
    images: Number(total?.images ?? 0),
    credits: Number(total?.credits ?? 0),
    usd: total?.usd ?? "0.0000",
    inr: total?.inr ?? "0.00",
    byModel: rows.map((r) => ({ ...r, images: Number(r.images), credits: Number(r.credits) })),
  };
}
