/**
 * The heartbeats: once the API is reachable, this host's heartbeat Lease, its report built from
 * each input's owner (the host side's data plane, the reloader, the provider's pools); while
 * leading, the cache of every host's heartbeat (read by the VIP-host controller and the
 * provider's Routes).
 *
 * @module
 */
import type { V1Lease, V1Node } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { AnnouncingInstance, HostDataPlane } from "../cloud/host_data_plane.ts";
import { HostHeartbeat, type HostNode } from "./host_heartbeat.ts";
import { createInformer, type RunnableInformer } from "../kube/informer.ts";
import type { KubeClient } from "../kube/kube_client.ts";
import { createLeaseApi } from "../kube/lease_api.ts";
import type { Informer } from "../kube/ports.ts";
import type { MachinePower, PoolUsage } from "../cloud/provider.ts";
import type { ConfigReloader, InventoryInForce } from "../config/reloader.ts";
import {
  type AnnouncementReport,
  HEARTBEAT_NAMESPACE,
  type HostReport,
  MAX_POWER_DETAIL,
  type PowerReport,
} from "../status/host_report.ts";
import { VERSION } from "../version.ts";

/** Where this host's report comes from: each input from the part that owns it. */
export interface HostReportInputs {
  host: string;
  /** The provider's view of this host's data plane; undefined on a host that announces nothing. */
  dataPlane: HostDataPlane | undefined;
  /** The configuration reloads, as the reloader knows them. */
  reloads: Pick<ConfigReloader, "lastReloadSucceeded" | "lastSuccessAt">;
  /** The inventory in force (the reloader's). @default unknown: not reported */
  inventory?: () => InventoryInForce | undefined;
  /** Usage of the address pools, from the provider. @default none */
  pools?: () => PoolUsage[];
  /** Start-only settings the file changed since start (`RestartRequired`). @default none */
  restartRequired?: () => string[];
  /** Machines' power as this host observes it (the leader), from the provider. @default none */
  power?: () => MachinePower[];
}

/** Options of `startHeartbeat`. */
export interface HeartbeatStart extends HostReportInputs {
  client: KubeClient;
  /** The Node cache: this host's Node owns its heartbeat, so the Lease goes with the Node. */
  nodes: Informer<V1Node>;
  signal: AbortSignal;
}

/**
 * This host's report now, for its heartbeat Lease.
 * @param inputs the data plane, the reloads, the pools and the pending restart
 * @returns the report (validated and cut to its bounds by the heartbeat)
 */
export function hostReport(inputs: HostReportInputs): HostReport {
  const snapshot = inputs.dataPlane?.snapshot() ?? { instances: [], vips: [] };
  const at = inputs.reloads.lastSuccessAt().getTime();
  const restart = inputs.restartRequired?.() ?? [];
  const power = (inputs.power?.() ?? []).map(powerReport);
  const inventory = inputs.inventory?.();
  return {
    v: 1,
    host: inputs.host,
    version: VERSION,
    announcements: snapshot.instances.map(announcementReport),
    vips: snapshot.vips,
    reload: {
      ok: inputs.reloads.lastReloadSucceeded(),
      ...(at > 0 ? { at: new Date(at).toISOString() } : {}),
      ...(restart.length > 0 ? { restart } : {}),
    },
    announcers: (inputs.dataPlane?.applies() ?? []).map((a) => ({
      name: a.announcer,
      apply: a.result,
    })),
    pools: inputs.pools?.() ?? [],
    ...(inventory
      ? { inventory: { sha256: inventory.sha256, since: inventory.since.toISOString() } }
      : {}),
    ...(snapshot.sessions ? { bgp: snapshot.sessions } : {}),
    ...(power.length > 0 ? { power } : {}),
  };
}

/** One announcing instance as the report writes it: the contract's roles are its states. */
function announcementReport(instance: AnnouncingInstance): AnnouncementReport {
  return {
    announcer: instance.announcer,
    name: instance.name,
    state: instance.role,
    observed: instance.observedFrom,
    since: instance.since,
    vips: instance.addresses,
    serves: instance.serves,
  };
}

/** A machine's power for the report: times as ISO, the detail cut to printable ASCII. */
function powerReport({ machine, observation }: MachinePower): PowerReport {
  return {
    machine,
    state: observation.state,
    since: new Date(observation.sinceMs).toISOString(),
    ...(observation.answeredAtMs !== undefined
      ? { answered: new Date(observation.answeredAtMs).toISOString() }
      : {}),
    detail: observation.detail.replace(/[^\x20-\x7e]/g, "?").slice(0, MAX_POWER_DETAIL),
  };
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
    report: () => Promise.resolve(hostReport(options)),
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
    registry,
  });
}
