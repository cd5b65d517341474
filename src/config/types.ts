/**
 * The validated configuration's types, derived from the schema.
 *
 * @module
 */
import type { z } from "zod";
import type { ConfigSchema, MachineSchema, PoolSchema } from "./schema.ts";

export type { Duration } from "./duration.ts";

/**
 * The validated, defaulted configuration. Each duration is a `Duration`: read `.ms` for a timer,
 * `.text` to show it.
 */
export type Config = z.infer<typeof ConfigSchema>;
/** One machine of the inventory. */
export type Machine = z.infer<typeof MachineSchema>;
/** One address pool. */
export type Pool = z.infer<typeof PoolSchema>;

/** The machine's providerID id: `id`, defaulting to `name`. */
export function machineId(machine: Machine): string {
  return machine.id ?? machine.name;
}
