/**
 * PGlite that keeps its statements: each SQL text is parsed once as a named statement, and later runs only
 * bind it to their values and execute it. PGlite's own `query` sends every statement as an unnamed one
 * (Parse, Describe, Bind, Describe, Execute, Sync), so PostgreSQL parses, analyses and plans it again on
 * every call; on the embedded default that was about half of a short statement's time, on the request
 * thread (docs/architecture.md, "Other Node specifics"). A named statement is planned generically after
 * a few runs, as node-postgres's named statements are on PostgreSQL.
 *
 * A run is one call into PostgreSQL (Bind, Describe, Execute and Sync together) instead of five. `query`, in
 * and out of a transaction, takes this path (what Drizzle's statements call); `exec` and queries with a blob
 * or explicit parameter types run as PGlite runs them. Results, errors and notices are PGlite's own (its
 * protocol serializer and result parser). The kept statements are bounded: past `MAX_STATEMENTS` the least
 * recently used one is closed. A kept statement whose table changed its columns since (PostgreSQL's "cached
 * plan must not change result type") is parsed afresh: retried once outside a transaction; inside one that
 * transaction fails, as the change would make it fail on PostgreSQL with node-postgres's named statements.
 *
 * @example
 * const client = new StatementCachingPGlite(".data/pg");
 * await client.query("select $1::int + 1 as n", [1]); // parsed and named now
 * await client.query("select $1::int + 1 as n", [2]); // bound and executed only
 */
import { PGlite, parse, protocol, type QueryOptions, type Results, type Transaction } from "@electric-sql/pglite";
import { concat } from "../src/lib/encoding";

const { serialize } = protocol;

/**
 * Statements kept at most. The app's steady set is about a hundred texts (start-up's migrations add about 80
 * used once, which age out); a kept statement with its plan holds PGlite memory that grows with the query,
 * so the number kept is bounded, well above the steady set.
 */
export const MAX_STATEMENTS = 256;

interface Kept {
  name: string;
  paramTypes: number[];
}

type BackendMessages = Awaited<ReturnType<PGlite["execProtocolStream"]>>;

export class StatementCachingPGlite extends PGlite {
  /** By SQL text, least recently used first (a Map keeps insertion order; a hit moves to the end). */
  #kept = new Map<string, Kept>();
  #counter = 0;

  override async query<T>(text: string, params: unknown[] = [], options?: QueryOptions): Promise<Results<T>> {
    if (options?.blob || options?.paramTypes) return super.query<T>(text, params, options);
    await this._checkReady();
    return this._runExclusiveTransaction(() => this._runExclusiveQuery(() => this.#run<T>(text, params, options)));
  }

  /** The transaction's `query` takes the same path (the rest of the transaction is PGlite's). */
  override transaction<T>(callback: (tx: Transaction) => Promise<T>): Promise<T> {
    return super.transaction((tx) => {
      const query = async <R>(text: string, params: unknown[] = [], options?: QueryOptions): Promise<Results<R>> => {
        if (tx.closed) throw new Error("Transaction is closed");
        if (options?.blob || options?.paramTypes) return tx.query<R>(text, params, options);
        return this._runExclusiveQuery(() => this.#run<R>(text, params, options));
      };
      return callback(Object.create(tx, { query: { value: query } }) as Transaction);
    });
  }

  /** Statements currently kept (for tests). */
  get keptStatements(): number {
    return this.#kept.size;
  }

  async #run<T>(text: string, params: unknown[], options: QueryOptions | undefined, retried = false): Promise<Results<T>> {
    const exec = (...parts: Uint8Array[]) => this.execProtocolStream(concat(parts), { syncToFs: false, onNotice: options?.onNotice });
    let messages: BackendMessages;
    let kept: Kept | undefined;
    try {
      kept = await this.#statement(text, exec);
      const types = kept.paramTypes;
      const values = params.map((value, i) => {
        if (value === null || value === undefined) return null;
        const serializer = options?.serializers?.[types[i]!] ?? this.serializers[types[i]!];
        return serializer ? serializer(value) : String(value);
      });
      // One call into PostgreSQL for the run: an error stops at the Sync, which ends the implicit transaction.
      messages = await exec(serialize.bind({ statement: kept.name, values }), serialize.describe({ type: "P" }), serialize.execute({}), serialize.sync());
    } catch (err) {
      // A table under a kept statement changed its columns (PostgreSQL re-plans other changes itself): the
      // statement is parsed afresh. Outside a transaction the run is retried once; inside one the error has
      // aborted it, and the next transaction gets the fresh statement.
      if (kept && isStalePlan(err)) {
        await this.#forget(text, exec);
        if (!retried && !this.isInTransaction()) return this.#run<T>(text, params, options, true);
      }
      throw withQuery(err, text, params, options);
    }
    if (!this.isInTransaction()) await this.syncToFs();
    // PGlite's parseResults copies its 318 default parsers into a new object whenever a query brings parsers
    // of its own, as Drizzle's always do: 78 µs a query. The caller's parsers over the defaults as their
    // prototype read the same (a parser is looked up by type id) for well under a microsecond.
    const parsers = options?.parsers ? Object.assign(Object.create(this.parsers) as PGlite["parsers"], options.parsers) : this.parsers;
    return parse.parseResults(messages, parsers, options?.rowMode ? { rowMode: options.rowMode } : undefined)[0] as Results<T>;
  }

  async #forget(text: string, exec: (...parts: Uint8Array[]) => Promise<BackendMessages>): Promise<void> {
    const kept = this.#kept.get(text);
    if (!kept) return;
    this.#kept.delete(text);
    await exec(serialize.close({ type: "S", name: kept.name }), serialize.sync());
  }

  /** The named statement of `text`, parsed and described now if it is not kept; marks it used. */
  async #statement(text: string, exec: (...parts: Uint8Array[]) => Promise<BackendMessages>): Promise<Kept> {
    const hit = this.#kept.get(text);
    if (hit) {
      this.#kept.delete(text);
      this.#kept.set(text, hit);
      return hit;
    }
    const name = `pglite_s${++this.#counter}`;
    const described = await exec(serialize.parse({ name, text }), serialize.describe({ type: "S", name }), serialize.sync());
    const kept = { name, paramTypes: parse.parseDescribeStatementResults(described) };
    // Only a statement that parsed takes a place (and may push out the least recently used one).
    if (this.#kept.size >= MAX_STATEMENTS) await this.#forget(this.#kept.keys().next().value!, exec);
    this.#kept.set(text, kept);
    return kept;
  }
}

/**
 * PostgreSQL's "cached plan must not change result type" (feature_not_supported, raised while revalidating a
 * kept plan), told apart from any other 0A000 by where it was raised, so that no other error runs a
 * statement twice.
 */
function isStalePlan(err: unknown): boolean {
  const e = err as { code?: string; routine?: string };
  return e.code === "0A000" && e.routine === "RevalidateCachedQuery";
}

/** PGlite's errors carry the query that failed; these do too. */
function withQuery(err: unknown, query: string, params: unknown[], queryOptions: QueryOptions | undefined): unknown {
  if (err && typeof err === "object") Object.assign(err, { query, params, queryOptions });
  return err;
}
