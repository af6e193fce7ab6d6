/**
 * JSON-lines logger. Every line passes through `redactSecrets`, so an API key or bearer token that slips
 * into a path or a field never reaches a log sink.
 *
 * @example
 * const log = JsonLogger("info");
 * log.info("request", { method: "GET", path: "/api/qr-code/generate/sk_.../hi" }); // key redacted
 */
import type { Logger } from "../services";

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof LEVELS;

const SECRET_PATTERNS: Array<[RegExp, string]> = [
  [/sk_[0-9A-Za-z]{6,}/g, "sk_[redacted]"],
  [/eyJ[\w-]{5,}\.[\w-]{5,}\.[\w-]*/g, "[redacted-jwt]"],
  [/(bearer\s+)[^\s"',]+/gi, "$1[redacted]"],
  [/(access_token=)[^&\s"]+/gi, "$1[redacted]"],
];

export function redactSecrets(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

export function JsonLogger(level: LogLevel = "info", write: (line: string) => void = (l) => console.log(l)): Logger {
  const threshold = LEVELS[level];
  const emit = (lvl: Exclude<LogLevel, "silent">, message: string, fields?: Record<string, unknown>) => {
    if (LEVELS[lvl] < threshold) return;
    write(redactSecrets(JSON.stringify({ time: new Date().toISOString(), level: lvl, message, ...fields })));
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}
