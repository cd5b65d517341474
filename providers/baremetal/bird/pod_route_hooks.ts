/**
 * The provider's Routes capability over BIRD, as the registry entry (`mod.ts`) wires it: pod
 * CIDRs answered by this host's BIRD once the host side runs; where BIRD does not run here, from
 * the other hosts' heartbeats while leading; else a retriable failure. The pod-route decision
 * over the Node cache is kept until a Node event or a reload changes its inputs: the route
 * controller asks it at every poll of every route waiting for a heartbeat.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import {
  type ProviderContext,
  ProviderError,
  type Route,
  type Routes,
} from "../../../src/cloud/provider.ts";
import type { PodRoutePlan } from "../../../src/cloud/cluster_plan.ts";
import type { Config } from "../../../src/config/types.ts";
import type { Lister } from "../../../src/kube/ports.ts";
import { decidePodRoutes, type PodRouteDecision } from "./decide_pod_routes.ts";
import { reportedRoutes } from "./reported_routes.ts";

/**
 * Whether the inventory routes pod CIDRs (some BGP peer receives them): the provider then has
 * Routes.
 * @param config the inventory
 */
export function routesPodCidrs(config: Config): boolean {
  return config.bgp?.peers.some((p) => p.pod_cidrs) ?? false;
}

/**
 * The pod routes the provider would announce for a snapshot's Nodes (`keelson plan`), when it
 * routes pod CIDRs at all.
 * @param config the inventory
 * @param nodes the snapshot's Nodes
 * @returns the decision, or undefined when no peer receives pod CIDRs
 */
export function planPodRoutes(config: Config, nodes: readonly V1Node[]): PodRoutePlan | undefined {
  return routesPodCidrs(config) ? decidePodRoutes({ config, nodes }) : undefined;
}

/**
 * The pod-route decision over the connected Node cache, decided again only after a Node event
 * (`nodesChanged`) or a reload (another Config object).
 */
export class PodRouteDecisions {
  readonly #config: () => Config;
  #version = 0;
  #memo: { config: Config; version: number; decision: PodRouteDecision } | undefined;

  /** @param config the configuration in force */
  constructor(config: () => Config) {
    this.#config = config;
  }

  /** A Node was added, changed or deleted: the next `decide` decides again. */
  nodesChanged(): void {
    this.#version++;
  }

  /**
   * The decision over `nodes`, kept while neither the Nodes nor the configuration changed.
   * @param nodes the Node cache this object is told the events of
   */
  decide(nodes: Lister<V1Node>): PodRouteDecision {
    const config = this.#config();
    const memo = this.#memo;
    if (memo?.config === config && memo.version === this.#version) return memo.decision;
    const decision = decidePodRoutes({ config, nodes: nodes.list() });
    this.#memo = { config, version: this.#version, decision };
    return decision;
  }
}

/** What the leader judges pod routes by: its Node cache's decision and the heartbeats. */
export interface LeaderPodRoutes {
  /** Why each route is refused, over the leader's Node cache. */
  decided(): PodRouteDecision;
  /** The pod routes other hosts report announced (their heartbeats); absent without them. */
  reported?(): Route[];
}

/**
 * The leader's view of pod routes for one term.
 * @param context what `initialize` hands the provider
 * @param config the configuration in force
 * @param decisions the connected Node cache's decisions, when connected
 * @returns the leader's view
 */
export function leaderPodRoutes(
  context: Pick<ProviderContext, "nodes" | "heartbeats">,
  config: () => Config,
  decisions: () => PodRouteDecisions | undefined,
): LeaderPodRoutes {
  const decided = () =>
    decisions()?.decide(context.nodes) ??
      decidePodRoutes({ config: config(), nodes: context.nodes.list() });
  const heartbeats = context.heartbeats;
  return {
    decided,
    ...(heartbeats
      ? {
        reported: () =>
          reportedRoutes({
            config: config(),
            heartbeats: heartbeats.list(),
            nodes: context.nodes.list(),
            decision: decided(),
          }),
      }
      : {}),
  };
}

/**
 * Routes that answer through this host's BIRD; where BIRD does not run here, from the other
 * hosts' heartbeats alone (while leading); else fail (retriable).
 * @param bird this host's BIRD Routes, once the host side runs one
 * @param leader the leader's view, while leading
 * @returns the Routes capability
 */
export function podRoutes(
  bird: () => Routes | undefined,
  leader: () => LeaderPodRoutes | undefined,
): Routes {
  const get = (): Routes => {
    const routes = bird();
    const leading = leader();
    if (!routes && leading?.reported) return heartbeatRoutes(leading.reported, leading.decided);
    if (!routes) {
      throw new ProviderError(
        "BIRD does not run on this host (not a control-plane machine, or no [bgp] at start-up)",
      );
    }
    return routes;
  };
  return {
    listRoutes: async (cluster) => await get().listRoutes(cluster),
    createRoute: async (cluster, hint, route) => await get().createRoute(cluster, hint, route),
    deleteRoute: async (cluster, route) => await get().deleteRoute(cluster, route),
  };
}

/** Routes judged only from the other hosts' heartbeats (this host renders no BIRD). */
function heartbeatRoutes(reported: () => Route[], decided: () => PodRouteDecision): Routes {
  const has = (route: Route) =>
    reported().some((r) =>
      r.targetNode === route.targetNode && r.destinationCIDR === route.destinationCIDR.toLowerCase()
    );
  const refusal = (route: Route) =>
    decided().refused.find((r) => r.node === route.targetNode && r.cidr === route.destinationCIDR)
      ?.reason;
  return {
    listRoutes: () => Promise.resolve(reported()),
    createRoute: (_cluster, _hint, route) => {
      if (has(route)) return Promise.resolve();
      const why = refusal(route);
      return Promise.reject(
        new ProviderError(
          why
            ? `Not announcing ${route.destinationCIDR} for Node "${route.targetNode}": ${why}`
            : `No host reports ${route.destinationCIDR} of Node "${route.targetNode}" announced ` +
              "to an eligible peer, and BIRD does not run on this host",
        ),
      );
    },
    // every host renders from its own caches: a deleted Node's routes leave them by themselves
    deleteRoute: () => Promise.resolve(),
  };
}
