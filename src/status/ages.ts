/**
 * Durations and writers' clock claims for people, in problems and in the status text.
 *
 * @module
 */

/**
 * What a writer's own clock says of its last renewal, labelled as such.
 * @param claimed the renewal time the writer wrote (ISO), if any
 * @param nowMs this reader's wall clock
 * @returns e.g. `its last renewal says 1h00m ago, by its own clock`
 */
export function claimedAge(claimed: string | undefined, nowMs: number): string {
  const ago = claimedAgo(claimed, nowMs);
  return ago === undefined
    ? "its Lease holds no renewal time"
    : `its last renewal says ${ago}, by its own clock`;
}

/**
 * How long ago a writer's clock says it renewed, as this reader's clock compares.
 * @param claimed the renewal time the writer wrote (ISO), if any
 * @param nowMs this reader's wall clock
 * @returns `3s ago`, `9m00s from now`, or undefined without a time
 */
export function claimedAgo(claimed: string | undefined, nowMs: number): string | undefined {
  const ms = claimed === undefined ? NaN : Date.parse(claimed);
  if (Number.isNaN(ms)) return undefined;
  return nowMs >= ms ? `${formatAge(nowMs - ms)} ago` : `${formatAge(ms - nowMs)} from now`;
}

/**
 * A duration for people: `850ms`, `12s`, `3m05s`, `2h07m`, `3d04h`.
 * @param ms milliseconds
 * @returns the text
 */
export function formatAge(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, "0")}h`;
}
