/**
 * Wires the data-plane view: once the API is reachable, this host's heartbeat Lease (with what the
 * provider's host side observes of its data plane); while leading, the VIP-host controller that
 * turns every heartbeat into Events and metrics.
 *
 * @module
 */
import type { V1Lease, V1Node, V1Service } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { HostDataPlane } from "../cloud/host_data_plane.ts";
import { handlesService } from "../cloud/load_balancer_class.ts";
import type { Config } from "../config/types.ts";
import { VipHostController } from "../controllers/vip_hosts/vip_host_controller.ts";
import { createEventSink } from "../kube/cluster_writer.ts";
import { AggregatingEventRecorder } from "../kube/event_recorder.ts";
import { HostHeartbeat, type HostNode } from "../kube/host_heartbeat.ts";
import { createInformer, type RunnableInformer } from "../kube/informer.ts";
import type { KubeClient } from "../kube/kube_client.ts";
import { createLeaseApi } from "../kube/lease_api.ts";
import type { Informer } from "../kube/ports.ts";
import { readPoolUsage } from "../metrics/pool_usage.ts";
import { HEARTBEAT_NAMESPACE } from "../status/host_report.ts";
import { inventoryHosts } from "../status/retired_heartbeats.ts";
import type { RecordObserver } from "../status/observed_freshness.ts";
import { VERSION } from "../version.ts";

const CONFIG_TIMESTAMP_METRIC = "keelson_config_last_reload_success_timestamp_seconds";

/** Options of `startHeartbeat`. */
export interface HeartbeatStart {
  client: KubeClient;
  host: string;
  registry: Registry;
  /** The provider's view of this host's data plane; undefined on a host that announces nothing. */
  dataPlane: HostDataPlane | undefined;
  reloadOk: () => boolean;
  /** The Node cache: this host's Node owns its heartbeat, so the Lease goes with the Node. */
  nodes: Informer<V1Node>;
  /** Start-only settings the file changed since start (`RestartRequired`). @default none */
  restartRequired?: () => string[];
  signal: AbortSignal;
}

/**
 * This host's Node as the cache knows it.
 * @param nodes the Node cache
 * @param host this host's machine name (= its Node's name)
 * @returns its uid, `absent`, or `unknown` before the cache has synced
 */
export function hostNode(nodes: Informer<V1Node>, host: string): HostNode {
  if (!nodes.hasSynced()) return "unknown";
  const uid = nodes.get(host)?.metadata?.uid;
  return uid ? { uid } : "absent";
}

/**
 * Starts this host's heartbeat Lease.
 * @param options client, host, report sources, signal
 * @returns the promise of its loop
 */
export function startHeartbeat(options: HeartbeatStart): Promise<void> {
  const heartbeat = new HostHeartbeat({
    leases: createLeaseApi(options.client.rest),
    host: options.host,
    namespace: HEARTBEAT_NAMESPACE,
    node: () => hostNode(options.nodes, options.host),
    report: async () => {
      const snapshot = options.dataPlane?.snapshot() ?? { instances: [], vips: [] };
      const at = await metricValue(options.registry, CONFIG_TIMESTAMP_METRIC);
      const restart = options.restartRequired?.() ?? [];
      return {
        v: 1,
        host: options.host,
        version: VERSION,
        instances: snapshot.instances,
        vips: snapshot.vips,
        reload: {
          ok: options.reloadOk(),
          ...(at ? { at: new Date(at * 1000).toISOString() } : {}),
          keepalived: options.dataPlane?.lastApply() ?? "none",
          ...(restart.length > 0 ? { restart } : {}),
        },
        pools: await readPoolUsage(options.registry),
        ...(snapshot.bgp ? { bgp: snapshot.bgp } : {}),
      };
    },
  });
  const unsubscribe = options.dataPlane?.subscribe(() => heartbeat.changed());
  options.signal.addEventListener("abort", () => unsubscribe?.(), { once: true });
  return heartbeat.run(options.signal);
}

/**
 * The cache of every host's heartbeat Lease, for the leader (VIP hosts, the provider's Routes).
 * @param client the Kubernetes client
 * @param registry metrics
 * @returns the informer (not yet running)
 */
export function createHeartbeatInformer(
  client: KubeClient,
  registry: Registry,
): RunnableInformer<V1Lease> {
  return createInformer<V1Lease>(client, {
    path: `/apis/coordination.k8s.io/v1/namespaces/${HEARTBEAT_NAMESPACE}/leases`,
    kind: "Lease",
    apiVersion: "coordination.k8s.io/v1",
    registry,
  });
}

/**
 * Runs the VIP-host controller while leading, and the heartbeat cache it reads.
 * @param client the Kubernetes client
 * @param leases the heartbeat cache (`createHeartbeatInformer`), run here
 * @param observer when each heartbeat last changed, shared with the other readers (pod routes)
 * @param services the Service informer
 * @param config the configuration in force
 * @param registry metrics
 * @param signal the leader signal
 */
export async function runVipHostController(
  client: KubeClient,
  leases: RunnableInformer<V1Lease>,
  observer: RecordObserver,
  services: Informer<V1Service>,
  config: () => Config,
  registry: Registry,
  signal: AbortSignal,
): Promise<void> {
  const events = new AggregatingEventRecorder(createEventSink(client), {
    component: "keelson-vip-hosts",
    host: "",
  });
  const controller = new VipHostController({
    services,
    leases,
    events,
    handles: (s) => handlesService(config(), s),
    registry,
    inventory: () => inventoryOf(config()),
    observer,
  });
  await Promise.all([leases.run(signal), controller.run(signal)]);
  // bounded: pending Event writes get a short grace, then the stop goes on
  await events.close();
}

// the inventory's hosts, once per configuration (a reload brings a new object)
const INVENTORIES = new WeakMap<Config, Set<string>>();

function inventoryOf(config: Config): Set<string> {
  let hosts = INVENTORIES.get(config);
  if (!hosts) {
    hosts = inventoryHosts(config.machines);
    INVENTORIES.set(config, hosts);
  }
  return hosts;
}

async function metricValue(registry: Registry, name: string): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return undefined;
  const value = (await metric.get()).values[0]?.value;
  return typeof value === "number" && value > 0 ? value : undefined;
}
