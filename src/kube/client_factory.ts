/**
 * Per-controller clients, as upstream's `ClientBuilder.ClientOrDie(name)` gives them: every named
 * client has its own client-side rate limit (`--kube-api-qps` / `--kube-api-burst` each) over the
 * one shared transport (connections, credentials, metrics), and a User-Agent ending in its name.
 * So a burst of Node initializations does not delay a Service, and the Lease renewals never wait
 * behind either. A controller's Events go through its own client, as upstream's recorders do.
 *
 * @module
 */
import { type KubeClient, kubeClientOver } from "./kube_client.ts";

/** The client names Keelson uses; one rate limit each. */
export const CLIENT_NAMES = {
  /** The informers' lists and watches (upstream: `shared-informers`). */
  informers: "shared-informers",
  /** Lease reads and renewals (upstream: a client of its own, `leader-election`). */
  leaderElection: "leader-election",
  /** The cloud-node controller and its Events. */
  cloudNode: "cloud-node-controller",
  /** The cloud-node-lifecycle controller and its Events. */
  cloudNodeLifecycle: "cloud-node-lifecycle-controller",
  /** The service (LoadBalancer) controller and its Events (upstream: `service-controller`). */
  service: "service-controller",
  /** The PersistentVolume label controller. */
  pvLabels: "pv-labels-controller",
  /** This host's heartbeat Lease (every host). */
  heartbeat: "host-heartbeat",
  /** The leader's VIP-host Events. */
  vipHosts: "vip-host-controller",
  /** The out-of-service controller: its taints and Events. */
  outOfService: "out-of-service-controller",
  /** The route controller: Node conditions and its Events (upstream: `route-controller`). */
  route: "route-controller",
  /** Events this host records about itself (a VIP it starts announcing over BGP). */
  hostEvents: "host-events",
} as const;

/** Hands out named clients. */
export interface ClientFactory {
  /**
   * The client of one name: built on first use, the same one (and rate limit) afterwards.
   * @param name e.g. `CLIENT_NAMES.service`
   * @returns the client; its `close()` does nothing (the root client owns the connections)
   */
  client(name: string): KubeClient;
}

/** Options of `createClientFactory`. */
export interface ClientFactoryOptions {
  /** Each client's sustained requests per second. @default 20 */
  qps?: number;
  /** Each client's burst. @default 30 */
  burst?: number;
  /** The User-Agent before `/<name>`. @default "keelson" */
  userAgent?: string;
}

/**
 * Builds the factory over one root client.
 * @param root the client whose transport every named client shares
 * @param options the per-client rate limit and User-Agent prefix
 * @returns the factory
 */
export function createClientFactory(
  root: KubeClient,
  options: ClientFactoryOptions = {},
): ClientFactory {
  const clients = new Map<string, KubeClient>();
  return {
    client(name) {
      let client = clients.get(name);
      if (!client) {
        const transport = root.transport.withRateLimit({
          ...(options.qps !== undefined ? { qps: options.qps } : {}),
          ...(options.burst !== undefined ? { burst: options.burst } : {}),
          userAgent: `${options.userAgent ?? "keelson"}/${name}`,
        });
        client = kubeClientOver(transport, root.source);
        clients.set(name, client);
      }
      return client;
    },
  };
}
