/**
 * V8's old-generation growth, set for a server that streams uploads through Buffers.
 *
 * V8 starts a full (mark-compact) collection once the old generation plus the external memory allocated
 * since the last one comes within the new space's size of its limit, and sets that limit after each
 * collection to the live size times a factor it picks from how fast the collector runs against how fast
 * the program allocates, which for the request thread of this server comes out close to 1. Every
 * ArrayBuffer counts as external memory until a collection frees it, and a media upload allocates several
 * times its size of them (the socket's 64 KiB reads and a copy of each, the decoded bytes, their shared copy
 * for the heavy-work threads), so with V8's factor every upload would pay for a full collection: marking on
 * the request thread, and its helper threads taking the cores from the heavy-work threads in the middle of
 * the decode. With the factor fixed at 1.5 one happens only every few uploads, so uploads take less time
 * and less of the server's CPU (`npm run bench -- social-http`, docs/performance.md), and the old
 * generation may hold at most half its live size more before it is collected.
 * The flag is read at each collection, so setting it at start-up takes effect from the first one, in every
 * thread of the process.
 */
import { setFlagsFromString } from "node:v8";

/** The old generation's growth factor between full collections, as V8's percent above 1. */
export const HEAP_GROWING_PERCENT = 50;

export function tuneHeapGrowth(): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
