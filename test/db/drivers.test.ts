/**
 * One behaviour suite, three drivers: PGlite (in memory), node-postgres and the Neon serverless driver, the
 * last two on a scratch database of the machine's PostgreSQL (the Neon driver through the WebSocket-to-TCP
 * bridge, as on the edge minus TLS). Users and keys go through the real functions of src/http/api-keys.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq, sql } from "drizzle-orm";
import { WebSocket } from "ws";
import { createNeonDb, executeRows, type Db, type DbHandle } from "../../db/client";
import { openNodeDb } from "../../db/node";
import { MAX_STATEMENTS, StatementCachingPGlite } from "../../db/pglite-statements";
import { PGlite, types } from "@electric-sql/pglite";
import { apiKeys, posts, users, type PostImage } from "../../db/schema";
import { createApiKey, createUser, findUserByEmail, revokeApiKey, verifyApiKey } from "../../src/http/api-keys";
import { createTestApp } from "../helpers/harness";
import { startNeonBridge, type NeonBridge } from "../../dev/neon-bridge";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

async function scratch(): Promise<ScratchDatabase> {
  const db = await createScratchDatabase();
  cleanups.push(db.drop);
  return db;
}

let bridge: NeonBridge | undefined;

const drivers: Array<{ name: DbHandle["driver"]; open(): Promise<DbHandle> }> = [
  { name: "pglite", open: () => openNodeDb({}) },
  { name: "node-postgres", open: async () => openNodeDb({ url: (await scratch()).url, poolSize: 4 }) },
  {
    name: "neon",
    async open() {
      const { url } = await scratch();
      const migrator = await openNodeDb({ url, poolSize: 1 });
      await migrator.close();
      bridge ??= await startNeonBridge();
      cleanups.push(() => bridge!.close());
      return createNeonDb(url, { wsProxy: bridge.wsProxy, fetchEndpoint: bridge.fetchEndpoint, webSocketConstructor: WebSocket });
    },
  },
];

const email = (tag: string) => `${tag}-${crypto.randomUUID().slice(0, 8)}@example.test`;

/** The Postgres error code, whether the driver error is thrown as is or wrapped by Drizzle. */
function pgCode(err: unknown): string | undefined {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) return e.code;
  }
  return undefined;
}

describe.each(drivers)("database on $name", (driver) => {
  let handle: DbHandle;
  let db: Db;
  beforeAll(async () => {
    handle = await driver.open();
    db = handle.db;
    cleanups.push(() => handle.close());
  });

  it("is the driver it claims to be, on the database it was given", async () => {
    expect(handle.driver).toBe(driver.name);
    const [current] = await executeRows<{ name: string }>(db, sql`select current_database() as name`);
    if (driver.name === "pglite") expect(current!.name).toBe("postgres");
    else expect(current!.name).toMatch(/^t_[0-9a-f]{16}$/);
    // On Neon a statement outside a transaction is one HTTP query, and opens no connection.
    if (driver.name === "neon") expect(bridge!.httpQueries).toBeGreaterThan(0);
  });

  it("creates users and keys, verifies and revokes keys", async () => {
    const { userId } = await createUser(db, email("Keys").toUpperCase());
    const first = await createApiKey(db, userId, "first");
    const second = await createApiKey(db, userId, "second");
    expect(await verifyApiKey(db, first.key)).toMatchObject({ userId });
    expect(await verifyApiKey(db, second.key)).toMatchObject({ userId });

    const rows = await db.select().from(apiKeys).where(eq(apiKeys.userId, userId));
    expect(rows.map((r) => r.name).sort()).toEqual(["first", "second"]);
    expect(rows.every((r) => r.hash.length === 64 && !r.hash.includes(first.key.slice(3)) && r.createdAt instanceof Date)).toBe(true);

    expect(await revokeApiKey(db, first.prefix)).toBe(true);
    expect(await revokeApiKey(db, first.prefix)).toBe(false);
    expect(await verifyApiKey(db, first.key)).toBeNull();
    expect(await verifyApiKey(db, second.key)).toMatchObject({ userId });
  });

  it("runs a transaction on a connection of its own and each statement outside one as one query (Neon)", async () => {
    if (driver.name !== "neon") return;
    const [connections, queries] = [bridge!.connections, bridge!.httpQueries];
    await executeRows(db, sql`select 1 as one`);
    expect([bridge!.connections - connections, bridge!.httpQueries - queries]).toEqual([0, 1]);
    const inside = await db.transaction(async (tx) => executeRows<{ n: number }>(tx, sql`select txid_current() = txid_current() as n`));
    expect(inside).toEqual([{ n: true }]);
    expect([bridge!.connections - connections, bridge!.httpQueries - queries]).toEqual([1, 1]);
  });

  it("commits a transaction as a whole", async () => {
    const address = email("tx-commit");
    await db.transaction(async (tx) => {
      const [user] = await tx.insert(users).values({ email: address }).returning({ id: users.id });
      await tx.insert(posts).values({ userId: user!.id, caption: "in a transaction" });
    });
    const found = await findUserByEmail(db, address);
    expect(found).not.toBeNull();
    const [post] = await db.select().from(posts).where(eq(posts.userId, found!.userId));
    expect(post?.caption).toBe("in a transaction");
  });

  it("rolls back a transaction that throws, and one that calls rollback()", async () => {
    const thrown = email("tx-throw");
    await expect(
      db.transaction(async (tx) => {
        await tx.insert(users).values({ email: thrown });
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    expect(await findUserByEmail(db, thrown)).toBeNull();

    const explicit = email("tx-rollback");
    await expect(
      db.transaction(async (tx) => {
        await tx.insert(users).values({ email: explicit });
        tx.rollback();
      }),
    ).rejects.toThrow();
    expect(await findUserByEmail(db, explicit)).toBeNull();

    // The pool is still usable after the rollbacks.
    expect(await db.execute(sql`select 1 as one`)).toBeDefined();
  });

  it("reports a unique violation with the Postgres code 23505", async () => {
    const address = email("dup");
    await createUser(db, address);
    const err = await createUser(db, ` ${address.toUpperCase()} `).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(pgCode(err)).toBe("23505");
  });

  it("round-trips jsonb and timestamptz exactly", async () => {
    const { userId } = await createUser(db, email("types"));
    const images: PostImage[] = [
      { url: 'https://cdn.example.test/a.jpg?x=1&y="2"', width: 1080, height: 1350, mediaId: "m-1" },
      { url: "https://cdn.example.test/ü/b.png", width: 1, height: 1 },
    ];
    const hashtags = ["#sale", "#ünïcödé", "#emoji🎉", "back\\slash", ""];
    const when = new Date("2031-05-06T07:08:09.123Z");
    const [inserted] = await db.insert(posts).values({ userId, caption: "types", hashtags, images, scheduledFor: when }).returning();
    const [read] = await db.select().from(posts).where(eq(posts.id, inserted!.id));
    expect(read!.hashtags).toEqual(hashtags);
    expect(read!.images).toEqual(images);
    expect(read!.scheduledFor).toBeInstanceOf(Date);
    expect(read!.scheduledFor!.toISOString()).toBe(when.toISOString());
    expect(Math.abs(read!.createdAt.getTime() - Date.now())).toBeLessThan(60_000);

    // What the server stored, seen from SQL: a real jsonb array and the same UTC instant.
    const [check] = await db
      .select({
        firstUrl: sql<string>`${posts.images}->0->>'url'`,
        tagCount: sql<number>`jsonb_array_length(${posts.hashtags})::int`,
        utc: sql<string>`to_char(${posts.scheduledFor} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS')`,
      })
      .from(posts)
      .where(eq(posts.id, inserted!.id));
    expect(check).toEqual({ firstUrl: images[0]!.url, tagCount: hashtags.length, utc: "2031-05-06T07:08:09.123" });

    // Timestamps compare as instants in WHERE clauses too.
    const due = await db.select({ id: posts.id }).from(posts).where(sql`${posts.scheduledFor} = ${when}`);
    expect(due.map((r) => r.id)).toContain(inserted!.id);
  });
});

describe("the app on the machine's PostgreSQL", () => {
  it("answers GET /api/v1/social/accounts through node-postgres", async () => {
    const { url, name } = await scratch();
    const h = await createTestApp({ env: { DATABASE_URL: url } });
    try {
      const [current] = await executeRows<{ name: string }>(h.db, sql`select current_database() as name`);
      expect(current!.name).toBe(name);
      const { apiKey } = await h.createUser();
      const res = await h.app.request("/api/v1/social/accounts", { headers: h.auth(apiKey) });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ data: { connectionStatus: "connected", accounts: [] } });
      const denied = await h.app.request("/api/v1/social/accounts");
      expect(denied.status).toBe(401);
    } finally {
      await h.drain();
      await h.close();
    }
  });
});

describe("PGlite keeps its statements (db/pglite-statements.ts)", () => {
  let kept: StatementCachingPGlite;
  let plain: PGlite;
  beforeAll(async () => {
    kept = new StatementCachingPGlite();
    plain = new PGlite();
    for (const client of [kept, plain])
      await client.exec("create table t (id int primary key, body jsonb, tags text[], at timestamptz, ok boolean, big bigint)");
    cleanups.push(
      () => kept.close(),
      () => plain.close(),
    );
  });

  /** The named statements PostgreSQL holds for this session (the counting statement is itself kept). */
  const serverStatements = async () => (await kept.query<{ n: number }>("select count(*)::int as n from pg_prepared_statements")).rows[0]!.n;

  it("answers every run of a statement with its own values, as PGlite does, parsing it once", async () => {
    const insert = "insert into t (id, body, tags, at, ok, big) values ($1, $2, $3, $4, $5, $6) returning *";
    const before = kept.keptStatements;
    for (let id = 1; id <= 20; id++) {
      const values = [id, { n: id, s: `"q" ü ${id}` }, [`a${id}`, "b,c", 'd"e'], new Date(Date.UTC(2030, 0, id)), id % 2 === 0, 2n ** 40n + BigInt(id)];
      const ours = await kept.query(insert, values);
      const theirs = await plain.query(insert, values);
      expect(ours).toEqual(theirs);
      expect(ours.rows).toHaveLength(1);
    }
    expect(kept.keptStatements).toBe(before + 1);
    // PostgreSQL holds exactly the statements kept: each text parsed once, none left behind.
    expect(await serverStatements()).toBe(kept.keptStatements);
    const read = "select * from t where id = any($1::int[]) order by id";
    expect(await kept.query(read, [[3, 4, 99]])).toEqual(await plain.query(read, [[3, 4, 99]]));
    expect(await kept.query(read, [[5]], { rowMode: "array" })).toEqual(await plain.query(read, [[5]], { rowMode: "array" }));
    // A caller's parsers (Drizzle brings its own for dates) win for their types; the rest stay PGlite's.
    const parsers = { [types.INT4]: (v: string) => `int ${v}`, [types.TIMESTAMPTZ]: (v: string) => v };
    const withParsers = await kept.query<Record<string, unknown>>(read, [[6]], { parsers });
    expect(withParsers).toEqual(await plain.query(read, [[6]], { parsers }));
    expect(withParsers.rows[0]).toMatchObject({ id: "int 6", big: 2 ** 40 + 6, ok: true, body: { n: 6, s: '"q" ü 6' } });
    expect(typeof withParsers.rows[0]!.at).toBe("string");
  });

  it("reports a failed run with its Postgres code and runs the statement again after it", async () => {
    const insert = "insert into t (id) values ($1)";
    await kept.query(insert, [100]);
    const err = await kept.query(insert, [100]).catch((e: unknown) => e);
    expect(pgCode(err)).toBe("23505");
    expect((err as { query?: string }).query).toBe(insert);
    expect(kept.isInTransaction()).toBe(false);
    await kept.query(insert, [101]);
    expect((await kept.query<{ n: number }>("select count(*)::int as n from t where id in (100, 101)")).rows[0]!.n).toBe(2);

    const broken = await kept.query("selec 1").catch((e: unknown) => e);
    expect(pgCode(broken)).toBe("42601");
    expect((await kept.query<{ one: number }>("select 1 as one")).rows).toEqual([{ one: 1 }]);
  });

  it("keeps at most MAX_STATEMENTS, and a statement let go runs again", async () => {
    for (let i = 0; i < MAX_STATEMENTS + 20; i++) {
      const { rows } = await kept.query<{ n: number }>(`select $1::int + ${i} as n`, [i]);
      expect(rows[0]!.n).toBe(2 * i);
    }
    expect(kept.keptStatements).toBe(MAX_STATEMENTS);
    expect(await serverStatements()).toBe(MAX_STATEMENTS);
    expect((await kept.query<{ n: number }>("select $1::int + 0 as n", [7])).rows[0]!.n).toBe(7);
  });

  it("passes notices on once per run", async () => {
    const notices: string[] = [];
    const text = "do $$ begin raise notice 'hello'; end $$";
    for (let i = 0; i < 2; i++) await kept.query(text, [], { onNotice: (n) => notices.push(n.message ?? "") });
    expect(notices).toEqual(["hello", "hello"]);
  });

  it("runs a statement that fails for another reason once (no retry but the stale plan's)", async () => {
    await kept.exec(`create sequence calls; create function refuse() returns int language plpgsql as $$
      begin perform nextval('calls'); raise exception 'not here' using errcode = 'feature_not_supported'; end $$`);
    const err = await kept.query("select refuse()").catch((e: unknown) => e);
    expect(pgCode(err)).toBe("0A000");
    expect((await kept.query<{ n: number }>("select last_value::int as n from calls")).rows[0]!.n).toBe(1);
  });

  it("parses a statement afresh when its table's columns change", async () => {
    await kept.exec("create table shapes (id int)");
    await kept.query("insert into shapes values (1)");
    expect((await kept.query("select * from shapes")).rows).toEqual([{ id: 1 }]);
    await kept.exec("alter table shapes add column name text default 'square'");
    expect((await kept.query("select * from shapes")).rows).toEqual([{ id: 1, name: "square" }]);

    // Inside a transaction the stale statement aborts that transaction; the next one parses it afresh.
    await kept.exec("alter table shapes alter column id type bigint");
    const stale = await kept.transaction((tx) => tx.query("select * from shapes")).catch((e: unknown) => e);
    expect(pgCode(stale)).toBe("0A000");
    expect((await kept.transaction((tx) => tx.query("select * from shapes"))).rows).toEqual([{ id: 1, name: "square" }]);
  });

  it("runs kept statements inside transactions, which commit or roll back as a whole", async () => {
    const insert = "insert into t (id) values ($1)";
    await kept.transaction(async (tx) => {
      await tx.query(insert, [200]);
      await tx.query(insert, [201]);
    });
    const failed = await kept
      .transaction(async (tx) => {
        await tx.query(insert, [202]);
        await tx.query(insert, [200]);
      })
      .catch((e: unknown) => e);
    expect(pgCode(failed)).toBe("23505");
    let closed: unknown;
    await kept.transaction(async (tx) => {
      await tx.query(insert, [203]);
      await tx.rollback();
      closed = await tx.query(insert, [204]).catch((e: unknown) => e);
    });
    expect(String(closed)).toMatch(/closed/);
    // A text first seen inside a transaction is kept like any other.
    const text = "select count(*) from t where id > $1";
    await kept.transaction((tx) => tx.query(text, [0]));
    const named = await kept.query<{ n: number }>("select count(*)::int as n from pg_prepared_statements where statement = $1", [text]);
    expect(named.rows[0]!.n).toBe(1);
    const ids = (await kept.query<{ id: number }>("select id from t where id between 200 and 299 order by id")).rows.map((r) => r.id);
    expect(ids).toEqual([200, 201]);
    expect(kept.isInTransaction()).toBe(false);
  });
});
