/**
 * Cross-field checks on `[[machines]]`: duplicate names, ids, hostnames and addresses, label
 * keys the node controller would drop, and BMC systems two machines share. Folder-internal.
 *
 * @module
 */
import { canonicalIp } from "../net/ip.ts";
import { checkBmcSystems } from "./_check_bmc_systems.ts";
import type { RawIssue } from "./_schema_issues.ts";
import { duplicateName } from "./_duplicate_name.ts";
import { type Machine, machineId } from "./types.ts";

/** Label keys upstream's node controller discards from AdditionalLabels. */
export const RESERVED_LABEL_KEY_REGEXP = /(^|\.)(kubernetes|k8s)\.io\//;

/** Machine address keys, with the words messages use for them. */
export const ADDRESS_KEYS = [
  ["internal_ips", "internal IP"],
  ["external_ips", "external IP"],
] as const;

/**
 * Duplicate names, ids, hostnames and IPs, reserved label keys and shared BMC systems.
 * @param machines the machines by index; undefined where the entry failed the schema
 * @returns one issue per problem, on the later of two clashing entries
 */
export function checkMachines(machines: readonly (Machine | undefined)[]): RawIssue[] {
  const issues: RawIssue[] = [];
  const names = new Map<string, number>();
  const ids = new Map<string, number>();
  const hostnames = new Map<string, number>();
  const ips = new Map<string, string>();
  for (const [i, machine] of machines.entries()) {
    if (machine === undefined) continue;
    const here = `machines[${i}]`;
    const dupName = duplicateName(names, ["machines"], "machine", machine.name, i);
    if (dupName) issues.push(dupName.issue);
    const seenName = dupName?.earlier;

    const id = machineId(machine);
    const seenId = ids.get(id);
    if (seenId !== undefined && seenId !== seenName) {
      const other = machines[seenId]!;
      issues.push({
        path: ["machines", i, machine.id === undefined ? "name" : "id"],
        message:
          `duplicate machine id "${id}" (providerID baremetal://${id}): machines[${seenId}] ` +
          `("${other.name}") has it too${
            other.id === undefined ? " as its name, used when id is absent" : ""
          }`,
      });
    } else if (seenId === undefined) ids.set(id, i);

    if (machine.hostname !== undefined) {
      const key = machine.hostname.toLowerCase();
      const seen = hostnames.get(key);
      if (seen !== undefined) {
        issues.push({
          path: ["machines", i, "hostname"],
          message: `duplicate hostname "${machine.hostname}": machines[${seen}] ` +
            `("${machines[seen]!.name}") has it too`,
        });
      } else hostnames.set(key, i);
    }

    for (const [key, words] of ADDRESS_KEYS) {
      for (const [j, ip] of machine[key].entries()) {
        const canonical = canonicalIp(ip) ?? ip;
        const seen = ips.get(canonical);
        if (seen !== undefined) {
          issues.push({
            path: ["machines", i, key, j],
            message: `duplicate IP "${ip}" (the ${words} of "${machine.name}"): ${seen}`,
          });
        } else ips.set(canonical, `${here}.${key}[${j}] ("${machine.name}") has it too`);
      }
    }

    for (const key of Object.keys(machine.labels)) {
      if (!RESERVED_LABEL_KEY_REGEXP.test(key)) continue;
      issues.push({
        path: ["machines", i, "labels", key],
        message: `label key "${key}" is in the kubernetes.io or k8s.io namespace, which the ` +
          "node controller ignores; use a prefix of your own such as example.com/",
      });
    }
  }
  issues.push(...checkBmcSystems(machines));
  return issues;
}
