/**
 * The pods' address ranges (`[cluster] cluster_cidr`, upstream `--cluster-cidr`). Keelson
 * announces a Node's `spec.podCIDRs` over BGP only when the CIDR lies inside one of them: a Node
 * object is input from the API, and without this bound a Node claiming `0.0.0.0/1` or a pool's
 * range would have its route announced to the routers.
 *
 * @module
 */
import { type IpRange, parseRange } from "../net/ip.ts";
import type { Config } from "./types.ts";

/**
 * The configured cluster CIDRs, parsed (the config check refused any that does not parse).
 * @param config a validated configuration
 * @returns one range per entry
 */
export function clusterCidrRanges(config: Pick<Config, "cluster">): IpRange[] {
  return config.cluster.cluster_cidr.flatMap((text) => {
    const range = parseRange(text);
    return "error" in range ? [] : [range];
  });
}

/**
 * Whether a whole pod CIDR lies inside one of the cluster CIDRs.
 * @param ranges from clusterCidrRanges
 * @param cidr a Node's pod CIDR (untrusted text)
 * @returns false when it does not parse, is not a CIDR, or reaches outside every range
 */
export function insideClusterCidr(ranges: readonly IpRange[], cidr: string): boolean {
  const range = parseRange(cidr);
  if ("error" in range || range.prefix === undefined) return false;
  return ranges.some((r) =>
    r.family === range.family && r.first <= range.first && range.last <= r.last
  );
}
