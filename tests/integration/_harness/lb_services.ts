/**
 * LoadBalancer Services for the service-controller integration tests: an inventory writer,
 * Service manifests, reads of status and Events, and a `keelson run` agent that is waited on
 * until it leads.
 *
 * @module
 */
import type { CoreV1Event, V1Service, V1ServicePort } from "@kubernetes/client-node";
import type { ControlPlane } from "./control_plane.ts";
import { type KeelsonProcess, startKeelson } from "./keelson_process.ts";
import { waitFor } from "./wait.ts";

/** The cleanup finalizer the controller adds. */
export const CLEANUP_FINALIZER = "service.kubernetes.io/load-balancer-cleanup";
/** The annotation naming the pool an address came from. */
export const POOL_ANNOTATION = "keelson.io/allocated-from-pool";

const LEADER = 'leader_election_master_status{name="keelson"}';

// deno-lint-ignore no-console
const stderr = (text: string) => console.error(text);

/**
 * Prints a measured figure on stderr with the `FIGURE` prefix.
 * @param text the figure and what it measures
 */
export function figure(text: string): void {
  stderr(`FIGURE ${text}`);
}

/** One `[[pools]]` entry of a test inventory. */
export interface TestPool {
  name: string;
  addresses: string[];
  reserved?: string[];
  autoAssign?: boolean;
}

/** Options of `lbInventory`. */
export interface LbInventoryOptions {
  /** The pools. */
  pools: TestPool[];
  /** `[load_balancer] default_class`. @default true */
  defaultClass?: boolean;
}

/**
 * A valid inventory with keepalived off and short leader-election timings (a killed leader is
 * replaced within seconds).
 * @param options pools and class setting
 * @returns the TOML text
 */
export function lbInventory(options: LbInventoryOptions): string {
  const pools = options.pools.map((p) =>
    [
      "[[pools]]",
      `name = ${JSON.stringify(p.name)}`,
      `addresses = ${JSON.stringify(p.addresses)}`,
      `reserved = ${JSON.stringify(p.reserved ?? [])}`,
      `auto_assign = ${p.autoAssign ?? true}`,
    ].join("\n")
  ).join("\n\n");
  return `
[cluster]
name = "it"

[keepalived]
enabled = false

[leader_election]
lease_duration = "4s"
renew_deadline = "3s"
retry_period = "1s"

[load_balancer]
default_class = ${options.defaultClass ?? true}

${pools}

[[machines]]
name = "cp-1"
role = "control-plane"
zone = "z1"
region = "r1"
internal_ips = ["10.0.0.11"]
`;
}

/**
 * Starts `keelson run` against the control plane (admin kubeconfig) and waits until it leads.
 * @param cp the control plane
 * @param dir the test directory (log files)
 * @param configPath the inventory file
 * @param name the host name and log name
 * @returns the running agent
 * @throws {Error} when it does not lead within 60 s (the agent is stopped first)
 */
export async function startLeadingAgent(
  cp: ControlPlane,
  dir: string,
  configPath: string,
  name: string,
): Promise<KeelsonProcess> {
  const agent = await startKeelson({
    configPath,
    kubeconfig: cp.tokenKubeconfigPath,
    host: name,
    dir,
  });
  try {
    await waitFor(async () => (await agent.metric(LEADER)) === 1, {
      timeoutMs: 60_000,
      intervalMs: 200,
      message: `agent ${name} to lead`,
    });
  } catch (error) {
    stderr(`--- log of agent ${name}\n${(await agent.log()).slice(-4000)}`);
    await agent.stop();
    throw error;
  }
  return agent;
}

/** What a test Service looks like besides its name. */
export interface ServiceShape {
  annotations?: Record<string, string>;
  /** Ports as `[port, protocol]`. @default [[80, "TCP"]] */
  ports?: [number, "TCP" | "UDP"][];
  /** More spec fields (loadBalancerIP, loadBalancerClass, ipFamilies, ipFamilyPolicy, …). */
  spec?: Record<string, unknown>;
}

/**
 * Creates a LoadBalancer Service.
 * @param cp the control plane
 * @param namespace its namespace (created before)
 * @param name its name
 * @param shape annotations, ports and more spec
 * @returns the created Service
 */
export function createLbService(
  cp: ControlPlane,
  namespace: string,
  name: string,
  shape: ServiceShape = {},
): Promise<V1Service> {
  const ports: V1ServicePort[] = (shape.ports ?? [[80, "TCP"]]).map(([port, protocol]) => ({
    name: `${protocol.toLowerCase()}-${port}`,
    port,
    protocol,
    targetPort: port,
  }));
  return cp.requestOk<V1Service>("POST", `/api/v1/namespaces/${namespace}/services`, {
    metadata: { name, annotations: shape.annotations ?? {} },
    spec: { type: "LoadBalancer", selector: { app: name }, ports, ...shape.spec },
  });
}

/**
 * Creates a namespace.
 * @param cp the control plane
 * @param name the namespace
 */
export async function createNamespace(cp: ControlPlane, name: string): Promise<void> {
  await cp.requestOk("POST", "/api/v1/namespaces", { metadata: { name } });
}

/**
 * Reads a Service.
 * @returns the Service, or undefined when it does not exist
 */
export async function getService(
  cp: ControlPlane,
  namespace: string,
  name: string,
): Promise<V1Service | undefined> {
  const response = await cp.request<V1Service>(
    "GET",
    `/api/v1/namespaces/${namespace}/services/${name}`,
  );
  if (response.status === 404) return undefined;
  if (response.status !== 200) throw new Error(`GET service answered ${response.status}`);
  return response.body;
}

/**
 * The ingress addresses of a Service.
 * @param service the Service (or undefined)
 * @returns `status.loadBalancer.ingress[].ip`
 */
export function ingressIps(service: V1Service | undefined): string[] {
  return (service?.status?.loadBalancer?.ingress ?? []).flatMap((e) => e.ip ? [e.ip] : []);
}

/**
 * Waits until a Service has ingress addresses.
 * @returns the Service and how long it took from the call, in ms
 */
export async function waitIngress(
  cp: ControlPlane,
  namespace: string,
  name: string,
  timeoutMs = 30_000,
): Promise<{ service: V1Service; ms: number }> {
  const began = performance.now();
  const service = await waitFor(async () => {
    const s = await getService(cp, namespace, name);
    return ingressIps(s).length > 0 ? s : undefined;
  }, { timeoutMs, intervalMs: 50, message: `ingress of ${namespace}/${name}` });
  return { service, ms: performance.now() - began };
}

/**
 * The Events of one object in a namespace.
 * @returns the Events whose involvedObject has that name
 */
export async function eventsOf(
  cp: ControlPlane,
  namespace: string,
  name: string,
): Promise<CoreV1Event[]> {
  const list = await cp.requestOk<{ items: CoreV1Event[] }>(
    "GET",
    `/api/v1/namespaces/${namespace}/events?fieldSelector=involvedObject.name%3D${name}`,
  );
  return list.items;
}

/**
 * Waits for an Event of the object with the reason (and type).
 * @returns the Event
 */
export function waitEvent(
  cp: ControlPlane,
  namespace: string,
  name: string,
  reason: string,
  type: "Normal" | "Warning" = "Normal",
  timeoutMs = 30_000,
): Promise<CoreV1Event> {
  return waitFor(
    async () =>
      (await eventsOf(cp, namespace, name)).find((e) => e.reason === reason && e.type === type),
    {
      timeoutMs,
      message: `${type} event ${reason} on ${namespace}/${name}`,
    },
  );
}

/**
 * Waits for the Warnings of a refused request (`AllocationFailed` with the allocator's reason,
 * and `SyncLoadBalancerFailed`).
 * @param allocationReason the allocator's reason quoted in the message, e.g. `AddressInUse`
 * @returns the `AllocationFailed` message
 */
export async function waitRefused(
  cp: ControlPlane,
  namespace: string,
  name: string,
  allocationReason: string,
): Promise<string> {
  const event = await waitFor(
    async () =>
      (await eventsOf(cp, namespace, name)).find((e) =>
        e.reason === "AllocationFailed" && e.type === "Warning" &&
        (e.message ?? "").includes(`(${allocationReason})`)
      ),
    { timeoutMs: 30_000, message: `AllocationFailed (${allocationReason}) on ${name}` },
  );
  await waitEvent(cp, namespace, name, "SyncLoadBalancerFailed", "Warning");
  return event.message ?? "";
}

/**
 * Whether an address lies in an IPv4 range given by its first and last address.
 * @returns true when first <= ip <= last
 */
export function inV4Range(ip: string, first: string, last: string): boolean {
  const n = (a: string) => a.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
  return /^\d+\.\d+\.\d+\.\d+$/.test(ip) && n(first) <= n(ip) && n(ip) <= n(last);
}
