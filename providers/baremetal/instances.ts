/**
 * The bare-metal provider's InstancesV2: answers existence, shutdown and metadata questions about
 * a Node from the TOML inventory in force. After a rejected reload that is the last good one, so
 * initialization and address sync go on; deletion is held by the lifecycle's guard instead
 * (an inventory that is not known good never deletes).
 *
 * @module
 */
import type { V1Node, V1NodeAddress } from "@kubernetes/client-node";
import {
  type InstanceMetadata,
  InstanceNotFoundError,
  type InstancesV2,
  type MachineState,
  ProviderError,
} from "../../src/cloud/provider.ts";
import { type Config, type Machine, machineId } from "../../src/config/types.ts";
import { matchMachine, type ProviderIdHolder } from "./machine_matcher.ts";

/** The inventory as the provider sees it right now. */
export interface InventoryView {
  /** The configuration in force (the last one that validated). */
  config: Config;
  /**
   * False when the last reload failed validation. Lookups still answer from `config` (the last
   * good one); destructive callers hold back (see `ReloadDeletionGuard`).
   */
  healthy: boolean;
}

/** Returns the current inventory; called on every question so reloads take effect at once. */
export type InventorySource = () => InventoryView;

/** InstancesV2 over the inventory. */
export class BaremetalInstances implements InstancesV2 {
  #source: InventorySource;
  #nodes: (() => readonly V1Node[]) | undefined;
  #holders: ProviderIdIndex | undefined;
  #poweredOff: (machine: Machine) => boolean;

  /**
   * @param source the current inventory and whether it is usable
   * @param poweredOff whether the machine's BMC confirmed it off. @default never
   */
  constructor(source: InventorySource, poweredOff: (machine: Machine) => boolean = () => false) {
    this.#source = source;
    this.#poweredOff = poweredOff;
  }

  /**
   * Gives the provider the cluster's Nodes, so a machine whose providerID one Node holds is not
   * matched again to another Node by name, hostname or IP (upstream's client builder hands the
   * same view to a provider's Initialize).
   * @param nodes every Node (a lister's snapshot or a cluster snapshot)
   * @param options `notifies`: `nodesChanged` will be called on every change, so the index is
   *   rebuilt only then (without it, the list is re-read on each lookup)
   */
  useNodes(nodes: () => readonly V1Node[], options: { notifies?: boolean } = {}): void {
    this.#nodes = nodes;
    this.#notifies = options.notifies ?? false;
    this.#holders = undefined;
    this.#stale = true;
  }

  /** Whether `nodesChanged` is called on every change (an informer) or the list is re-read. */
  #notifies = false;

  /**
   * Tells the provider the Nodes changed (an informer event). With the event, the providerID
   * index is updated for that Node alone; without it, rebuilt at the next lookup. (A lister
   * returns a new array each call; one rebuild per lookup, or per event during a burst, would cost
   * O(N) per Node initialized, O(N^2) for N new Nodes.)
   * @param event the informer's change, when known
   */
  nodesChanged(event?: { type: "add" | "update" | "delete"; object: V1Node }): void {
    if (event === undefined || this.#holders === undefined || this.#stale) {
      this.#stale = true;
      return;
    }
    this.#holders.apply(event.type === "delete" ? undefined : event.object, event.object);
  }

  #stale = true;

  /** The name of the Node holding `providerID`; the index is rebuilt only when stale. */
  #holderOf: ProviderIdHolder = (providerID) => {
    if (this.#nodes === undefined) return undefined;
    // a snapshot (plan) hands the same array every time; a live lister says when it changed
    const list = this.#notifies && this.#holders && !this.#stale
      ? this.#holders.list
      : this.#nodes();
    if (this.#holders?.list !== list) {
      this.#stale = false;
      this.#holders = new ProviderIdIndex(list);
    }
    return this.#holders.holder(providerID, this.#nodes);
  };

  /**
   * The machine behind `node`, or undefined when the inventory has none.
   * @param node the Node
   * @returns the machine, or undefined when absent
   * @throws {ProviderError} when the match is ambiguous, the machine belongs to another Node, or
   *   the providerID belongs to another provider
   */
  findMachine(node: V1Node): Machine | undefined {
    const { config } = this.#source();
    const name = node.metadata?.name ?? "";
    const match = matchMachine(node, config.machines, config.cluster.provider, this.#holderOf);
    switch (match.kind) {
      case "matched":
        return match.machine;
      case "absent":
        return undefined;
      case "foreign":
        throw new ProviderError(
          `Cannot look up the machine of node "${name}": its providerID "${match.providerID}" does not start with "${config.cluster.provider}://"`,
          { retriable: false },
        );
      case "claimed":
        throw new ProviderError(
          `Cannot initialize node "${name}": machine "${match.machine.name}" (matched by ` +
            `${match.step}) already belongs to node "${match.holder}", which holds its providerID ` +
            `"${config.cluster.provider}://${
              machineId(match.machine)
            }"; a Node reporting another machine's address never takes its identity (tried ` +
            `${match.tried})`,
        );
      case "ambiguous":
        throw new ProviderError(
          `Cannot look up the machine of node "${name}": machines "${
            match.machines[0].name
          }" and "${match.machines[1].name}" both match by ${match.step} (tried ${match.tried})`,
        );
    }
  }

  /**
   * @returns the machine's state, `absent` when the inventory has none; an `active` machine whose
   *   BMC confirmed it off is `shutdown` (a machine in maintenance or retired keeps the operator's
   *   word)
   */
  instanceState(node: V1Node): Promise<MachineState> {
    return attempt(() => {
      const machine = this.findMachine(node);
      if (machine === undefined) return "absent";
      return machine.state === "active" && this.#poweredOff(machine) ? "shutdown" : machine.state;
    });
  }

  /** @returns false for a machine absent from the inventory or retired */
  instanceExists(node: V1Node): Promise<boolean> {
    return attempt(() => {
      const state = this.findMachine(node)?.state;
      return state !== undefined && state !== "retired";
    });
  }

  /**
   * @returns true when the machine's state is `shutdown` (the operator's word), or its BMC
   *   confirmed it powered off; power never changes `instanceExists`
   */
  instanceShutdown(node: V1Node): Promise<boolean> {
    return attempt(() => {
      const machine = this.findMachine(node);
      return machine !== undefined && (machine.state === "shutdown" || this.#poweredOff(machine));
    });
  }

  /**
   * @returns the machine's providerID, addresses, zone, region, instance type and labels
   * @throws {InstanceNotFoundError} when no machine matches, naming what was tried
   */
  instanceMetadata(node: V1Node): Promise<InstanceMetadata | null> {
    return attempt(() => {
      const machine = this.findMachine(node);
      const { config } = this.#source();
      if (machine === undefined) {
        const match = matchMachine(node, config.machines, config.cluster.provider);
        const tried = match.kind === "absent" ? match.tried : "";
        throw new InstanceNotFoundError(
          `Cannot find the machine of node "${
            node.metadata?.name ?? ""
          }" in the inventory: tried ${tried}`,
          tried,
        );
      }
      return machineMetadata(machine, config.cluster.provider);
    });
  }
}

/**
 * The metadata of one machine.
 * @param machine the inventory entry
 * @param scheme the providerID scheme
 * @returns upstream's InstanceMetadata for it
 */
export function machineMetadata(machine: Machine, scheme: string): InstanceMetadata {
  const addresses: V1NodeAddress[] = [
    ...machine.internal_ips.map((address) => ({ type: "InternalIP", address })),
    ...machine.external_ips.map((address) => ({ type: "ExternalIP", address })),
    { type: "Hostname", address: machine.hostname ?? machine.name },
  ];
  return {
    providerID: `${scheme}://${machineId(machine)}`,
    instanceType: machine.instance_type,
    nodeAddresses: addresses,
    zone: machine.zone,
    region: machine.region,
    additionalLabels: { ...machine.labels },
  };
}

function attempt<T>(body: () => T): Promise<T> {
  try {
    return Promise.resolve(body());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Which Node names hold each providerID, kept up to date one Node at a time. */
class ProviderIdIndex {
  /** The list it was built from. */
  readonly list: readonly V1Node[];
  #byId = new Map<string, Set<string>>();
  #idOf = new Map<string, string>();

  constructor(list: readonly V1Node[]) {
    this.list = list;
    for (const node of list) this.apply(node, node);
  }

  /**
   * Records a Node's providerID.
   * @param node the Node now, or undefined when it was deleted
   * @param was the Node as the event names it (for its name)
   */
  apply(node: V1Node | undefined, was: V1Node): void {
    const name = was.metadata?.name;
    if (!name) return;
    const id = node?.spec?.providerID;
    const next = typeof id === "string" && id !== "" ? id : undefined;
    const previous = this.#idOf.get(name);
    if (previous === next) return;
    if (previous !== undefined) {
      const holders = this.#byId.get(previous)!;
      holders.delete(name);
      if (holders.size === 0) this.#byId.delete(previous);
      this.#idOf.delete(name);
    }
    if (next !== undefined) {
      this.#idOf.set(name, next);
      const holders = this.#byId.get(next);
      if (holders) holders.add(name);
      else this.#byId.set(next, new Set([name]));
    }
  }

  /**
   * The Node holding `providerID`: when several do (a broken cluster), the first in the cache's
   * order, as a scan of the list finds it.
   */
  holder(providerID: string, nodes: () => readonly V1Node[]): string | undefined {
    const holders = this.#byId.get(providerID);
    if (holders === undefined) return undefined;
    if (holders.size === 1) return holders.values().next().value;
    return nodes().find((node) =>
      node.spec?.providerID === providerID && node.metadata?.name &&
      holders.has(node.metadata.name)
    )?.metadata?.name;
  }
}
