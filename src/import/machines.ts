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
import { type Block, type Entry, keyEntry, noteEntry } from "./inventory_fragments.ts";

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
 * One `[[machines]]` entry per Node, sorted by name, after a note saying what to add.
 * @param nodes the cluster's Nodes (validated)
 * @param servedByLabels inventory labels per machine name (those a pool's `served_by` selects by)
 * @returns the blocks
 */
export function nodeMachines(
  nodes: readonly V1Node[],
  servedByLabels: ReadonlyMap<string, Readonly<Record<string, string>>> = new Map(),
): Block[] {
  const blocks: Block[] = [{
    blankBefore: true,
    notes: [{
      text: "Machines: one per Node of the cluster when it was imported. Add each machine's id " +
        "(asset\ntag or serial; providerID = baremetal://<id>), zone and labels as you want them.",
    }],
  }];
  const sorted = [...nodes].sort((a, b) =>
    (a.metadata?.name ?? "") < (b.metadata?.name ?? "") ? -1 : 1
  );
  for (const node of sorted) {
    const name = node.metadata?.name ?? "";
    const labels = node.metadata?.labels ?? {};
    const entries: Entry[] = [];
    if (!NAME_REGEXP.test(name)) {
      entries.push(noteEntry(
        `Node "${name}" has a name Keelson cannot use as a machine name (lower-case ` +
          "letters, digits, '.' and '-', at most 63): rename it here and in kubelet's --hostname-override",
      ));
    }
    entries.push(keyEntry("name", name), keyEntry("role", roleOf(labels)));
    const providerId = node.spec?.providerID;
    if (providerId?.startsWith("baremetal://")) {
      entries.push(keyEntry("id", providerId.slice("baremetal://".length)));
    } else if (providerId) {
      entries.push(noteEntry(
        `The Node's providerID is "${providerId}", another provider's: Keelson cannot look this ` +
          "Node up (providerID is immutable; Keelson's would be baremetal://<id>). Drain it, " +
          "delete the Node and let kubelet (--cloud-provider=external) register it again.",
      ));
    }
    for (const [key, label] of TOPOLOGY) {
      const value = labels[label];
      if (value !== undefined && LABEL_VALUE.safeParse(value).success) {
        entries.push(keyEntry(key, value));
      }
    }
    const addresses = node.status?.addresses ?? [];
    const ips = (type: string) =>
      addresses.filter((a) => a.type === type && parseIp(a.address) !== undefined)
        .map((a) => a.address).slice(0, 16);
    entries.push(keyEntry("internal_ips", ips("InternalIP")));
    const external = ips("ExternalIP");
    if (external.length > 0) entries.push(keyEntry("external_ips", external));
    const hostname = addresses.find((a) => a.type === "Hostname")?.address;
    if (hostname !== undefined && hostname.length <= 253 && HOSTNAME.test(hostname)) {
      entries.push(keyEntry("hostname", hostname));
    }
    const inventoryLabels = servedByLabels.get(name);
    if (inventoryLabels !== undefined && Object.keys(inventoryLabels).length > 0) {
      entries.push(
        noteEntry("The Node's labels a pool's [pools.served_by] selects by."),
        keyEntry("labels", { ...inventoryLabels }),
      );
    }
    blocks.push({ header: "[[machines]]", notes: [], entries });
  }
  return blocks;
}

/**
 * The note that stands for the machines of an import without a cluster to read Nodes from.
 * @returns the blocks
 */
export function machinePlaceholder(): Block[] {
  return [{
    blankBefore: true,
    notes: [{
      text:
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
    }],
  }];
}
