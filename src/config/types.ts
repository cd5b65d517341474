/**
 * The validated configuration's types, derived from the schema.
 *
 * @module
 */
import type { z } from "zod";
import type { ConfigSchema, MachineSchema, PoolSchema } from "./schema.ts";

/** The validated, defaulted configuration. Durations are still strings; see `durationMs`. */
export type Config = z.infer<typeof ConfigSchema>;
/** One machine of the inventory. */
export type Machine = z.infer<typeof MachineSchema>;
/** One address pool. */
export type Pool = z.infer<typeof PoolSchema>;

/**
 * Milliseconds in a validated duration string such as `"15s"` or `"200ms"`.
 * @throws {RangeError} when the string is not a duration
 */
export function durationMs(value: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(value);
  if (!match) throw new RangeError(`Cannot read duration "${value}": expected e.g. "15s"`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] as "ms" | "s" | "m" | "h"];
  return Number(match[1]) * unit;
}

/** The machine's providerID id: `id`, defaulting to `name`. */
export function machineId(machine: Machine): string {
  return machine.id ?? machine.name;
}
