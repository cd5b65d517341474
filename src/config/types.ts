/**
 * The validated configuration's types, derived from the schema.
 *
 * @module
 */
import type { z } from "zod";
import {
  type ConfigSchema,
  type MachineSchema,
  parseDurationMs,
  type PoolSchema,
} from "./schema.ts";

/** The validated, defaulted configuration. Durations are still strings; see `durationMs`. */
export type Config = z.infer<typeof ConfigSchema>;
/** One machine of the inventory. */
export type Machine = z.infer<typeof MachineSchema>;
/** One address pool. */
export type Pool = z.infer<typeof PoolSchema>;

/**
 * Milliseconds in a validated duration string such as `"15s"` or `"200ms"`. The schema bounds
 * every duration of a validated Config (see `duration` in schema.ts), so the result is a whole
 * number of milliseconds a timer can take.
 * @throws {RangeError} when the string is not a duration
 */
export function durationMs(value: string): number {
  const ms = parseDurationMs(value);
  if (ms === undefined) {
    throw new RangeError(`Cannot read duration "${value}": expected e.g. "15s"`);
  }
  return ms;
}

/** The machine's providerID id: `id`, defaulting to `name`. */
export function machineId(machine: Machine): string {
  return machine.id ?? machine.name;
}
