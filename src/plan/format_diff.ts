/**
 * Text rendering of a plan difference (`keelson plan --current`/`--kubeconfig`, `--output text`).
 *
 * @module
 */
import type { PlanDiff, RouteState, ServiceDiff, ServiceState } from "./plan_diff.ts";
import { hasChanges } from "./plan_diff.ts";
import { describeNodeAction } from "./format_plan.ts";
import { terminalSafe } from "../text/terminal_safe.ts";

/** What the difference was computed from, for its first line. */
export interface DiffHeading {
  /** The proposed inventory file. */
  proposed: string;
  /** The inventory in force. */
  current: string;
  /** Where the objects came from: a snapshot file or the kubeconfig source. */
  cluster: string;
  /** How many Nodes and Services were read. */
  nodes: number;
  services: number;
  /** Lines shown under the heading (the machines' power, `plan_power.ts`); none when absent. */
  context?: readonly string[];
  /**
   * The pools whose serving hosts would change and the lines saying how
   * (`plan_serving.ts`); none when absent.
   */
  serving?: { changed: number; lines: readonly string[] };
}

/**
 * Renders the difference.
 * @param diff from `diffPlans`
 * @param heading the inputs
 * @returns the text, ending with a newline
 */
export function formatDiff(diff: PlanDiff, heading: DiffHeading): string {
  const lines = [
    heading.current === "none"
      ? `Plan: ${heading.proposed} against the cluster as it stands (no inventory in force)`
      : `Plan: ${heading.proposed} against the inventory in force ${heading.current}`,
    `Cluster: ${heading.cluster} (${count(heading.nodes, "Node")}, ${
      count(heading.services, "Service")
    })`,
    ...heading.context ?? [],
  ];
  if (diff.refused.length > 0) {
    lines.push("", "A reload of this inventory would be refused (the one in force would stay):");
    for (const why of diff.refused) lines.push(`  ${why}`);
  }
  if (diff.nodes.length > 0) {
    lines.push("", `Nodes (${diff.nodes.length} changed):`);
    for (const n of diff.nodes) {
      lines.push(`  ${n.node} [${n.ready === "True" ? "Ready" : `Ready=${n.ready}`}]`);
      for (const [label, side] of [["in force", n.inForce], ["proposed", n.proposed]] as const) {
        const head = `    ${label} (machine ${side.machineState ?? "unknown"}): `;
        if (side.actions.length === 0) lines.push(`${head}nothing to do`);
        side.actions.forEach((action, i) => {
          const text = describeNodeAction(action);
          lines.push(`${i === 0 ? head : " ".repeat(head.length)}${text[0]}`);
          for (const more of text.slice(1)) lines.push(`${" ".repeat(head.length + 2)}${more}`);
        });
      }
    }
  }
  if (diff.routes.length > 0) {
    lines.push("", `Pod routes (${diff.routes.length} changed):`);
    for (const r of diff.routes) {
      lines.push(`  ${r.node} ${r.cidr}: ${route(r.inForce)} -> ${route(r.proposed)}`);
    }
  }
  if (diff.services.length > 0) {
    lines.push("", `Services (${diff.services.length} changed):`);
    for (const s of diff.services) lines.push(`  ${s.serviceKey}  ${service(s)}`);
  }
  lines.push(...heading.serving?.lines ?? []);
  const moved = heading.serving?.changed ?? 0;
  lines.push(
    "",
    hasChanges(diff) || moved > 0
      ? `Changes: ${count(diff.nodes.length, "Node")}, ${count(diff.routes.length, "pod route")}, ${
        count(diff.services.length, "Service")
      }${moved > 0 ? `, ${count(moved, "pool")} served by other hosts` : ""}${
        diff.refused.length > 0 ? "; the reload would be refused" : ""
      }.`
      : "No changes: the proposed inventory does what the one in force does.",
  );
  // names, reasons and addresses come from the cluster and the files: one line each, no escapes
  return `${lines.map(terminalSafe).join("\n")}\n`;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function route(state: RouteState): string {
  switch (state.state) {
    case "announced":
      return `announced via ${state.nextHop}`;
    case "refused":
      return `refused (${state.reason})`;
    case "none":
      return "not announced";
  }
}

function addresses(state: ServiceState): string {
  const distinct = new Set(state.pools);
  if (distinct.size <= 1) {
    const pool = state.pools[0];
    return `${state.ips.join(", ")}${pool ? ` from pool ${pool}` : " (in no pool)"}`;
  }
  return state.ips.map((ip, i) => `${ip}${state.pools[i] ? ` from pool ${state.pools[i]}` : ""}`)
    .join(", ");
}

function service(s: ServiceDiff): string {
  const seen = s.reportedBy.length > 0
    ? ` [last reported served by ${s.reportedBy.join(", ")}]`
    : "";
  switch (s.change) {
    case "stranded":
      return `stranded: keeps ${
        s.proposed.stranded.join(", ")
      }, which no pool of the proposed inventory offers${seen}`;
    case "address":
      return `address changes: ${addresses(s.inForce)} -> ${addresses(s.proposed)}${seen}`;
    case "pool":
      return `pool changes: ${addresses(s.inForce)} -> ${addresses(s.proposed)}`;
    case "pending":
      return `loses ${addresses(s.inForce)}: pending (${s.proposed.reason ?? "no address"})${seen}`;
    case "allocated":
      return `gets ${addresses(s.proposed)} (${s.inForce.state} under the inventory in force)`;
    case "released":
      return `no longer Keelson's (its load balancer class), had ${
        s.inForce.ips.join(", ") || "no address"
      }${seen}`;
    case "taken":
      return `taken over from another load balancer: gets ${addresses(s.proposed)}`;
  }
}
