/**
 * Lowers the scheduling priority of the thread that evaluates it (on Linux a thread's nice value is its
 * own): a heavy-work thread imports it first, so even evaluating the rest of its code yields to the request
 * thread. Where this is not permitted the thread runs at normal priority.
 */
import { setPriority } from "node:os";

try {
  setPriority(10); // pid 0: this thread only
} catch {
  // not permitted here: run at normal priority
}
