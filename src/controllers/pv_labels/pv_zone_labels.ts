/**
 * Which Node a PersistentVolume is pinned to, and which zone/region labels it should carry
 * because of it (the PersistentVolumeLabel role, for local volumes). Pure.
 *
 * @module
 */
import type { V1Node, V1PersistentVolume } from "@kubernetes/client-node";
import type { Lister } from "../../kube/ports.ts";
import { LABEL_REGION, LABEL_ZONE } from "../node/node_labels.ts";

/** The hostname label a local PV's node affinity usually names. */
export const HOSTNAME_LABEL = "kubernetes.io/hostname";

/** How a PV names its one Node. */
export type PinnedNode = { by: "hostname" | "name"; value: string };

/**
 * The one Node a PV's required node affinity allows, or undefined when it allows zero or several.
 * @param volume the PersistentVolume
 * @returns the label value or Node name it is pinned to
 */
export function pinnedNode(volume: V1PersistentVolume): PinnedNode | undefined {
  const terms = volume.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? [];
  // Terms are ORed: more than one term can allow more than one Node.
  if (terms.length !== 1) return undefined;
  const [term] = terms;
  const pins: PinnedNode[] = [];
  for (const expression of term?.matchExpressions ?? []) {
    if (expression.key === HOSTNAME_LABEL && expression.operator === "In") {
      if (expression.values?.length !== 1) return undefined;
      pins.push({ by: "hostname", value: expression.values[0] as string });
    }
  }
  for (const field of term?.matchFields ?? []) {
    if (field.key === "metadata.name" && field.operator === "In") {
      if (field.values?.length !== 1) return undefined;
      pins.push({ by: "name", value: field.values[0] as string });
    }
  }
  return pins.length === 1 ? pins[0] : undefined;
}

/**
 * The Node a pin designates.
 * @param pin from `pinnedNode`
 * @param nodes the Node lister
 * @returns the Node, or undefined when none (or, by hostname, several) match
 */
export function resolvePinnedNode(pin: PinnedNode, nodes: Lister<V1Node>): V1Node | undefined {
  if (pin.by === "name") return nodes.get(pin.value);
  const byLabel = nodes.list().filter((n) => n.metadata?.labels?.[HOSTNAME_LABEL] === pin.value);
  if (byLabel.length === 1) return byLabel[0];
  return byLabel.length === 0 ? nodes.get(pin.value) : undefined;
}

/**
 * Labels to set on `volume` so it carries its Node's zone and region.
 * @param volume the PersistentVolume
 * @param nodes the Node lister
 * @returns label → value for the labels missing or different; empty when nothing to do
 */
export function volumeLabelsToSet(
  volume: V1PersistentVolume,
  nodes: Lister<V1Node>,
): Record<string, string> {
  const pin = pinnedNode(volume);
  const node = pin && resolvePinnedNode(pin, nodes);
  const changes: Record<string, string> = {};
  for (const key of [LABEL_ZONE, LABEL_REGION]) {
    const value = node?.metadata?.labels?.[key];
    if (value !== undefined && value !== "" && volume.metadata?.labels?.[key] !== value) {
      changes[key] = value;
    }
  }
  return changes;
}
