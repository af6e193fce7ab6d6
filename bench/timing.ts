/** Shared timing for the benchmarks: the median of `runs` timed calls after `warmup` untimed ones. */
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
