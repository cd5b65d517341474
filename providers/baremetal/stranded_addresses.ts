/**
 * A reload must not strand addresses Services hold (MetalLB's precedent: it refuses to remove
 * a pool's addresses while Services use them). An address served under the configuration in
 * force but no longer under the new file rejects the reload like any invalid file, naming the
 * Services, so the served set never leaves the pools and no VIP a client uses disappears
 * because of an edit.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { ConfigIssue } from "../../src/config/config_error.ts";
import type { Config } from "../../src/config/types.ts";
import { handlesService } from "../../src/cloud/load_balancer_class.ts";
import { objectKey } from "../../src/kube/ports.ts";
import { formatIp, parseIp } from "../../src/net/ip.ts";
import { ingressIps } from "./ipam/status_holdings.ts";
import { type AddressVerdict, servedAddressChecker } from "./keepalived/served_addresses.ts";
import { addressOwner } from "./ipam/address_owner.ts";

const LISTED = 10;

/**
 * The issue rejecting a reload that would strand served addresses, if any.
 * @param current the configuration in force
 * @param next the reloaded file's configuration
 * @param services every Service in the cache (undefined before it synced: nothing to compare)
 * @param file the configuration file, for the issue
 * @returns zero or one issue
 */
export function strandedAddressIssues(
  current: Config,
  next: Config,
  services: readonly V1Service[] | undefined,
  file: string,
): ConfigIssue[] {
  if (services === undefined) return [];
  const before = servedByEither(current), after = servedByEither(next);
  const lost = new Map<string, string[]>();
  for (const service of services) {
    if (!handlesService(current, service)) continue;
    const stillHandled = handlesService(next, service);
    for (const ip of ingressIps(service)) {
      const was = before(ip);
      if (!was.ok || (stillHandled && after(ip).ok)) continue;
      const key = formatIp(was.family, was.value);
      lost.set(key, [...(lost.get(key) ?? []), objectKey(service)]);
    }
  }
  if (lost.size === 0) return [];
  const list = [...lost.keys()].sort().slice(0, LISTED)
    .map((ip) => `${ip} (${lost.get(ip)!.map((s) => `service "${s}"`).join(", ")})`);
  const more = lost.size > LISTED ? ` and ${lost.size - LISTED} more` : "";
  return [{
    file,
    path: "pools",
    message: `this reload would strand ${lost.size} address${lost.size === 1 ? "" : "es"} ` +
      `that Services hold and keepalived or BIRD serves: ${
        list.join(", ")
      }${more}; keep them in a ` +
      "pool's usable addresses, or move those Services to other addresses first",
  }];
}

/** Served by keepalived, or announced by BIRD (a pool with `announce = "bgp"` holds it). */
function servedByEither(config: Config): (ip: string) => AddressVerdict {
  const keepalived = servedAddressChecker(config);
  return (ip) => {
    const verdict = keepalived(ip);
    if (verdict.ok || addressOwner(config, ip)?.announce !== "bgp") return verdict;
    const parsed = parseIp(ip)!;
    return { ok: true, family: parsed.family, value: parsed.value };
  };
}
