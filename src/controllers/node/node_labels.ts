/**
 * The well-known Node labels and taints the cloud-node controller manages, the additional-label
 * rules (no `kubernetes.io`/`k8s.io` keys, never overwrite) and the beta→GA reconcile.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";

/** kubelet's taint under `--cloud-provider=external`; its removal marks a Node initialized. */
export const UNINITIALIZED_TAINT = "node.cloudprovider.kubernetes.io/uninitialized";

/** GA topology and instance-type labels. */
export const LABEL_ZONE = "topology.kubernetes.io/zone";
/** GA region label. */
export const LABEL_REGION = "topology.kubernetes.io/region";
/** GA instance-type label. */
export const LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type";
/** Deprecated beta twin of the zone label. */
export const LABEL_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone";
/** Deprecated beta twin of the region label. */
export const LABEL_BETA_REGION = "failure-domain.beta.kubernetes.io/region";
/** Deprecated beta twin of the instance-type label. */
export const LABEL_BETA_INSTANCE_TYPE = "beta.kubernetes.io/instance-type";

/** Beta (source of truth upstream) → GA label pairs. */
export const BETA_TO_GA: readonly (readonly [string, string])[] = [
  [LABEL_BETA_ZONE, LABEL_ZONE],
  [LABEL_BETA_REGION, LABEL_REGION],
  [LABEL_BETA_INSTANCE_TYPE, LABEL_INSTANCE_TYPE],
];

/** Keys a provider's additional labels may not use (upstream's regex). */
export const RESERVED_LABEL_KEY_REGEXP = /(^|\.)(kubernetes|k8s)\.io\//;

/**
 * True when the Node carries the uninitialized taint (any value and effect).
 * @param node the Node
 * @returns whether initialization is still pending
 */
export function hasUninitializedTaint(node: V1Node): boolean {
  return (node.spec?.taints ?? []).some((taint) => taint.key === UNINITIALIZED_TAINT);
}

/** The outcome of merging a provider's additional labels. */
export interface AdditionalLabelsResult {
  /** Labels to add. */
  added: Record<string, string>;
  /** Why other keys were left alone, one sentence each. */
  warnings: string[];
}

/**
 * Upstream's additional-label rules: reserved keys are dropped, existing keys are never
 * overwritten, the rest are added.
 * @param existing the Node's labels
 * @param additional the provider's additional labels
 * @returns the labels to add and warnings for the others
 */
export function additionalLabelsToAdd(
  existing: Record<string, string>,
  additional: Record<string, string>,
): AdditionalLabelsResult {
  const added: Record<string, string> = {};
  const warnings: string[] = [];
  for (const [key, value] of Object.entries(additional)) {
    if (RESERVED_LABEL_KEY_REGEXP.test(key)) {
      warnings.push(`Skipped label "${key}": kubernetes.io and k8s.io keys are reserved`);
    } else if (key in existing) {
      if (existing[key] !== value) {
        warnings.push(
          `Kept label "${key}"="${
            existing[key]
          }": the inventory's value "${value}" does not overwrite it`,
        );
      }
    } else {
      added[key] = value;
    }
  }
  return { added, warnings };
}

/**
 * GA labels that must follow their beta twin on an initialized Node (upstream 1.4).
 * @param labels the Node's labels
 * @returns GA label → value to set; empty when nothing is to do
 */
export function gaLabelsToReconcile(labels: Record<string, string> | undefined): Record<
  string,
  string
> {
  const changes: Record<string, string> = {};
  for (const [beta, ga] of BETA_TO_GA) {
    const value = labels?.[beta];
    if (value !== undefined && labels?.[ga] !== value) changes[ga] = value;
  }
  return changes;
}
