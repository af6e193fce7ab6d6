/**
 * Statements prepared once per database handle: Drizzle builds a statement's SQL once instead of on every
 * call (about a millisecond for a large one), and node-postgres sends it as a named statement, which
 * PostgreSQL parses and plans once per connection. Values that change per call are `sql.placeholder`s,
 * given to `execute`.
 *
 * On the Neon driver (the Worker) nothing is named: a Worker request has its own handle and connection, so
 * a name would save nothing, and a pooled Neon endpoint's PgBouncer need not keep named statements across
 * transactions. There the builder itself runs (it builds its SQL per call, as before).
 *
 * @example
 * const byToken = prepared(db, "sandbox_token", () => db.select().from(t).where(eq(t.token, sql.placeholder("token"))));
 * const [row] = await byToken.execute({ token });
 */
import type { Db } from "./client";

interface Preparable<E> {
  prepare(name: string): { execute: E };
  execute: E;
}

const statements = new WeakMap<object, Map<string, { execute: unknown }>>();
const unnamed = new WeakSet<Db>();

/** Marks a handle whose statements must not be named (the Neon driver's). */
export function neverNameStatements(db: Db): void {
  unnamed.add(db);
}

/**
 * The statement `name` of this handle (or transaction), built by `build` on first use. `name` must identify
 * one SQL text.
 */
export function prepared<E>(db: Db | object, name: string, build: () => Preparable<E>): { execute: E } {
  let byName = statements.get(db);
  if (!byName) statements.set(db, (byName = new Map()));
  let statement = byName.get(name) as { execute: E } | undefined;
  if (!statement) {
    const builder = build();
    statement = unnamed.has(db as Db) ? builder : builder.prepare(name);
    byName.set(name, statement);
  }
  return statement;
}
