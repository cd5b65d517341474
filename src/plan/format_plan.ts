/**
 * Text rendering of a plan (`keelson plan --output text`).
 *
 * @module
 */
import type { AllocationPlan } from "../cloud/cluster_plan.ts";
import type { NodePlan, PlannedNodeAction } from "./plan_nodes.ts";
import { terminalSafe } from "../text/terminal_safe.ts";

/**
 * Renders the Node plans, and the Services plan when given.
 * @param nodes from `planNodes`
 * @param services from `planAllocations`, or undefined
 * @returns the text, ending with a newline
 */
export function formatPlan(
  nodes: readonly NodePlan[],
  services: AllocationPlan | undefined,
): string {
  const lines: string[] = [`Nodes (${nodes.length}):`];
  const width = Math.max(0, ...nodes.map((n) => n.node.length));
  for (const plan of nodes) {
    const head = `  ${plan.node.padEnd(width)}  `;
    const indent = " ".repeat(head.length);
    const state = `[${plan.ready === "True" ? "Ready" : `Ready=${plan.ready}`}, machine ${
      plan.machineState ?? "unknown"
    }]`;
    if (plan.actions.length === 0) {
      lines.push(`${head}nothing to do ${state}`);
      continue;
    }
    plan.actions.forEach((action, index) => {
      const text = describeNodeAction(action).map((
        line,
        i,
      ) => (i === 0 ? line : `${indent}  ${line}`));
      lines.push(`${index === 0 ? head : indent}${text[0]}${index === 0 ? ` ${state}` : ""}`);
      lines.push(...text.slice(1));
    });
  }
  if (services) {
    lines.push("", `Services (${services.services.length}):`);
    for (const service of services.services) {
      const what = service.outcome === "pending"
        ? `pending: ${service.message ?? service.reason ?? ""}`
        : `${service.outcome} ${describeAddresses(service.ips, service.pools, service.pool)}`;
      lines.push(`  ${service.serviceKey}  ${what}`);
    }
    for (const other of services.otherClass) {
      const why = other.loadBalancerClass === undefined
        ? "no class, and [load_balancer] default_class = false"
        : `class ${other.loadBalancerClass}`;
      lines.push(`  ${other.serviceKey}  not Keelson's (${why})`);
    }
    for (const orphan of services.orphans) {
      lines.push(`  ${orphan.serviceKey}  keeps ${orphan.ip}, which no pool offers any more`);
    }
    for (const stat of services.stats) {
      lines.push(`  pool ${stat.pool} IPv${stat.family}: ${stat.used} of ${stat.total} used`);
    }
    for (const problem of services.problems) lines.push(`  problem: ${problem}`);
  }
  // annotation text, names and messages come from the snapshot: a newline in them must not
  // forge a plan line, nor an escape sequence repaint the terminal
  return `${lines.map(terminalSafe).join("\n")}\n`;
}

/** `10.0.0.5 from pool a`, or per address when a dual-stack pair comes from two pools. */
function describeAddresses(
  ips: readonly string[],
  pools: readonly (string | undefined)[] | undefined,
  pool: string | undefined,
): string {
  const distinct = new Set(pools ?? []);
  if (pools && pools.length === ips.length && distinct.size > 1) {
    return ips.map((ip, i) => `${ip}${pools[i] ? ` from pool ${pools[i]}` : ""}`).join(", ");
  }
  return `${ips.join(", ")}${pool ? ` from pool ${pool}` : ""}`;
}

/**
 * One Node action as text lines (the first is the action, the rest its details).
 * @param action the planned action
 * @returns the lines, not yet made terminal-safe
 */
export function describeNodeAction(action: PlannedNodeAction): string[] {
  switch (action.action) {
    case "initialize": {
      const lines = [`initialize: providerID ${action.providerID}, remove the uninitialized taint`];
      const labels = Object.entries(action.labels).map(([k, v]) => `${k}=${v}`);
      if (labels.length > 0) lines.push(`labels: ${labels.join(", ")}`);
      if (action.addresses) {
        lines.push(
          `addresses: ${action.addresses.map((a) => `${a.type} ${a.address}`).join(", ")}`,
        );
      }
      for (const warning of action.warnings) lines.push(`warning: ${warning}`);
      return lines;
    }
    case "stay-tainted":
      return [`stay tainted${action.retried ? " (retried with backoff)" : ""}: ${action.reason}`];
    case "set-labels":
      return [
        `set labels from their beta twins: ${
          Object.entries(action.labels).map(([k, v]) => `${k}=${v}`).join(", ")
        }`,
      ];
    case "set-addresses":
      return [`set addresses: ${action.addresses.map((a) => `${a.type} ${a.address}`).join(", ")}`];
    case "delete":
      return [`delete: ${action.reason}`];
    case "keep":
      return [`keep (not deleted): ${action.reason}`];
    case "taint":
      return [`taint ${action.taints.join(", ")}`];
    case "untaint":
      return [`remove taint ${action.taints.join(", ")}`];
    case "skip":
      return [`skip: ${action.reason}`];
    case "announce-route":
      return [`announce pod CIDR ${action.cidr} via ${action.nextHop}`];
    case "refuse-route":
      return [`refuse pod CIDR ${action.cidr}: ${action.reason}`];
  }
}
