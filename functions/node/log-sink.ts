/**
 * Where the Node server's JSON log lines go: stdout, the lines of a few milliseconds in one write. Writes to
 * a pipe or a file are synchronous on Linux, so a line per `console.log` was a system call per request and
 * two per delivery; a write per event-loop turn still made one per request under load (each answer finishes
 * in a turn of its own), about 4 % of the server's CPU while posts were created. Lines now wait at most
 * FLUSH_MS (or until MAX_PENDING are waiting), and whatever is pending is written when the process exits
 * (including after an uncaught error). A SIGKILL can lose the last FLUSH_MS of lines, as it can lose anything
 * in flight. One buffer per process, however many loggers write to it.
 *
 * @example
 * const log = JsonLogger(config.logLevel, stdoutLine);
 */
/** How long a line waits at most. */
const FLUSH_MS = 10;
/** Lines written at once without waiting for the timer. */
const MAX_PENDING = 512;

let pending: string[] = [];
let timer: ReturnType<typeof setTimeout> | null = null;
let exitHooked = false;

function flush(): void {
  if (timer) clearTimeout(timer);
  timer = null;
  if (pending.length === 0) return;
  const text = `${pending.join("\n")}\n`;
  pending = [];
  process.stdout.write(text);
}

export function stdoutLine(line: string): void {
  if (!exitHooked) {
    exitHooked = true;
    process.on("exit", flush);
  }
  const waiting = pending.push(line);
  if (waiting >= MAX_PENDING) flush();
  else if (waiting === 1) timer = setTimeout(flush, FLUSH_MS);
}
