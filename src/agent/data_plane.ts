/**
 * Wires the data-plane view: on a keepalived host, the tracker of this host's VRRP states and
 * served VIPs; once the API is reachable, the host's heartbeat Lease; while leading, the VIP-host
 * controller that turns every heartbeat into Events and metrics.
 *
 * @module
 */
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { Config } from "../config/types.ts";
import { VipHostController } from "../controllers/vip_hosts/vip_host_controller.ts";
import { handlesService } from "../controllers/service/handles_service.ts";
import { createEventSink } from "../kube/cluster_writer.ts";
import { AggregatingEventRecorder } from "../kube/event_recorder.ts";
import { HostHeartbeat } from "../kube/host_heartbeat.ts";
import { createInformer } from "../kube/informer.ts";
import type { KubeClient } from "../kube/kube_client.ts";
import { leaseApiFromCoordinationApi } from "../kube/lease_api.ts";
import type { Lister } from "../kube/ports.ts";
import { canonicalIp } from "../net/ip.ts";
import { HEARTBEAT_NAMESPACE, type HostReport } from "../status/host_report.ts";
import { VERSION } from "../version.ts";
import { readInterfaceAddresses } from "../../providers/baremetal/keepalived/interface_addresses.ts";
import { NOTIFY_FIFO_FILE } from "../../providers/baremetal/keepalived/model.ts";
import {
  type DataPlaneSnapshot,
  DataPlaneTracker,
} from "../../providers/baremetal/keepalived/vrrp_state.ts";
import { IN_USE_METRIC, TOTAL_METRIC } from "../../providers/baremetal/ipam/pool_usage_metrics.ts";

const CONFIG_TIMESTAMP_METRIC = "keelson_config_last_reload_success_timestamp_seconds";

/** Options of `startDataPlaneTracker`. */
export interface DataPlaneTrackerStart {
  config: () => Config;
  registry: Registry;
  /** Services, once the connection exists (for the `service` label). */
  services: () => Lister<V1Service> | undefined;
  /** Whether keepalived writes its notify FIFO (the user Keelson runs as is known). */
  fifo: boolean;
  signal: AbortSignal;
}

/**
 * Starts tracking this host's keepalived states and served VIPs.
 * @param options config, registry, Services source, signal
 * @returns the tracker and the promise of its loop
 */
export function startDataPlaneTracker(
  options: DataPlaneTrackerStart,
): { tracker: DataPlaneTracker; finished: Promise<void> } {
  const config = options.config();
  const dir = config.keepalived.track_file_dir.replace(/\/+$/, "");
  const tracker = new DataPlaneTracker({
    registry: options.registry,
    interface: () => options.config().keepalived.interface,
    ...(options.fifo ? { fifoPath: `${dir}/${NOTIFY_FIFO_FILE}` } : {}),
    configFile: () => options.config().keepalived.config_file,
    servicesOf: (vip) => {
      const services = options.services();
      if (!services) return [];
      const keys: string[] = [];
      for (const s of services.list()) {
        if (!handlesService(options.config(), s)) continue;
        const ips = (s.status?.loadBalancer?.ingress ?? []).map((i) => canonicalIp(i.ip ?? ""));
        if (ips.includes(vip)) keys.push(`${s.metadata?.namespace}/${s.metadata?.name}`);
      }
      return keys.sort();
    },
    readAddresses: (iface) => readInterfaceAddresses({ interface: iface }),
  });
  return { tracker, finished: tracker.run(options.signal) };
}

/** Options of `startHeartbeat`. */
export interface HeartbeatStart {
  client: KubeClient;
  host: string;
  registry: Registry;
  /** The data plane now; undefined on a host without keepalived. */
  snapshot: () => DataPlaneSnapshot | undefined;
  /** Subscribes to data-plane changes. */
  subscribe?: (listener: () => void) => void;
  reloadOk: () => boolean;
  /** Outcome of the last keepalived apply. */
  keepalivedApply: () => HostReport["reload"]["keepalived"];
  signal: AbortSignal;
}

/**
 * Starts this host's heartbeat Lease.
 * @param options client, host, report sources, signal
 * @returns the promise of its loop
 */
export function startHeartbeat(options: HeartbeatStart): Promise<void> {
  const heartbeat = new HostHeartbeat({
    leases: leaseApiFromCoordinationApi(options.client.coordination),
    host: options.host,
    namespace: HEARTBEAT_NAMESPACE,
    report: async () => {
      const snapshot = options.snapshot() ?? { instances: [], vips: [] };
      const at = await metricValue(options.registry, CONFIG_TIMESTAMP_METRIC);
      return {
        v: 1,
        host: options.host,
        version: VERSION,
        instances: snapshot.instances,
        vips: snapshot.vips,
        reload: {
          ok: options.reloadOk(),
          ...(at ? { at: new Date(at * 1000).toISOString() } : {}),
          keepalived: options.keepalivedApply(),
        },
        pools: await poolUsage(options.registry),
      };
    },
  });
  options.subscribe?.(() => heartbeat.changed());
  return heartbeat.run(options.signal);
}

/**
 * Runs the VIP-host controller while leading.
 * @param client the Kubernetes client
 * @param services the Service informer
 * @param config the configuration in force
 * @param registry metrics
 * @param signal the leader signal
 */
export async function runVipHostController(
  client: KubeClient,
  services: import("../kube/ports.ts").Informer<V1Service>,
  config: () => Config,
  registry: Registry,
  signal: AbortSignal,
): Promise<void> {
  const leases = createInformer<V1Lease>(client, {
    path: `/apis/coordination.k8s.io/v1/namespaces/${HEARTBEAT_NAMESPACE}/leases`,
    kind: "Lease",
    apiVersion: "coordination.k8s.io/v1",
    registry,
  });
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
  });
  await Promise.all([leases.run(signal), controller.run(signal)]);
  await events.flush();
}

async function metricValue(registry: Registry, name: string): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return undefined;
  const value = (await metric.get()).values[0]?.value;
  return typeof value === "number" && value > 0 ? value : undefined;
}

async function poolUsage(registry: Registry): Promise<HostReport["pools"]> {
  const total = registry.getSingleMetric(TOTAL_METRIC);
  const used = registry.getSingleMetric(IN_USE_METRIC);
  if (!total || !used) return [];
  const usedValues = (await used.get()).values;
  const pools: HostReport["pools"] = [];
  for (const v of (await total.get()).values) {
    const pool = String(v.labels.pool ?? "");
    const family = v.labels.family === "IPv6" ? "IPv6" : "IPv4";
    const inUse = usedValues.find((u) => u.labels.pool === pool && u.labels.family === family);
    pools.push({ pool, family, total: v.value, used: inUse?.value ?? 0 });
  }
  return pools.sort((a, b) => a.pool.localeCompare(b.pool) || a.family.localeCompare(b.family));
}
