/**
 * `npm run admin -- <command> ...`: the built admin CLI (dist/admin.js, from functions/node/admin.ts), built
 * first when dist/ is missing or older than any source file, as for `npm start` (./start.mjs).
 *
 * @example
 * node scripts/admin.mjs key:create --email you@example.com
 */
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { DIST } from "./build.mjs";
import { ensureBuilt } from "./start.mjs";

await ensureBuilt("admin.js");
await import(pathToFileURL(join(DIST, "admin.js")).href);
