/**
 * When a serving host holds its VIPs back: one rule for VRRP (keepalived) and BGP (BIRD), for the
 * running announcers, `keelson render` and the root step alike.
 *
 * - A machine the inventory puts in `maintenance`, `shutdown` or `retired` serves nothing: no
 *   Service VIP and no control-plane VIP. It is the operator's word, read from the inventory, so
 *   every host (and root's check of a staged file) reaches the same verdict.
 * - A host whose Node is not Ready serves no Service VIP: its kube-proxy may not forward, and
 *   the Node controller is evicting its Pods. It keeps the control-plane VIP while its local
 *   kube-apiserver answers /readyz: that VIP is the apiserver's, and tying it to the kubelets
 *   would turn a cluster-wide Node problem (every Node NotReady) into an API outage that no
 *   kubelet could then report its way out of.
 * - A drain (Keelson stopping) holds everything back.
 *
 * A Node that is not known (no cache yet, not registered, no Ready condition) counts as Ready, so a
 * cluster that is still coming up is not cut off. The hosts that hold a VIP back stay members of
 * its VRRP group and keep their BGP sessions: nothing is renumbered, and they take their share
 * back as soon as the hold ends.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import type { Config } from "../../src/config/types.ts";
import { countsReady } from "../../src/kube/node_ready.ts";

/** What a serving host holds back, and why. */
export interface ServingHold {
  /** Why, for the log and `keelson render` (fixed text and inventory names only). */
  readonly reason: string;
  /** The control-plane VIP is held back too, not only the Service VIPs. */
  readonly controlPlane: boolean;
}

/** What the host knows of itself beyond the inventory. */
export interface HostCondition {
  /** Its Node is Ready, or not known (`nodeIsReady`). @default true */
  readonly nodeReady?: boolean;
  /** Keelson is stopping. @default false */
  readonly draining?: boolean;
}

/**
 * What `host` holds back now, or undefined while it serves everything it is chosen for.
 * @param config the inventory in force
 * @param host this host's machine name (= its Node name)
 * @param condition its Node's readiness and whether Keelson is stopping
 * @example
 * servingHold(config, "w-1", { nodeReady: false })
 * // { reason: 'Node "w-1" is not Ready', controlPlane: false }
 */
export function servingHold(
  config: Pick<Config, "machines">,
  host: string,
  condition: HostCondition = {},
): ServingHold | undefined {
  if (condition.draining === true) {
    return { reason: "Keelson is stopping (drain)", controlPlane: true };
  }
  const machine = config.machines.find((m) => m.name === host);
  if (machine !== undefined && machine.state !== "active") {
    return {
      reason: `machine "${host}" is in state "${machine.state}", not "active"`,
      controlPlane: true,
    };
  }
  if (condition.nodeReady === false) {
    return { reason: `Node "${host}" is not Ready`, controlPlane: false };
  }
  return undefined;
}

/**
 * Whether a host's Node counts as Ready: present with a Ready condition that is not `True` is
 * the only "no". No Node (not registered yet, or unknown) and no Ready condition count as Ready.
 * @param node the host's Node, when known
 */
export function nodeIsReady(node: V1Node | undefined): boolean {
  return countsReady(node);
}

/**
 * Whether this host's Node is Ready as far as the Node cache knows; unknown (no cache, not synced,
 * no Node yet) counts as Ready.
 * @param nodes the Node cache, once it exists
 * @param host this host's Node name
 */
export function hostNodeReady(
  nodes: { get(key: string): V1Node | undefined; hasSynced(): boolean } | undefined,
  host: string,
): boolean {
  if (!nodes?.hasSynced()) return true;
  return nodeIsReady(nodes.get(host));
}
