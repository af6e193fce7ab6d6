/**
 * V8's old-generation growth, set for a server that streams uploads through Buffers.
 *
 * V8 starts a full (mark-compact) collection once the old generation plus the external memory allocated
 * since the last one comes within the new space's size of its limit, and sets that limit after each
 * collection to the live size times a factor it picks from how fast the collector runs against how fast
 * the program allocates: for the request thread of this server, about 1.1 (48 MB live, limit about 56 MB
 * beyond the new space). Every ArrayBuffer counts as external memory until a collection frees it, and one
 * 6.5 MB media upload allocated about 23 MB of them (the socket's 64 KiB reads and a copy of each, the
 * decoded bytes, their shared copy for the heavy-work threads), so each upload paid for a full collection:
 * 15 to 25 ms of marking on the request thread, and its helper threads taking the cores from the heavy-work
 * threads in the middle of the decode. With the factor fixed at 1.5 one happens every two or three
 * uploads; the bench's median upload is about a tenth faster and the server's CPU per upload about 15 %
 * lower (`npm run bench -- social-http`, docs/performance.md), and the old generation may
 * hold at most half its live size more before it is collected.
 * The flag is read at each collection, so setting it at start-up takes effect from the first one, in every
 * thread of the process.
 */
import { setFlagsFromString } from "node:v8";

/** The old generation's growth factor between full collections, as V8's percent above 1. */
export const HEAP_GROWING_PERCENT = 50;

export function tuneHeapGrowth(): void {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
