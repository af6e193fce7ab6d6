/**
 * A post's stored status when two transactions write its targets at once, on the machine's PostgreSQL: a
 * claim of one target and a record of its sibling, in both orders of who holds the post first. The status
 * trigger locks the post before it recomputes it (posts_refresh_status), so whichever waits sees what the
 * other committed, and the stored status is what the targets say once both have committed. (A shortcut
 * that set a claim's posts to 'publishing' under `WHERE status <> 'publishing'` failed both: the filter
 * skipped the row the other transaction held, without waiting for it.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { openNodeDb } from "../../db/node";
import { createScratchDatabase } from "../../dev/postgres";
import { createUser } from "../../src/http/api-keys";

const cleanups: Array<() => Promise<void>> = [];
let url = "";
let userId = "";
beforeAll(async () => {
  const scratch = await createScratchDatabase();
  cleanups.push(scratch.drop);
  const handle = await openNodeDb({ url: scratch.url, poolSize: 1 });
  cleanups.push(() => handle.close());
  url = scratch.url;
  ({ userId } = await createUser(handle.db, "race@example.test"));
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  cleanups.push(() => client.end());
  return client;
}

/** A post with two targets, A and B: A pending, B being published. */
async function postWithTwoTargets(c: pg.Client) {
  const { rows } = await c.query<{ id: string }>("insert into posts (user_id, caption) values ($1, 'race') returning id", [userId]);
  const postId = rows[0]!.id;
  const targets = await c.query<{ id: string; account_id: string }>(
    `insert into deliveries (post_id, user_id, account_id, platform, status, attempts, next_attempt_at)
     values ($1, $2, 'pageplatform:a', 'pageplatform', 'pending', 0, now()), ($1, $2, 'pageplatform:b', 'pageplatform', 'publishing', 1, now())
     returning id, account_id`,
    [postId, userId],
  );
  const id = (account: string) => targets.rows.find((r) => r.account_id === account)!.id;
  return { postId, a: id("pageplatform:a"), b: id("pageplatform:b") };
}

const claim = (c: pg.Client, id: string) => c.query("update deliveries set status = 'publishing', attempts = attempts + 1 where id = $1", [id]);
const record = (c: pg.Client, id: string) => c.query("update deliveries set status = 'published', next_attempt_at = null where id = $1", [id]);
const stored = async (c: pg.Client, postId: string) => (await c.query<{ status: string }>("select status from posts where id = $1", [postId])).rows[0]!.status;
const blocked = async (c: pg.Client, pid: number) =>
  (await c.query<{ n: number }>("select count(*)::int as n from pg_locks where pid = $1 and not granted", [pid])).rows[0]!.n > 0;
async function untilBlocked(c: pg.Client, pid: number) {
  for (let i = 0; i < 500 && !(await blocked(c, pid)); i++) await new Promise((r) => setTimeout(r, 10));
  expect(await blocked(c, pid)).toBe(true);
}

/** A statement left waiting: its failure is reported where it is awaited, not as an unhandled rejection. */
function pending<T>(run: Promise<T>): Promise<T> {
  run.catch(() => {});
  return run;
}

describe("stored post status under concurrent target writes (PostgreSQL)", () => {
  it("a claim waiting for a sibling's record: 'publishing' once both commit, 'published' after the claim's record", async () => {
    const [one, two, watch] = [await connect(), await connect(), await connect()];
    const { postId, a, b } = await postWithTwoTargets(watch);
    const claimer = (await one.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]!.pid;

    await two.query("begin");
    await record(two, b); // locks the post, recomputes it: A pending, B published (queued)
    await one.query("begin");
    const claimed = pending(claim(one, a)); // waits for the post
    await untilBlocked(watch, claimer);
    await two.query("commit");
    await claimed;
    await one.query("commit");
    expect(await stored(watch, postId)).toBe("publishing");

    await record(watch, a);
    expect(await stored(watch, postId)).toBe("published");
  });

  it("a sibling's record waiting for a claim: it recomputes after the claim and sees it", async () => {
    const [one, two, watch] = [await connect(), await connect(), await connect()];
    const { postId, a, b } = await postWithTwoTargets(watch);
    const recorder = (await two.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]!.pid;

    await one.query("begin");
    await claim(one, a); // locks the post, holding it
    await two.query("begin");
    const recorded = pending(record(two, b)); // waits for the post, then recomputes
    await untilBlocked(watch, recorder);
    await one.query("commit");
    await recorded;
    await two.query("commit");
    expect(await stored(watch, postId)).toBe("publishing");

    await record(watch, a);
    expect(await stored(watch, postId)).toBe("published");
  });
});
