/**
 * Printing and statistics for the benchmarks: figures go to stdout, one line each, so a run can
 * be pasted into tests/bench/README.md as it is. Nothing here asserts a timing.
 *
 * @module
 */

const encoder = new TextEncoder();

/**
 * Prints one line to stdout (benchmarks report figures; `console` is linted out).
 * @param line the text
 */
export function say(line = ""): void {
  Deno.stdout.writeSync(encoder.encode(`${line}\n`));
}

/** Summary of a set of durations, in milliseconds. */
export interface Summary {
  count: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

/**
 * Nearest-rank percentiles of `values` (milliseconds).
 * @param values the samples (not modified)
 * @returns count, p50, p99, max and mean; all NaN when there are no samples
 */
export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number): number => {
    if (sorted.length === 0) return NaN;
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
  };
  const mean = sorted.length === 0 ? NaN : sorted.reduce((a, b) => a + b, 0) / sorted.length;
  return { count: sorted.length, p50: rank(0.5), p99: rank(0.99), max: rank(1), mean };
}

/**
 * Milliseconds as seconds with two decimals, or milliseconds below one second.
 * @param ms the duration
 * @returns e.g. "1.23 s" or "456 ms"
 */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return "n/a";
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 2 : 0)} ms`;
}

/**
 * Runs `task` over `items` with at most `limit` in flight (a kubelet fleet registering at once,
 * without opening a thousand TLS connections from one process).
 * @param items the inputs
 * @param limit the concurrency
 * @param task the work per item
 */
export async function forEachConcurrently<T>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      await task(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * Sleeps.
 * @param ms milliseconds
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Waits for `promise`, or rejects after `ms` with `message()`.
 * @param promise what is awaited
 * @param ms the time allowed
 * @param message the error text (called on timeout, so it can report progress)
 * @returns the promise's value
 * @throws {Error} on timeout
 */
export async function within<T>(
  promise: Promise<T>,
  ms: number,
  message: () => string,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message())), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
