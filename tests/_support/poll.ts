/**
 * The one way a test waits for something to happen: poll a probe until it yields a value, with
 * a bound, and fail naming what never happened. Every tier uses it (unit, integration, e2e,
 * bench), so a timeout reads the same everywhere and no loop waits without a deadline. Beside it:
 * `holdsFor`, a window in which something must keep holding (failing at the first look where it
 * does not), `settlesWithin`, the bound on something that ends by itself, and `turns`, a turn of
 * the event loop for in-memory fakes. On the Kubernetes API, a window where nothing may be written
 * is `quietFor` (tests/integration/_harness/quiet.ts).
 *
 * @module
 */

/** Options of `pollUntil`. */
export interface PollOptions {
  /** Give up after this long. @default 10_000 */
  timeoutMs?: number;
  /** Pause between attempts. @default 10 */
  intervalMs?: number;
  /** Count a probe that throws as "not yet" (and name its last error on timeout). @default false */
  retryErrors?: boolean;
  /** More to say on timeout (a log tail, the state seen). */
  context?: () => string | Promise<string>;
}

/** What a probe returns while the awaited thing has not happened yet. */
export type NotYet = undefined | null | false;

/**
 * Calls `probe` until it returns something other than undefined, null or false.
 * @param what what is awaited, for the timeout message (`the VIP on cp-2`)
 * @param probe returns the awaited value, or undefined/null/false while not there yet
 * @param options timeout, interval, error handling and context
 * @returns the value and the milliseconds until it came (a figure for e2e reports)
 * @throws {Error} on timeout: `timed out after N ms waiting for <what>`, with the last error
 *   (retryErrors) and the context; at once with the probe's error otherwise
 */
export async function pollUntil<T>(
  what: string,
  probe: () => T | NotYet | Promise<T | NotYet>,
  options: PollOptions = {},
): Promise<{ value: T; ms: number }> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 10;
  const start = performance.now();
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== null && value !== false) {
        return { value: value as T, ms: performance.now() - start };
      }
      lastError = undefined;
    } catch (error) {
      if (!options.retryErrors) throw error;
      lastError = error;
    }
    if (performance.now() - start > timeoutMs) {
      const context = options.context ? `\n${await options.context()}` : "";
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}` +
          (lastError === undefined ? "" : `: last error: ${String(lastError)}`) + context,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Options of `holdsFor`. */
export interface HoldsOptions {
  /** How long the probe must keep holding. */
  forMs: number;
  /** Pause between looks. @default 10 */
  intervalMs?: number;
  /** More to say when it stops holding (the state seen). */
  context?: () => string | Promise<string>;
}

/**
 * The other half of `pollUntil`: checks that something keeps holding for a stated window and
 * fails at the first look where it does not, so a change that comes late in the window is caught
 * when it comes (a sleep and one look at the end would catch it only if it came in time).
 * @param what what must keep holding, for the failure message (`no second read`)
 * @param probe true while it holds
 * @param options the window, the interval and context
 * @throws {Error} `<what> stopped holding after N ms`, with the context
 */
export async function holdsFor(
  what: string,
  probe: () => boolean | Promise<boolean>,
  options: HoldsOptions,
): Promise<void> {
  const intervalMs = options.intervalMs ?? 10;
  const start = performance.now();
  for (;;) {
    if (!await probe()) {
      const context = options.context ? `\n${await options.context()}` : "";
      const ms = (performance.now() - start).toFixed(0);
      throw new Error(`${what} stopped holding after ${ms} ms` + context);
    }
    if (performance.now() - start >= options.forMs) return;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Whether `promise` settles within `ms`: the bound on a wait for something that ends by itself
 * (a process, a watch after its abort). Its rejection counts as settled.
 * @param promise what should end
 * @param ms the bound
 * @returns true if it settled in time
 */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise.then(() => true, () => true),
      new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Lets the event loop turn `count` times (a zero-delay timer each): what is already queued runs
 * (promise chains, timers due now), nothing waits on the clock. For in-memory fakes whose work is
 * all queued; anything that takes time is awaited with `pollUntil`.
 * @param count how many turns. @default 1
 */
export async function turns(count = 1): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}
