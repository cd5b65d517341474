/**
 * The cache of the kubelets' node Leases (`kube-node-lease`, one per Node, named after it), for
 * the leader's out-of-service controller: a kubelet that stopped renewing its Lease is one of the
 * two witnesses of a power loss. Each Lease is cut on arrival to what that reader needs (its
 * name, namespace and resourceVersion; holder, duration and renew time), so a cluster's worth of
 * Leases costs a few hundred bytes each.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import { createInformer, type RunnableInformer } from "./informer.ts";
import type { KubeClient } from "./kube_client.ts";

/** The namespace kubelets renew their node Leases in. */
export const KUBELET_LEASE_NAMESPACE = "kube-node-lease";

/** Longer strings are not kept (names are at most 253; times and versions are short). */
const MAX_KEPT_STRING = 256;

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.length <= MAX_KEPT_STRING ? value : undefined;
}

function object(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : {};
}

/**
 * What the cache keeps of one kubelet Lease: a new object with only the fields read, each of the
 * expected type and bounded (anything else is left out, as if absent).
 * @param raw a decoded Lease
 * @returns the trimmed Lease
 */
export function trimKubeletLease(raw: unknown): V1Lease {
  const metadata = object(object(raw).metadata);
  const spec = object(object(raw).spec);
  const kept = <T>(value: T | undefined, key: string) =>
    value === undefined ? {} : { [key]: value };
  const duration = spec.leaseDurationSeconds;
  return {
    metadata: {
      ...kept(text(metadata.name), "name"),
      ...kept(text(metadata.namespace), "namespace"),
      ...kept(text(metadata.resourceVersion), "resourceVersion"),
    },
    spec: {
      ...kept(text(spec.holderIdentity), "holderIdentity"),
      ...kept(
        typeof duration === "number" && Number.isSafeInteger(duration) ? duration : undefined,
        "leaseDurationSeconds",
      ),
      // kept as the text the server sent: it is the kubelet's clock, never compared with ours
      ...kept(text(spec.renewTime), "renewTime"),
    },
  } as V1Lease;
}

/**
 * The informer of every kubelet's node Lease (not yet running).
 * @param client the Kubernetes client
 * @param registry metrics
 * @returns the informer
 */
export function createKubeletLeaseInformer(
  client: Pick<KubeClient, "list" | "watch">,
  registry: Registry,
): RunnableInformer<V1Lease> {
  return createInformer<V1Lease>(client, {
    path: `/apis/coordination.k8s.io/v1/namespaces/${KUBELET_LEASE_NAMESPACE}/leases`,
    kind: "Lease",
    transform: trimKubeletLease,
    registry,
  });
}
