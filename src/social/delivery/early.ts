/**
 * A QStash message that arrives before its delivery is due (clock skew, or a message outliving a reschedule)
 * is not published; if it is the delivery's current job, a new message is queued for the due time.
 */
import { and, eq, inArray } from "drizzle-orm";
import { deliveries } from "../../../db/schema";
import type { Services } from "../../services";
import { isUuid } from "../../lib/encoding";
import { setJobId } from "./store";

export async function rescheduleIfEarly(services: Services, deliveryId: string, messageId: string | null): Promise<void> {
  if (!messageId || services.queue.kind !== "qstash" || !isUuid(deliveryId)) return;
  const now = services.clock.now();
  const [row] = await services.db
    .select({ nextAttemptAt: deliveries.nextAttemptAt, jobId: deliveries.jobId })
    .from(deliveries)
    .where(and(eq(deliveries.id, deliveryId), inArray(deliveries.status, ["pending", "failed"])))
    .limit(1);
  if (!row?.nextAttemptAt || row.jobId !== messageId || row.nextAttemptAt.getTime() <= now.getTime()) return;
  const jobId = await services.queue.enqueue(deliveryId, row.nextAttemptAt);
  if (jobId) await setJobId(services.db, deliveryId, jobId, row.nextAttemptAt);
}
