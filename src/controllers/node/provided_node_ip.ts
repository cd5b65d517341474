/**
 * kubelet's `alpha.kubernetes.io/provided-node-ip` annotation: parsing (one IP or a dual-stack
 * pair, as component-helpers `ParseNodeIPAnnotation`) and upstream's address filter
 * (`GetNodeAddressesFromNodeIP`): the addresses matching the node IPs go first, then every other
 * address whose type none of them had.
 *
 * @module
 */
import type { V1NodeAddress } from "@kubernetes/client-node";
import { canonicalIp, parseIp } from "../../net/ip.ts";

/** The annotation kubelet writes with an explicit `--node-ip` under `--cloud-provider=external`. */
export const PROVIDED_NODE_IP_ANNOTATION = "alpha.kubernetes.io/provided-node-ip";

/**
 * Parses the annotation value.
 * @param value one IP, or one IPv4 and one IPv6 separated by a comma
 * @returns the IPs in canonical form, in annotation order
 * @throws {RangeError} naming the value when it is not a valid single IP or dual-stack pair
 */
export function parseProvidedNodeIp(value: string): string[] {
  const parts = value.split(",").map((part) => part.trim());
  if (parts.length > 2) {
    throw new RangeError(
      `Cannot parse provided node IP "${value}": at most two IPs (one IPv4 and one IPv6) are allowed`,
    );
  }
  const parsed = parts.map((part) => {
    const ip = parseIp(part);
    if (!ip) {
      throw new RangeError(`Cannot parse provided node IP "${value}": "${part}" is not an IP`);
    }
    if (ip.value === 0n) {
      throw new RangeError(
        `Cannot parse provided node IP "${value}": "${part}" is the unspecified address`,
      );
    }
    return ip;
  });
  if (parsed.length === 2 && parsed[0]?.family === parsed[1]?.family) {
    throw new RangeError(
      `Cannot parse provided node IP "${value}": a pair must be one IPv4 and one IPv6 address`,
    );
  }
  return parts.map((part) => canonicalIp(part) as string);
}

/**
 * Upstream's filter: for each node IP, every cloud address equal to it (any type) goes first and
 * its type is recorded; then every other cloud address whose type was not recorded follows.
 * @param cloudAddresses the provider's addresses
 * @param nodeIps parsed node IPs (see `parseProvidedNodeIp`)
 * @returns the filtered list
 * @throws {RangeError} naming the IP when no cloud address matches one of the node IPs
 */
export function filterAddressesByNodeIp(
  cloudAddresses: V1NodeAddress[],
  nodeIps: string[],
): V1NodeAddress[] {
  const result: V1NodeAddress[] = [];
  const matchedTypes = new Set<string>();
  for (const nodeIp of nodeIps) {
    const matches = cloudAddresses.filter((a) => (canonicalIp(a.address) ?? a.address) === nodeIp);
    if (matches.length === 0) {
      throw new RangeError(
        `Cannot use provided node IP ${nodeIp}: the cloud provider reports no such address (it has ${
          cloudAddresses.map((a) => `${a.type} ${a.address}`).join(", ") || "none"
        })`,
      );
    }
    for (const match of matches) {
      result.push(match);
      matchedTypes.add(match.type);
    }
  }
  for (const address of cloudAddresses) {
    if (!matchedTypes.has(address.type)) result.push(address);
  }
  return result;
}

/**
 * Applies the node's annotation, when present, to the cloud addresses.
 * @param annotations the Node's annotations
 * @param cloudAddresses the provider's addresses
 * @returns the addresses to write (unchanged when there is no annotation)
 * @throws {RangeError} when the annotation is invalid or does not match the cloud addresses
 */
export function applyProvidedNodeIp(
  annotations: Record<string, string> | undefined,
  cloudAddresses: V1NodeAddress[],
): V1NodeAddress[] {
  const value = annotations?.[PROVIDED_NODE_IP_ANNOTATION];
  if (value === undefined) return cloudAddresses;
  return filterAddressesByNodeIp(cloudAddresses, parseProvidedNodeIp(value));
}
