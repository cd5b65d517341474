/**
 * Two machines may not share one BMC system: its power would be both machines' power, and fencing
 * one would power off the other. Machines share a system when their `[machines.bmc]` endpoints are
 * the same BMC (the URL's origin as the parser normalises it: scheme, lower-case host, IP
 * addresses in one form, the default port dropped, a trailing '.' of a host name dropped) and
 * their `system` paths are equal (ASCII case ignored, as many BMCs ignore it), or one of them
 * leaves `system` out (discovery could pick any system of that BMC). Folder-internal.
 *
 * @module
 */
import type { RawIssue } from "./_schema_issues.ts";
import type { Machine } from "./types.ts";

/**
 * The BMC an endpoint names, in one form; undefined when it is not a URL (the schema says why).
 * @param endpoint e.g. "https://BMC-1.example.net.:443"
 * @returns e.g. "https://bmc-1.example.net"
 */
export function bmcKey(endpoint: string): string | undefined {
  try {
    const url = new URL(endpoint);
    const host = url.hostname.replace(/\.$/, "");
    return `${url.protocol}//${host}${url.port === "" ? "" : `:${url.port}`}`;
  } catch {
    return undefined;
  }
}

/**
 * One issue on each machine of every group that shares a BMC system, naming the others.
 * @param machines the machines by index; undefined where the entry failed the schema
 * @returns the issues, at each machine's `system` (or `endpoint` when it discovers)
 */
export function checkBmcSystems(machines: readonly (Machine | undefined)[]): RawIssue[] {
  const byBmc = new Map<string, number[]>();
  for (const [i, machine] of machines.entries()) {
    const endpoint = machine?.bmc?.endpoint;
    const key = endpoint === undefined ? undefined : bmcKey(endpoint);
    if (key === undefined) continue;
    byBmc.set(key, [...(byBmc.get(key) ?? []), i]);
  }
  const issues: RawIssue[] = [];
  for (const [key, indices] of byBmc) {
    if (indices.length < 2) continue;
    for (const i of indices) {
      const system = machines[i]!.bmc!.system;
      const clashes = indices.filter((j) => {
        if (j === i) return false;
        const other = machines[j]!.bmc!.system;
        return system === undefined || other === undefined ||
          system.toLowerCase() === other.toLowerCase();
      });
      if (clashes.length === 0) continue;
      const others = clashes.map((j) => {
        const other = machines[j]!;
        const how = other.bmc!.system === undefined
          ? "discovers its system there"
          : `system "${other.bmc!.system}"`;
        return `machines[${j}] ("${other.name}", ${how})`;
      }).join(" and ");
      const subject = system === undefined
        ? `discovers its system on BMC ${key}`
        : `names system "${system}" of BMC ${key}`;
      issues.push({
        path: ["machines", i, "bmc", system === undefined ? "endpoint" : "system"],
        message:
          `${subject}, as ${others} ${
            clashes.length > 1 ? "do" : "does"
          }: one system's power would count for two ` +
          "machines, and fencing one would power off the other; give each machine its own " +
          "system path",
      });
    }
  }
  return issues;
}
