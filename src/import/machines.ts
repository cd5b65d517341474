/**
 * The `[[machines]]` of an imported inventory: from the cluster's Nodes when the importer could
 * read them (name, InternalIP and ExternalIP addresses, Hostname, control-plane role, the
 * topology and instance-type labels Keelson would set), otherwise a commented placeholder the
 * operator fills in. Pure.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import { parseIp } from "../net/ip.ts";
import { NAME_REGEXP } from "../config/schema.ts";
import { LABEL_VALUE } from "../config/service_allocation_schema.ts";
import type { TomlLines } from "./toml_text.ts";

/** A machine as the importer writes it. */
export interface ImportedMachine {
  name: string;
  role: "control-plane" | "worker";
  /** The Node's labels (to resolve imported node selectors). */
  labels: Readonly<Record<string, string>>;
  zone: string;
  /** A worker that runs BIRD because a BGP pool's `served_by` selects it. */
  runsBird?: boolean;
}

/** The Node labels that mark a control-plane Node. */
export const CONTROL_PLANE_LABELS = [
  "node-role.kubernetes.io/control-plane",
  "node-role.kubernetes.io/master",
];
const TOPOLOGY = [
  ["region", "topology.kubernetes.io/region"],
  ["zone", "topology.kubernetes.io/zone"],
  ["instance_type", "node.kubernetes.io/instance-type"],
] as const;
const HOSTNAME =
  /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/**
 * The machines the Nodes become (what node selectors are resolved against).
 * @param nodes the cluster's Nodes (validated)
 * @returns one per Node, in Node order
 */
export function importedMachines(nodes: readonly V1Node[]): ImportedMachine[] {
  return nodes.map((node) => {
    const labels = node.metadata?.labels ?? {};
    return {
      name: node.metadata?.name ?? "",
      role: roleOf(labels),
      labels,
      zone: labels["topology.kubernetes.io/zone"] ?? "",
    };
  });
}

function roleOf(labels: Readonly<Record<string, string>>): ImportedMachine["role"] {
  return CONTROL_PLANE_LABELS.some((l) => Object.hasOwn(labels, l)) ? "control-plane" : "worker";
}

/**
 * Writes one `[[machines]]` entry per Node, sorted by name.
 * @param out the document
 * @param nodes the cluster's Nodes (validated)
 * @param servedByLabels inventory labels per machine name (those a pool's `served_by` selects by)
 */
export function writeNodeMachines(
  out: TomlLines,
  nodes: readonly V1Node[],
  servedByLabels: ReadonlyMap<string, Readonly<Record<string, string>>> = new Map(),
): void {
  out.blank().comment(
    "Machines: one per Node of the cluster when it was imported. Add each machine's id (asset\n" +
      "tag or serial; providerID = baremetal://<id>), zone and labels as you want them.",
  );
  const sorted = [...nodes].sort((a, b) =>
    (a.metadata?.name ?? "") < (b.metadata?.name ?? "") ? -1 : 1
  );
  for (const node of sorted) {
    const name = node.metadata?.name ?? "";
    const labels = node.metadata?.labels ?? {};
    const role = roleOf(labels);
    out.table("[[machines]]");
    if (!NAME_REGEXP.test(name)) {
      out.comment(
        `Node "${name}" has a name Keelson cannot use as a machine name (lower-case ` +
          "letters, digits, '.' and '-', at most 63): rename it here and in kubelet's --hostname-override",
      );
    }
    out.set("name", name).set("role", role);
    const providerId = node.spec?.providerID;
    if (providerId?.startsWith("baremetal://")) {
      out.set("id", providerId.slice("baremetal://".length));
    } else if (providerId) {
      out.comment(
        `The Node's providerID is "${providerId}", another provider's: Keelson cannot look this ` +
          "Node up (providerID is immutable; Keelson's would be baremetal://<id>). Drain it, " +
          "delete the Node and let kubelet (--cloud-provider=external) register it again.",
      );
    }
    for (const [key, label] of TOPOLOGY) {
      const value = labels[label];
      if (value !== undefined && LABEL_VALUE.safeParse(value).success) out.set(key, value);
    }
    const addresses = node.status?.addresses ?? [];
    const ips = (type: string) =>
      addresses.filter((a) => a.type === type && parseIp(a.address) !== undefined)
        .map((a) => a.address).slice(0, 16);
    out.set("internal_ips", ips("InternalIP"));
    const external = ips("ExternalIP");
    if (external.length > 0) out.set("external_ips", external);
    const hostname = addresses.find((a) => a.type === "Hostname")?.address;
    if (hostname !== undefined && hostname.length <= 253 && HOSTNAME.test(hostname)) {
      out.set("hostname", hostname);
    }
    const inventoryLabels = servedByLabels.get(name);
    if (inventoryLabels !== undefined && Object.keys(inventoryLabels).length > 0) {
      out.comment("The Node's labels a pool's [pools.served_by] selects by.")
        .set("labels", { ...inventoryLabels });
    }
  }
}

/**
 * Writes the commented placeholder for an import without a cluster to read Nodes from.
 * @param out the document
 */
export function writeMachinePlaceholder(out: TomlLines): void {
  out.blank().comment(
    "Machines: not imported (no --kubeconfig was given). Add one [[machines]] entry per Node;\n" +
      "`keelson check` refuses an inventory without any. For example:\n" +
      "\n" +
      "[[machines]]\n" +
      'name = "cp-1"                    # the Node name kubelet registers\n' +
      'role = "control-plane"           # runs keepalived (VRRP) and BIRD (BGP)\n' +
      'internal_ips = ["10.0.0.11"]     # the Node\'s InternalIP addresses\n' +
      "\n" +
      "[[machines]]\n" +
      'name = "worker-1"\n' +
      'internal_ips = ["10.0.0.21"]\n' +
      "\n" +
      "Or import again with --kubeconfig to list the cluster's Nodes here.",
  );
}
