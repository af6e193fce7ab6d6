/**
 * Statements prepared once per database handle: Drizzle builds a statement's SQL once instead of on every
 * call (about a millisecond for a large one), and node-postgres sends it as a named statement, which
 * PostgreSQL parses and plans once per connection (PGlite keeps every statement it is given named, prepared
 * or not: db/pglite-statements.ts). Values that change per call are `sql.placeholder`s,
 * given to `execute`.
 *
 * Only handles marked with `nameStatements` (node-postgres and PGlite, in db/node.ts) get named statements.
 * Everywhere else the builder itself runs and builds its SQL per call, as before: on the Neon driver (the
 * Worker), where a request has its own handle and connection, so a name would save nothing, and a pooled
 * Neon endpoint's PgBouncer need not keep named statements across transactions; and in a transaction,
 * whose handle lives for one use.
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

/** Marks a long-lived handle whose statements are prepared and named (node-postgres's and PGlite's). */
export function nameStatements(db: Db): void {
  statements.set(db, new Map());
}

/** Whether this handle's statements are prepared and named (so PostgreSQL can keep their plans). */
export function namesStatements(db: object): boolean {
  return statements.has(db);
}

/**
 * The statement `name` of this handle, built by `build` on first use, where the handle names statements;
 * elsewhere (a transaction, the Neon driver) the statement as built, per call. `name` must identify one SQL text.
 */
export function prepared<E>(db: object, name: string, build: () => Preparable<E>): { execute: E } {
  const byName = statements.get(db);
  if (!byName) return build();
  let statement = byName.get(name) as { execute: E } | undefined;
  if (!statement) byName.set(name, (statement = build().prepare(name)));
  return statement;
}
