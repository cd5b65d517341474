/**
 * Which VIPs this host holds right now, read from the kernel (`ip -j addr`): a VIP present on
 * the host means its VRRP instance is MASTER here, absent means BACKUP (or FAULT). This needs no
 * keepalived state dump, whose paths are global and shared by every instance on a host.
 *
 * @module
 */
import { Gauge, type Registry } from "prom-client";
import { canonicalIp } from "../../../src/net/ip.ts";
import { declareOnce } from "../../../src/metrics/registry.ts";
import { readInterfaceAddresses } from "./interface_addresses.ts";

/** VIPs split by whether this host holds them. */
export interface VipRoles {
  master: string[];
  backup: string[];
}

/** Options of `observeVipRoles`. */
export interface ObserveVipRolesOptions {
  /** Read the addresses inside this network namespace (`ip -n`). */
  netns?: string;
  /** Only this interface. @default every interface */
  interface?: string;
  /** Gauge from `createVipRoleGauge`, set to the counts when given. */
  gauge?: Gauge<"host_role">;
}

const VIPS_METRIC = "keelson_vips";

/**
 * Declares `keelson_vips{host_role="master|backup"}` (or returns it when already declared).
 * @param registry the process's registry
 * @returns the gauge
 */
export function createVipRoleGauge(registry: Registry): Gauge<"host_role"> {
  return declareOnce(registry, VIPS_METRIC, () =>
    new Gauge({
      name: VIPS_METRIC,
      help: "VIPs Keelson renders, by whether this host holds them (master) or not (backup).",
      labelNames: ["host_role"],
      registers: [registry],
    }));
}

/**
 * Splits `vips` into those configured on this host and the rest.
 * @param vips the VIPs rendered for this host
 * @param options namespace, interface and gauge
 * @returns the sorted split
 * @throws {Error} when `ip -j addr` fails or prints something that is not its JSON
 */
export async function observeVipRoles(
  vips: readonly string[],
  options: ObserveVipRolesOptions = {},
): Promise<VipRoles> {
  const held = new Set(
    await readInterfaceAddresses({ netns: options.netns, interface: options.interface }),
  );
  const roles: VipRoles = { master: [], backup: [] };
  for (const vip of new Set(vips.map((v) => canonicalIp(v)).filter((v) => v !== undefined))) {
    (held.has(vip) ? roles.master : roles.backup).push(vip);
  }
  roles.master.sort();
  roles.backup.sort();
  options.gauge?.set({ host_role: "master" }, roles.master.length);
  options.gauge?.set({ host_role: "backup" }, roles.backup.length);
  return roles;
}
