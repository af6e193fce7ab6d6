/**
 * V8's own view of a Worker isolate's memory in workerd: run workerd with `--trace-gc --trace-gc-verbose`
 * (through `workerd-v8/workerd.sh`, since Miniflare passes no V8 flags) and read the trace it prints on every
 * collection. Cloudflare counts an isolate's JS heap, the memory its ArrayBuffers hold and its WebAssembly
 * memories against the 128 MB; RSS counts the whole process (workerd's own buffers, freed pages the
 * allocator keeps).
 *
 * What a trace gives, for the lines printed since a mark:
 * - `heapMiB`: the largest heap V8 had reserved when a collection began (each GC line's "before (reserved)"
 *   figure). The heap only grows between collections, so with one forced at the end this is its peak.
 * - `externalMiB`: the largest "External memory reported" after a collection: ArrayBuffer memory V8 knows of
 *   (WebAssembly memories count only at their first size). Buffers made and dropped between two collections
 *   do not show, so this is a floor of the peak, not the peak.
 * Add what the WebAssembly memories grew by (`Inspector.wasmMemoryMiB`, against its figure before) for an
 * estimate of what the platform counts.
 *
 * @example
 * const trace = v8Trace(); // before Miniflare starts workerd
 * startLocalEdge({ ..., stdio: trace.stdio });
 * const mark = trace.mark(); await send(); await inspector.collectGarbage();
 * const { heapMiB, externalMiB } = trace.since(mark);
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { Readable } from "node:stream";

export interface V8Trace {
  /** Miniflare's `handleRuntimeStdio`: keeps workerd's stdout (the trace), passes stderr through. */
  stdio(stdout: Readable, stderr: Readable): void;
  mark(): number;
  since(mark: number): { heapMiB: number; externalMiB: number };
  /** workerd's stdout lines that contain `text` (the Worker's own log lines among the trace), e.g. a request id. */
  linesWith(text: string): string[];
}

/** Points Miniflare at workerd with the GC trace on (process environment: set before Miniflare starts it). */
export function v8Trace(): V8Trace {
  process.env.REAL_WORKERD = createRequire(import.meta.url)("workerd").default as string;
  process.env.WORKERD_V8_FLAGS = "--trace-gc --trace-gc-verbose";
  process.env.MINIFLARE_WORKERD_PATH = fileURLToPath(new URL("./workerd-v8/workerd.sh", import.meta.url));
  const lines: string[] = [];
  let partial = "";
  return {
    stdio(stdout, stderr) {
      stdout.on("data", (chunk) => {
        const parts = (partial + String(chunk)).split("\n");
        partial = parts.pop()!;
        lines.push(...parts);
      });
      stderr.on("data", (chunk) => process.stderr.write(chunk));
    },
    mark: () => lines.length,
    since(mark) {
      let heapMiB = 0;
      let externalMiB = 0;
      for (const line of lines.slice(mark)) {
        const gc = /(?:Scavenge|Mark-Compact|Mark-Sweep)\S*(?: \([^)]*\))? [0-9.]+ \(([0-9.]+)\) ->/.exec(line);
        if (gc) heapMiB = Math.max(heapMiB, Number(gc[1]));
        const external = /External memory reported:\s+(\d+) KB/.exec(line);
        if (external) externalMiB = Math.max(externalMiB, Number(external[1]) / 1024);
      }
      return { heapMiB, externalMiB };
    },
    linesWith: (text) => lines.filter((line) => line.includes(text)),
  };
}
