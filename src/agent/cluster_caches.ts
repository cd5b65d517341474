/**
 * The informers a host runs once a Kubernetes connection exists: Nodes, Services and
 * EndpointSlices on every host (the announcers read them), PersistentVolumes too where the
 * controllers may run (the leader reads all of them). A worker in host-side mode never leads, so
 * it lists no PersistentVolume: its credential (deploy/rbac-host.yaml) may not.
 *
 * @module
 */
import type {
  V1EndpointSlice,
  V1Node,
  V1PersistentVolume,
  V1Service,
} from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { AgentMode } from "../config/agent_mode.ts";
import { createInformer, type RunnableInformer } from "../kube/informer.ts";
import type { KubeClient } from "../kube/kube_client.ts";

/** Informers of one connection. */
export interface ClusterCaches {
  nodes: RunnableInformer<V1Node>;
  services: RunnableInformer<V1Service>;
  /** Never run in host-side mode (that mode never leads, and only the leader reads it). */
  volumes: RunnableInformer<V1PersistentVolume>;
  endpointSlices: RunnableInformer<V1EndpointSlice>;
  /** True when every informer this mode runs has listed once. */
  synced(): boolean;
  /** Resolves true once every informer has synced, false when `signal` aborts first. */
  waitForSyncAll(signal: AbortSignal): Promise<boolean>;
  /** Runs the informers of this mode until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

/** Upstream's informer resync lies in [12h, 24h); resync is a safety net, not a driver. */
function resyncMs(): number {
  return (12 + Math.random() * 12) * 3_600_000;
}

/**
 * Creates the informers (not started).
 * @param client the Kubernetes client
 * @param registry where informer metrics go
 * @param mode `host-side`: the informers the host side reads, no PersistentVolumes
 * @returns the caches
 */
export function createClusterCaches(
  client: KubeClient,
  registry: Registry,
  mode: AgentMode = "full",
): ClusterCaches {
  const nodes = createInformer<V1Node>(client, {
    path: "/api/v1/nodes",
    kind: "Node",
    resyncMs: resyncMs(),
    registry,
  });
  const services = createInformer<V1Service>(client, {
    path: "/api/v1/services",
    kind: "Service",
    resyncMs: resyncMs(),
    registry,
  });
  const volumes = createInformer<V1PersistentVolume>(client, {
    path: "/api/v1/persistentvolumes",
    kind: "PersistentVolume",
    resyncMs: resyncMs(),
    registry,
  });
  const endpointSlices = createInformer<V1EndpointSlice>(client, {
    path: "/apis/discovery.k8s.io/v1/endpointslices",
    kind: "EndpointSlice",
    resyncMs: 0,
    registry,
  });
  const all = mode === "host-side"
    ? [nodes, services, endpointSlices]
    : [nodes, services, volumes, endpointSlices];
  return {
    nodes,
    services,
    volumes,
    endpointSlices,
    synced: () => all.every((i) => i.hasSynced()),
    waitForSyncAll: async (signal) =>
      (await Promise.all(all.map((i) => i.waitForSync(signal)))).every(Boolean),
    run: async (signal) => {
      await Promise.all(all.map((i) => i.run(signal)));
    },
  };
}
