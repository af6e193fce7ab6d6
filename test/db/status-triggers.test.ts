/**
 * The statement triggers of deliveries and posts, on PGlite and on the machine's PostgreSQL, given statements
 * that change some rows' status-relevant columns and leave others as they were (as a batch record does): the
 * posts' stored status follows, the per-user status counts still sum to the posts' statuses, and the outbox
 * gets one message per target reaching a final state (published, or failed with no next attempt) and per post
 * reaching a final status, none for a row written again with what it had. The triggers compare a statement's
 * old and new rows by set operations (migration 0018); this is what they must keep computing.
 */
import { afterAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { executeRows, type Db } from "../../db/client";
import { createUser } from "../../src/http/api-keys";
import { nodeDbDrivers } from "../helpers/node-db-drivers";

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

/**
 * One UPDATE of every delivery of the user: the (post caption/account) pairs in `set` get its values (`next`:
 * due now, or none), every other row is written again with what it has.
 */
async function update(db: Db, userId: string, set: Record<string, { status: string; next: "now" | "none" }>): Promise<void> {
  const cases = Object.entries(set).map(([key, v]) => ({ key, status: v.status, next: v.next }));
  await db.execute(sql`
    update deliveries d
       set status = coalesce(c.status, d.status),
           attempts = case when c.key is null then d.attempts else 1 end,
           next_attempt_at = case when c.key is null then d.next_attempt_at when c.next = 'now' then now() end,
           updated_at = now()
      from (select r.id, v.key, v.status, v.next
              from deliveries r join posts p on p.id = r.post_id
              left join json_to_recordset(${JSON.stringify(cases)}::json) as v(key text, status text, next text) on v.key = p.caption || '/' || r.account_id
             where r.user_id = ${userId}) c
     where c.id = d.id`);
}

describe.each(nodeDbDrivers(cleanups))("status and outbox triggers on $name", ({ open }) => {
  it("follow the rows that changed in a statement, and only those", async () => {
    const handle = await open();
    cleanups.push(() => handle.close());
    const { db } = handle;
    const { userId } = await createUser(db, `triggers-${crypto.randomUUID().slice(0, 8)}@example.test`);
    await db.execute(sql`insert into webhook_endpoints (user_id, url, secret_ciphertext) values (${userId}, 'http://127.0.0.1:9/hooks', 'x')`);
    await db.execute(sql`
      with p as (insert into posts (user_id, caption) select ${userId}, c from unnest(array['A', 'B', 'C', 'D', 'E']) c returning id)
      insert into deliveries (post_id, user_id, account_id, platform, status, next_attempt_at)
      select p.id, ${userId}, a, 'pageplatform', 'pending', now() from p cross join unnest(array['pageplatform:1', 'pageplatform:2']) a`);

    const statuses = async () =>
      Object.fromEntries(
        (await executeRows<{ caption: string; status: string }>(db, sql`select caption, status from posts where user_id = ${userId}`)).map((r) => [
          r.caption,
          r.status,
        ]),
      );
    const messages = async () =>
      (
        await executeRows<{ type: string; caption: string; account: string | null }>(
          db,
          sql`select m.type, p.caption, m.account_id as account from webhook_messages m join posts p on p.id::text = m.subject_id
               where m.user_id = ${userId} order by m.created_at, m.id`,
        )
      ).map((m) => `${m.type} ${m.caption}${m.account ? ` ${m.account}` : ""}`);
    const countsMatch = async () => {
      const counted = await executeRows<{ status: string; n: number }>(
        db,
        sql`select status, sum(n)::int as n from post_status_counts where user_id = ${userId} group by status having sum(n) <> 0 order by status`,
      );
      const actual = await executeRows<{ status: string; n: number }>(
        db,
        sql`select status, count(*)::int as n from posts where user_id = ${userId} group by status order by status`,
      );
      expect(counted).toEqual(actual);
    };
    expect(await statuses()).toEqual({ A: "queued", B: "queued", C: "queued", D: "queued", E: "queued" });

    // One statement: A published on both accounts; B published on one and failed for good on the other; C
    // failed on one with a retry due, E on both; D's rows written again as they were.
    await update(db, userId, {
      "A/pageplatform:1": { status: "published", next: "none" },
      "A/pageplatform:2": { status: "published", next: "none" },
      "B/pageplatform:1": { status: "published", next: "none" },
      "B/pageplatform:2": { status: "failed", next: "none" },
      "C/pageplatform:1": { status: "failed", next: "now" },
      "E/pageplatform:1": { status: "failed", next: "now" },
      "E/pageplatform:2": { status: "failed", next: "now" },
    });
    expect(await statuses()).toEqual({ A: "published", B: "partially_published", C: "queued", D: "queued", E: "queued" });
    expect((await messages()).sort()).toEqual(
      [
        "post.target.published A pageplatform:1",
        "post.target.published A pageplatform:2",
        "post.target.published B pageplatform:1",
        "post.target.failed B pageplatform:2",
        "post.published A",
        "post.partially_published B",
      ].sort(),
    );
    await countsMatch();

    // The same values written again: nothing changes, nothing is emitted.
    await update(db, userId, {
      "A/pageplatform:1": { status: "published", next: "none" },
      "B/pageplatform:2": { status: "failed", next: "none" },
      "C/pageplatform:1": { status: "failed", next: "now" },
    });
    expect(await messages()).toHaveLength(6);
    await countsMatch();

    // E's retries and C's fail for good (only their next attempt changes: E is failed), then C's other target
    // publishes; D's first target starts publishing.
    await update(db, userId, {
      "C/pageplatform:1": { status: "failed", next: "none" },
      "E/pageplatform:1": { status: "failed", next: "none" },
      "E/pageplatform:2": { status: "failed", next: "none" },
      "D/pageplatform:1": { status: "publishing", next: "now" },
    });
    expect(await statuses()).toEqual({ A: "published", B: "partially_published", C: "queued", D: "publishing", E: "failed" });
    await update(db, userId, { "C/pageplatform:2": { status: "published", next: "none" } });
    expect(await statuses()).toEqual({ A: "published", B: "partially_published", C: "partially_published", D: "publishing", E: "failed" });
    expect((await messages()).slice(6).sort()).toEqual(
      [
        "post.target.failed C pageplatform:1",
        "post.target.failed E pageplatform:1",
        "post.target.failed E pageplatform:2",
        "post.failed E",
        "post.target.published C pageplatform:2",
        "post.partially_published C",
      ].sort(),
    );
    await countsMatch();
  }, 60_000);
});
