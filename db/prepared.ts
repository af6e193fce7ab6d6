/**
 * Statements prepared once per database handle: Drizzle builds a statement's SQL once instead of on every
 * call (about a millisecond for a large one), and node-postgres sends it as a named statement, which
 * PostgreSQL parses and plans once per connection (PGlite keeps every statement it is given named, prepared
 * or not: db/pglite-statements.ts). Values that change per call are `sql.placeholder`s,
 * given to `execute`.
 *
 * Only handles marked with `nameStatements` get prepared statements: node-postgres and PGlite (db/node.ts),
 * which run them as named statements, and the Neon HTTP handle the Worker keeps per isolate
 * (src/edge-services.ts), which sends the built SQL text with each query's values and names nothing on the
 * server (Drizzle's neon-http driver ignores the name), so a pooled Neon endpoint keeps no statement across
 * transactions. Everywhere else the builder itself runs and builds its SQL per call: in a transaction,
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

/**
 * A per-use view of `base` (an object whose prototype is `base`, so every query goes through base's driver):
 * a handle of its own identity for what is kept per handle (group commits, whose batches must not cross a
 * Worker's requests), with base's prepared statements. The Worker makes one per request.
 */
export function viewOf(base: Db): Db {
  const view = Object.create(base) as Db;
  const byName = statements.get(base);
  if (byName) statements.set(view, byName);
  return view;
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
