/**
 * One small cluster and four inventories, shared by the offline diff tests (a snapshot file) and
 * the live plan's integration test (the same objects in a real kube-apiserver): the inventory in
 * force, one that retires the machine of a NotReady Node, one that shrinks the pool under an
 * address a Service holds, and one that changes nothing but comments.
 */
import type { V1Node, V1Service, V1ServiceStatus } from "@kubernetes/client-node";

const HEAD = `
[cluster]
name = "plan"

[keepalived]
enabled = false
`;

function inventory(options: { pool?: string; n2State?: string; comment?: string } = {}): string {
  return `${HEAD}${options.comment ?? ""}
[[pools]]
name = "lan"
addresses = ["${options.pool ?? "192.0.2.0/28"}"]

[[machines]]
name = "n-1"
id = "SN-N1"
role = "worker"
zone = "z1"
region = "r1"
internal_ips = ["10.0.0.21"]

[[machines]]
name = "n-2"
id = "SN-N2"
role = "worker"
zone = "z1"
region = "r1"
internal_ips = ["10.0.0.22"]
state = "${options.n2State ?? "active"}"
`;
}

/** The inventory in force. */
export const IN_FORCE = inventory();
/** n-2's machine retired (its Node is NotReady): the Node would be deleted. */
export const RETIRE_N2 = inventory({ n2State: "retired" });
/** The pool shrunk to 192.0.2.0/29: 192.0.2.14, which shop/db holds, would be stranded. */
export const SHRINK_POOL = inventory({ pool: "192.0.2.0/29" });
/** The same inventory with a comment added: nothing changes. */
export const COMMENTED = inventory({ comment: "\n# reviewed\n" });

/** The labels the cloud-node controller sets from the inventory (so n-1, n-2 are up to date). */
const LABELS = {
  "node.kubernetes.io/instance-type": "baremetal",
  "topology.kubernetes.io/zone": "z1",
  "topology.kubernetes.io/region": "r1",
};

/** A Node as Keelson left it after initialization. */
export interface FixtureNode {
  name: string;
  providerID: string;
  internalIp: string;
  ready: boolean;
}

/** n-1 Ready, n-2 NotReady, both initialized. */
export const NODES: readonly FixtureNode[] = [
  { name: "n-1", providerID: "baremetal://SN-N1", internalIp: "10.0.0.21", ready: true },
  { name: "n-2", providerID: "baremetal://SN-N2", internalIp: "10.0.0.22", ready: false },
];

/** A LoadBalancer Service holding an address from pool lan. */
export interface FixtureService {
  namespace: string;
  name: string;
  ip: string;
}

/** shop/web holds 192.0.2.1, shop/db 192.0.2.14. */
export const SERVICES: readonly FixtureService[] = [
  { namespace: "shop", name: "web", ip: "192.0.2.1" },
  { namespace: "shop", name: "db", ip: "192.0.2.14" },
];

/** The Node object (metadata and spec; the status is written apart in a live cluster). */
export function nodeObject(node: FixtureNode): V1Node {
  return {
    metadata: { name: node.name, labels: { "kubernetes.io/hostname": node.name, ...LABELS } },
    spec: { providerID: node.providerID },
    status: {
      addresses: [
        { type: "InternalIP", address: node.internalIp },
        { type: "Hostname", address: node.name },
      ],
      conditions: [{ type: "Ready", status: node.ready ? "True" : "False" }],
    },
  };
}

/** The Service object, without its status. */
export function serviceObject(service: FixtureService): V1Service {
  return {
    metadata: {
      name: service.name,
      namespace: service.namespace,
      annotations: { "keelson.io/allocated-from-pool": "lan" },
      finalizers: ["service.kubernetes.io/load-balancer-cleanup"],
    },
    spec: { type: "LoadBalancer", ports: [{ port: 80 }] },
  };
}

/** The Service's status, as Keelson wrote it. */
export function serviceStatus(service: FixtureService): V1ServiceStatus {
  return { loadBalancer: { ingress: [{ ip: service.ip, ipMode: "VIP" }] } };
}

/** The whole cluster as `kubectl get nodes,svc -A -o json` prints it. */
export function snapshotJson(): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "List",
    items: [
      ...NODES.map((n) => ({ apiVersion: "v1", kind: "Node", ...nodeObject(n) })),
      ...SERVICES.map((s) => ({
        apiVersion: "v1",
        kind: "Service",
        ...serviceObject(s),
        status: serviceStatus(s),
      })),
    ],
  });
}
