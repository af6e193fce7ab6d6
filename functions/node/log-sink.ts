/**
 * Where the Node server's JSON log lines go: stdout, the lines of one event-loop turn in one write. Writes to
 * a pipe or a file are synchronous on Linux, so a line per `console.log` was a system call per request and
 * two per delivery; now a busy turn costs one. Lines wait at most until the turn ends (`setImmediate`), and
 * whatever is pending is written when the process exits (including after an uncaught error). A SIGKILL can
 * lose the current turn's lines, as it can lose anything in flight. One buffer per process, however many
 * loggers write to it.
 *
 * @example
 * const log = JsonLogger(config.logLevel, stdoutLine);
 */
let pending: string[] = [];
let exitHooked = false;

function flush(): void {
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
  if (pending.push(line) === 1) setImmediate(flush);
}
