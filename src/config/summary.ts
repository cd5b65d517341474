/**
 * A one-paragraph description of a valid config, printed by `keelson check` so an operator can
 * see at a glance that the file says what they meant.
 *
 * @module
 */
import { poolServers } from "./pool_serving.ts";
import { poolCapacity } from "./pool_size.ts";
import { MACHINE_STATES } from "./schema.ts";
import type { Config, Machine } from "./types.ts";
import { compareCodeUnits } from "../text/code_unit_order.ts";

/**
 * Describes the cluster: name, provider, machines by role and state, zones, pool sizes and
 * serving machines,
 * control-plane VIP, the controllers enabled, BMCs and the `[power]` switches.
 * @param config a validated config
 * @returns one paragraph (no trailing newline)
 * @example
 * ```ts
 * import { parseConfig } from "./parse_config.ts";
 *
 * summarizeConfig(parseConfig('[cluster]\nname = "lab"\n', "keelson.toml"));
 * // Cluster "lab" (provider "baremetal"): no machines; no zones; no pools; ...
 * ```
 */
export function summarizeConfig(config: Config): string {
  const parts = [
    `Cluster "${config.cluster.name}" (provider "${config.cluster.provider}"): ` +
    describeMachines(config.machines),
    describeZones(config.machines),
    describePools(config),
    describeControlPlaneVip(config),
    `controllers ${config.controllers.enabled.map((c) => `"${c}"`).join(", ")}`,
    `keepalived ${
      config.keepalived.enabled
        ? `on ${config.keepalived.interface}, VRIDs ${config.keepalived.vrid_range.join("-")}`
        : "off"
    }`,
    describePower(config),
    config.bgp
      ? `BGP as AS ${config.bgp.asn} to ${count(config.bgp.peers.length, "peer")}`
      : "BGP off",
    `leader election ${
      config.leader_election.enabled
        ? `on (${config.leader_election.namespace}/${config.leader_election.name})`
        : "off"
    }`,
  ];
  return parts.join("; ") + ".";
}

function describeMachines(machines: readonly Machine[]): string {
  if (machines.length === 0) return "no machines";
  const roles = (["control-plane", "worker"] as const).flatMap((role) => {
    const ofRole = machines.filter((m) => m.role === role);
    if (ofRole.length === 0) return [];
    const states = MACHINE_STATES.flatMap((state) => {
      const n = ofRole.filter((m) => m.state === state).length;
      return n === 0 ? [] : [`${n} ${state}`];
    });
    return [`${ofRole.length} ${role} (${states.join(", ")})`];
  });
  return `${count(machines.length, "machine")}: ${roles.join(", ")}`;
}

function describeControlPlaneVip(config: Config): string {
  if (config.control_plane.vip.length === 0) return "no control-plane VIP";
  const vip = `control-plane VIP ${
    config.control_plane.vip.join(" and ")
  } (port ${config.control_plane.port})`;
  // a machine not active holds every VIP back (serving_hold.ts): say it before it bites
  const controlPlane = config.machines.filter((m) => m.role === "control-plane");
  return controlPlane.length > 0 && controlPlane.every((m) => m.state !== "active")
    ? `${vip}, served by no machine (no control-plane machine is active)`
    : vip;
}

function describeZones(machines: readonly Machine[]): string {
  const zones = new Map<string, number>();
  for (const machine of machines) {
    if (machine.zone !== "") zones.set(machine.zone, (zones.get(machine.zone) ?? 0) + 1);
  }
  if (zones.size === 0) return "no zones";
  const list = [...zones.entries()].sort(([a], [b]) => compareCodeUnits(a, b))
    .map(([zone, n]) => `${zone} (${n})`);
  return `${count(zones.size, "zone")}: ${list.join(", ")}`;
}

function describePools(config: Config): string {
  if (config.pools.length === 0) return "no pools";
  const list = config.pools.map((pool) => {
    const { ipv4, ipv6 } = poolCapacity(pool);
    const sizes = [
      ...(ipv4 > 0n ? [`${ipv4} IPv4`] : []),
      ...(ipv6 > 0n ? [`${ipv6} IPv6`] : []),
    ];
    const over = pool.announce === "bgp" ? "BGP, " : "";
    return `"${pool.name}" ${sizes.length === 0 ? "0" : sizes.join(" + ")} usable ` +
      `(${over}served by ${describeServers(config, pool)})`;
  });
  return `${count(config.pools.length, "pool")}: ${list.join(", ")}`;
}

/** The machines that serve a pool (retired ones left out), by name. */
function describeServers(config: Config, pool: Config["pools"][number]): string {
  const names = poolServers(config, pool).map((m) => `"${m.name}"`);
  if (names.length === 0) return "no machine";
  if (names.length <= 6) return names.join(" ");
  return `${names.slice(0, 6).join(" ")} and ${names.length - 6} more`;
}

/** `[machines.bmc]` tables and the `[power]` switches: what Keelson may do from a BMC's word. */
function describePower(config: Config): string {
  const bmc = config.machines.filter((m) => m.bmc !== undefined).length;
  const { out_of_service, fencing } = config.power;
  return `${
    bmc === 0 ? "no BMC" : `BMC on ${bmc} of ${count(config.machines.length, "machine")}`
  }, ` +
    `out-of-service ${out_of_service ? `on (fencing ${fencing})` : "off"}`;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
