/**
 * Whether this host's name is a machine of the inventory. Every host-side decision (keepalived,
 * BIRD, the heartbeat Lease its credential may write, Events' source) is made for the machine of
 * that name, so a name the inventory does not list is refused at start, naming the fix, rather
 * than run as "not a control-plane machine". A worker machine of the inventory runs as today
 * (it announces nothing and serves no VIP).
 *
 * @module
 */
import { compareCodeUnits } from "../text/code_unit_order.ts";
import { terminalSafe } from "../text/terminal_safe.ts";
import type { Config } from "./types.ts";

/** Where the name came from: `--host` (or KEELSON_HOST), or the operating system's host name. */
export type HostNameSource = "flag" | "os";

/**
 * Why `host` cannot run with this inventory, or undefined when it is one of its machines.
 * @param config the validated inventory
 * @param host this host's name as the agent would use it
 * @param source where the name came from
 * @param file the inventory's path, as named
 * @returns one paragraph naming the name, the control-plane machines and `--host`
 */
export function hostIdentityProblem(
  config: Pick<Config, "machines">,
  host: string,
  source: HostNameSource,
  file: string,
): string | undefined {
  if (host !== "" && config.machines.some((m) => m.name === host)) return undefined;
  const controlPlane = config.machines.filter((m) => m.role === "control-plane")
    .map((m) => m.name).sort(compareCodeUnits);
  const named = host === ""
    ? "This host's name could not be read from the operating system"
    : `This host's name "${terminalSafe(host)}" (${
      source === "flag" ? "from --host or KEELSON_HOST" : "the operating system's host name"
    }) is no machine of the inventory ${terminalSafe(file)}`;
  const machines = controlPlane.length > 0
    ? `its control-plane machines are ${controlPlane.map(terminalSafe).join(", ")}`
    : "it lists no control-plane machine";
  return `${named}; ${machines}. Give this host's machine name with --host NAME (or ` +
    `KEELSON_HOST=NAME in the unit's environment), or add a [[machines]] entry named after it.`;
}
