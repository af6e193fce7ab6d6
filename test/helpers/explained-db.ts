/**
 * A migrated scratch database on the machine's PostgreSQL and a handle on one connection of it that reports
 * the plan of every statement it runs, nested ones (triggers, functions) included: auto_explain with ANALYZE
 * (rows and loops, no timing), its plans sent as notices to this connection only, not to the server's log.
 * For tests that assert how a statement reads its tables. The database is dropped by the cleanups passed in.
 *
 * @example
 * const { db, plans } = await explainedDb(cleanups);
 * plans.length = 0; // forget the set-up's plans
 * await purgeOldWebhookMessages(db, new Date(), 30);
 * expect(plans.join("\n")).not.toContain("Seq Scan on webhook_messages");
 */
import pg from "pg";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import { schema, type Db } from "../../db/client";
import { openNodeDb } from "../../db/node";
import { nameStatements } from "../../db/prepared";
import { createScratchDatabase } from "../../dev/postgres";

export async function explainedDb(cleanups: Array<() => Promise<void>>): Promise<{ db: Db; plans: string[] }> {
  const scratch = await createScratchDatabase();
  cleanups.push(scratch.drop);
  const migrated = await openNodeDb({ url: scratch.url, poolSize: 1 });
  await migrated.close();
  const plans: string[] = [];
  const pool = new pg.Pool({ connectionString: scratch.url, max: 1, idleTimeoutMillis: 0 });
  pool.on("connect", (client) => {
    client.on("notice", (notice) => {
      if (notice.message?.includes("plan:")) plans.push(notice.message);
    });
  });
  cleanups.push(() => pool.end());
  const db = drizzle({ client: pool, schema }) as unknown as Db;
  nameStatements(db);
  await db.execute(sql.raw(`load 'auto_explain'`));
  for (const setting of [
    "auto_explain.log_min_duration = 0",
    "auto_explain.log_analyze = on",
    "auto_explain.log_timing = off",
    "auto_explain.log_nested_statements = on",
    "auto_explain.log_level = notice",
  ])
    await db.execute(sql.raw(`set ${setting}`));
  return { db, plans };
}
