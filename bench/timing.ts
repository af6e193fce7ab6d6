/** Shared timing for the benchmarks: the median of `runs` timed calls after `warmup` untimed ones, and a latency distribution's line. */
export const RUNS = 7;
export const WARMUP = 2;

export async function medianMs(run: () => unknown, runs = RUNS, warmup = WARMUP): Promise<number> {
  for (let i = 0; i < warmup; i++) await run();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await run();
    times.push(performance.now() - t);
  }
  return middle(times);
}

export function middle(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

/** One line of a latency distribution in ms: min, p50, p99 and max, and the count; the label padded to `width`. */
export function latencyRow(label: string, ms: number[], width = 40): void {
  const sorted = [...ms].sort((a, b) => a - b);
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)]!;
  console.log(
    `  ${label.padEnd(width)} min ${sorted[0]!.toFixed(0).padStart(5)} ms   p50 ${q(0.5).toFixed(0).padStart(5)} ms   p99 ${q(0.99).toFixed(0).padStart(5)} ms   max ${sorted.at(-1)!.toFixed(0).padStart(5)} ms   (n=${ms.length})`,
  );
}
