/**
 * Acts like a kubelet started with `--cloud-provider=external`, through the API only: registers
 * Nodes carrying the uninitialized taint and flips their Ready condition on the status
 * subresource. No kubelet, container runtime or kube-controller-manager is involved.
 *
 * @module
 */
import type { V1Node, V1NodeAddress } from "@kubernetes/client-node";
import type { ControlPlane } from "./control_plane.ts";

export { waitFor, type WaitOptions } from "./wait.ts";

/** The taint kubelet adds with an external cloud provider (k8s.io/cloud-provider/api). */
export const UNINITIALIZED_TAINT = "node.cloudprovider.kubernetes.io/uninitialized";

/** The annotation kubelet sets from `--node-ip` with an external cloud provider. */
export const PROVIDED_NODE_IP_ANNOTATION = "alpha.kubernetes.io/provided-node-ip";

/** Options for `registerNode`. */
export interface RegisterNodeOptions {
  /** kubelet `--node-ip`: sets the provided-node-ip annotation and an InternalIP address. */
  providedNodeIp?: string;
  /** `spec.providerID` (a kubelet with an external provider normally leaves it empty). */
  providerID?: string;
  /** `status.addresses`. @default Hostname = name, plus InternalIP = providedNodeIp when given */
  addresses?: V1NodeAddress[];
  /** Report Ready=True (true) or Ready=False (false). @default true */
  ready?: boolean;
  /** Extra labels (merged over the kubelet's own). */
  labels?: Record<string, string>;
  /** Leave out the uninitialized taint (a node the CCM already initialized). @default false */
  initialized?: boolean;
}

/** A Node condition status. */
export type ConditionStatus = "True" | "False" | "Unknown";

function readyCondition(status: ConditionStatus, now: string) {
  const reason = status === "True"
    ? "KubeletReady"
    : status === "False"
    ? "KubeletNotReady"
    : "NodeStatusUnknown";
  const message = status === "True"
    ? "kubelet is posting ready status"
    : status === "False"
    ? "container runtime network not ready"
    : "Kubelet stopped posting node status.";
  return {
    type: "Ready",
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  };
}

/**
 * Registers a Node the way kubelet does (POST with status; the apiserver appends its not-ready taint).
 * @param cp the control plane
 * @param name the Node name
 * @param options addresses, provided IP, providerID, readiness, labels
 * @returns the created Node
 * @throws {Error} when the apiserver rejects it
 */
export function registerNode(
  cp: ControlPlane,
  name: string,
  options: RegisterNodeOptions = {},
): Promise<V1Node> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const addresses = options.addresses ?? [
    ...(options.providedNodeIp ? [{ type: "InternalIP", address: options.providedNodeIp }] : []),
    { type: "Hostname", address: name },
  ];
  const resources = { cpu: "4", memory: "8Gi", pods: "110", "ephemeral-storage": "100Gi" };
  const node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels: {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        ...options.labels,
      },
      annotations: options.providedNodeIp
        ? { [PROVIDED_NODE_IP_ANNOTATION]: options.providedNodeIp }
        : {},
    },
    spec: {
      ...(options.providerID ? { providerID: options.providerID } : {}),
      taints: options.initialized
        ? []
        : [{ key: UNINITIALIZED_TAINT, value: "true", effect: "NoSchedule" }],
    },
    status: {
      addresses,
      capacity: resources,
      allocatable: resources,
      conditions: [readyCondition(options.ready === false ? "False" : "True", now)],
      nodeInfo: {
        architecture: "amd64",
        operatingSystem: "linux",
        kubeletVersion: "v1.35.4",
        kubeProxyVersion: "",
        containerRuntimeVersion: "containerd://2.1.0",
        kernelVersion: "6.12.0",
        osImage: "Debian GNU/Linux 13 (trixie)",
        machineID: "",
        systemUUID: "",
        bootID: "",
      },
    },
  };
  return cp.requestOk<V1Node>("POST", "/api/v1/nodes", node);
}

/**
 * Sets a Node's Ready condition, as kubelet (True/False) or the node-lifecycle controller
 * (Unknown) would: a strategic-merge PATCH of the status subresource (conditions merge by type).
 * @param cp the control plane
 * @param name the Node name
 * @param status the new Ready status
 * @returns the patched Node
 * @throws {Error} when the apiserver rejects the patch
 */
export function setNodeReady(
  cp: ControlPlane,
  name: string,
  status: ConditionStatus,
): Promise<V1Node> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return cp.requestOk<V1Node>(
    "PATCH",
    `/api/v1/nodes/${encodeURIComponent(name)}/status`,
    { status: { conditions: [readyCondition(status, now)] } },
    "application/strategic-merge-patch+json",
  );
}

/** The kubelet's default node Lease duration; it renews every quarter of it. */
export const KUBELET_LEASE_DURATION_SECONDS = 40;

/** A kubelet's node Lease being renewed in `kube-node-lease`, as kubelet does. */
export interface LeaseRenewal {
  /** Renewals written so far. */
  readonly renewals: number;
  /** `performance.now()` of the last renewal written; undefined before the first. */
  readonly lastRenewedAt: number | undefined;
  /** Stops renewing (resolves once no renewal is in flight). */
  stop(): Promise<void>;
}

/** Options of `startLeaseRenewal`. */
export interface LeaseRenewalOptions {
  /** Between renewals. @default a quarter of the Lease duration (10 s), as kubelet */
  intervalMs?: number;
  /** Asked before each renewal: a kubelet renews only while its machine runs. @default always */
  running?: () => Promise<boolean>;
}

/**
 * Creates (or takes over) the Node's Lease in `kube-node-lease` and renews it from now on, with
 * `renewTime` set to the current time as kubelet writes it (microseconds), at a random phase
 * within the first interval, like a kubelet that started at some earlier time.
 * @param cp the control plane (written as its admin)
 * @param name the Node name (the Lease's name and holder)
 * @param options interval, and whether the machine still runs
 * @returns the renewal, to stop
 */
export async function startLeaseRenewal(
  cp: ControlPlane,
  name: string,
  options: LeaseRenewalOptions = {},
): Promise<LeaseRenewal> {
  const intervalMs = options.intervalMs ?? KUBELET_LEASE_DURATION_SECONDS * 250;
  const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases`;
  const microTime = () => new Date().toISOString().replace(/Z$/, "000Z");
  const node = await cp.requestOk<V1Node>("GET", `/api/v1/nodes/${encodeURIComponent(name)}`);
  const created = await cp.request("POST", path, {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: {
      name,
      namespace: "kube-node-lease",
      ownerReferences: [{ apiVersion: "v1", kind: "Node", name, uid: node.metadata!.uid! }],
    },
    spec: {
      holderIdentity: name,
      leaseDurationSeconds: KUBELET_LEASE_DURATION_SECONDS,
      renewTime: microTime(),
    },
  });
  if (created.status !== 201 && created.status !== 409) {
    throw new Error(`POST the Lease of ${name}: ${created.status} ${JSON.stringify(created.body)}`);
  }
  const stop = new AbortController();
  const state = { renewals: 0, lastRenewedAt: undefined as number | undefined };
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      stop.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
  const loop = (async () => {
    await sleep(Math.random() * intervalMs);
    while (!stop.signal.aborted) {
      if (await (options.running?.() ?? Promise.resolve(true)).catch(() => false)) {
        if (stop.signal.aborted) break;
        const renewed = await cp.request(
          "PATCH",
          `${path}/${encodeURIComponent(name)}`,
          { spec: { renewTime: microTime() } },
        ).catch(() => undefined);
        if (renewed?.status === 200) {
          state.renewals++;
          state.lastRenewedAt = performance.now();
        }
      }
      await sleep(intervalMs);
    }
  })();
  return {
    get renewals() {
      return state.renewals;
    },
    get lastRenewedAt() {
      return state.lastRenewedAt;
    },
    async stop() {
      stop.abort();
      await loop;
    },
  };
}
