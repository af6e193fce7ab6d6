/**
 * The ledger's side of "each delivered image is charged once", for suites that run photo jobs through
 * crashes, restarts and redelivered callbacks: every item of the jobs has exactly one generation and exactly
 * one credit charge, and there are `expected` items in all.
 *
 * @example
 * await expectOneChargePerItem(handle.db, jobs.map((j) => j.id), 25);
 */
import { expect } from "vitest";
import { and, count, eq, inArray } from "drizzle-orm";
import type { Db } from "../../db/client";
import { creditMovements, generations } from "../../db/schema";

export async function expectOneChargePerItem(db: Db, jobIds: string[], expected: number): Promise<void> {
  const charged = await db
    .select({ jobId: generations.jobId, itemIndex: generations.itemIndex, n: count() })
    .from(generations)
    .where(inArray(generations.jobId, jobIds))
    .groupBy(generations.jobId, generations.itemIndex);
  expect(charged).toHaveLength(expected);
  expect(charged.every((r) => r.n === 1)).toBe(true);
  // The customer's credits: one charge per delivered image.
  const debits = await db
    .select({ jobId: creditMovements.jobId, itemIndex: creditMovements.itemIndex, n: count() })
    .from(creditMovements)
    .where(and(inArray(creditMovements.jobId, jobIds), eq(creditMovements.kind, "charge")))
    .groupBy(creditMovements.jobId, creditMovements.itemIndex);
  expect(debits).toHaveLength(expected);
  expect(debits.every((r) => r.n === 1)).toBe(true);
}
