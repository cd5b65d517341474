/**
 * Which Service addresses keepalived may serve. A Service's `status.loadBalancer.ingress` is
 * written by whoever may write `services/status` (or restored from a backup), so an address in
 * it is served only when a pool Keelson serves holds it as a usable address, and it is neither a
 * machine's own address nor the control-plane VIP. Anything else (a VRRP multicast group,
 * another host's IP, loopback, an address a shrunk pool no longer offers) is skipped with a
 * reason; the rest of the file is still rendered. Pure.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../../../src/config/types.ts";
import { handlesService } from "../../../src/cloud/load_balancer_class.ts";
import { objectKey } from "../../../src/kube/ports.ts";
import { formatIp, type IpFamily, parseIp } from "../../../src/net/ip.ts";
import { ingressIps } from "../ipam/status_holdings.ts";
import { addressOwner, ownerOf } from "../ipam/address_owner.ts";

/** A Service address keepalived will not serve, and why. */
export interface SkippedAddress {
  /** `namespace/name` of the Service, when known (absent for addresses read from a file). */
  service?: string;
  /** The address as written. */
  value: string;
  /** Why, e.g. `no pool offers it`. */
  reason: string;
}

/** The outcome of the check `servedAddressChecker` builds for one address. */
export type AddressVerdict =
  | { ok: true; family: IpFamily; value: bigint }
  | { ok: false; reason: string };

/**
 * Builds the check for one configuration: an address is keepalived's when a pool announced over
 * VRRP holds it (`address_owner.ts`, O(log n) in the number of pool entries).
 * @param config the configuration in force
 * @returns a function telling whether one address may be served
 */
export function servedAddressChecker(config: Config): (text: string) => AddressVerdict {
  const owners = new Map<string, string>();
  for (const machine of config.machines) {
    for (const text of [...machine.internal_ips, ...machine.external_ips]) {
      const ip = parseIp(text);
      if (ip) owners.set(formatIp(ip.family, ip.value), machine.name);
    }
  }
  const controlPlane = new Set(
    config.control_plane.vip.flatMap((v) => {
      const ip = parseIp(v);
      return ip ? [formatIp(ip.family, ip.value)] : [];
    }),
  );
  return (text) => {
    const ip = typeof text === "string" ? parseIp(text.trim()) : undefined;
    if (!ip) return { ok: false, reason: "not an IP address" };
    const canonical = formatIp(ip.family, ip.value);
    if (controlPlane.has(canonical)) return { ok: false, reason: "is the control-plane VIP" };
    const owner = owners.get(canonical);
    if (owner !== undefined) {
      return { ok: false, reason: `is an address of machine "${owner}"` };
    }
    if (ownerOf(config, ip.family, ip.value)?.announce === "vrrp") {
      return { ok: true, family: ip.family, value: ip.value };
    }
    return {
      ok: false,
      reason: "no pool offers it (not a usable address of any pool; reserved, network and " +
        "broadcast addresses are not served)",
    };
  };
}

/**
 * The addresses of the Services Keelson handles (class filter of `handlesService`) that keepalived
 * serves, and those it skips, per Service. `keelson render` and the announcer use it.
 * @param config the configuration in force
 * @param services every Service (a lister's snapshot)
 * @param check `servedAddressChecker(config)`, when the caller keeps one
 * @returns the served addresses (canonical, sorted, unique) and the skipped ones, by Service
 */
export function servedServiceAddresses(
  config: Config,
  services: readonly V1Service[],
  check: (text: string) => AddressVerdict = servedAddressChecker(config),
): { vips: string[]; skipped: SkippedAddress[] } {
  const vips = new Set<string>();
  const skipped: SkippedAddress[] = [];
  for (const service of services) {
    if (!handlesService(config, service)) continue;
    for (const value of ingressIps(service)) {
      // BIRD announces it: not keepalived's, not skipped
      if (addressOwner(config, value)?.announce === "bgp") continue;
      const verdict = check(value);
      if (verdict.ok) vips.add(formatIp(verdict.family, verdict.value));
      else skipped.push({ service: objectKey(service), value, reason: verdict.reason });
    }
  }
  return { vips: [...vips].sort(), skipped };
}
