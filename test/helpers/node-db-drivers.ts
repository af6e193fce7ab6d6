/**
 * The two Node database drivers a database-level test runs on: PGlite in memory, and node-postgres on a
 * scratch database of the machine's PostgreSQL with one connection, so that what a test prepares, plans or
 * counts on the connection is what its next statement sees. Each opened scratch database is dropped by the
 * cleanups the test passes in.
 *
 * @example
 * describe.each(nodeDbDrivers(cleanups))("… on $name", ({ open }) => { … });
 */
import { openNodeDb } from "../../db/node";
import type { DbHandle } from "../../db/client";
import { createScratchDatabase } from "../../dev/postgres";

export function nodeDbDrivers(cleanups: Array<() => Promise<void>>): Array<{ name: string; open(): Promise<DbHandle> }> {
  return [
    { name: "pglite", open: () => openNodeDb({}) },
    {
      name: "node-postgres",
      async open() {
        const scratch = await createScratchDatabase();
        cleanups.push(scratch.drop);
        return openNodeDb({ url: scratch.url, poolSize: 1 });
      },
    },
  ];
}
