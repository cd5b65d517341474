/**
 * The Routes part of the provider contract over BIRD. Every control-plane host renders the pod
 * routes of all Nodes from its own caches; this side answers the route controller (leader) from
 * this host's BIRD: a route "exists" once BIRD accepted a file holding it (`configure` replied
 * 0003/0004/0005) and a session to a peer that receives it is Established; or once another
 * host's heartbeat reports it so (per-rack peers the leader does not talk to). `createRoute` renders
 * and waits for that, bounded; `deleteRoute` renders (a deleted Node's routes leave the caches).
 * After a reload removed `[bgp]`, or turned `pod_cidrs` off on every peer, listing and creating fail,
 * so no Node is judged (`notJudgedError`): the route controller runs until the restart.
 *
 * @module
 */
import type { Route, Routes } from "../../../src/cloud/provider.ts";
import { ProviderError } from "../../../src/cloud/provider.ts";
import { formatIp } from "../../../src/net/ip.ts";
import { delay } from "../../../src/kube/delay.ts";
import { type BirdModel, parsePrefix } from "./model.ts";
import type { Config } from "../../../src/config/types.ts";

/** What `BirdRoutes` reads. */
export interface BirdRoutesDeps {
  announcer: {
    readonly configuredModel: BirdModel | undefined;
    /** The model of the last render (its pod-route decision names the refused routes). */
    readonly model?: BirdModel | undefined;
    /** A reload removed `[bgp]`: this host announces nothing (`announcer.ts`). @default false */
    readonly bgpRemoved?: boolean;
    sync(reason: string): Promise<unknown>;
  };
  sessions: { established(peer: string): boolean; poll(): Promise<void> };
  /**
   * The routes other hosts report announced (their heartbeats, `reported_routes.ts`), so a Node
   * whose rack's peers this host does not talk to is judged too. @default none
   */
  reported?: () => Route[];
  /** How long `createRoute` waits for BIRD and a session. @default 5000 */
  waitMs?: number;
  /**
   * The configuration in force: pod CIDRs are routed only while some `[[bgp.peers]]` entry has
   * `pod_cidrs = true`.
   */
  config: () => Pick<Config, "cluster" | "bgp">;
}

/** Upstream `Routes` backed by this host's BIRD. */
export class BirdRoutes implements Routes {
  #deps: BirdRoutesDeps;

  /** @param deps the announcer and the session monitor */
  constructor(deps: BirdRoutesDeps) {
    this.#deps = deps;
  }

  /**
   * Routes this host's BIRD accepted and announces over at least one Established session, and
   * those other hosts report announced to a peer eligible for the Node.
   */
  listRoutes(_clusterName: string): Promise<Route[]> {
    const why = this.#notJudged();
    if (why) return Promise.reject(why);
    return Promise.resolve(this.#routes());
  }

  /** Why no Node may be judged now, if so: this host announces no pod route until a restart. */
  #notJudged(): ProviderError | undefined {
    if (this.#deps.announcer.bgpRemoved) return notJudgedError(BGP_REMOVED);
    const bgp = this.#deps.config().bgp;
    if (bgp && !bgp.peers.some((p) => p.pod_cidrs)) return notJudgedError(POD_CIDRS_OFF);
    return undefined;
  }

  #routes(): Route[] {
    const local = announcedRoutes(this.#deps.announcer.configuredModel, this.#deps.sessions);
    const names = new Set(local.map((r) => r.name));
    return [...local, ...(this.#deps.reported?.() ?? []).filter((r) => !names.has(r.name))];
  }

  /**
   * Renders and waits until the route is announced.
   * @throws {ProviderError} when BIRD has not announced it within the wait, saying why
   */
  async createRoute(_clusterName: string, _nameHint: string, route: Route): Promise<void> {
    const why = this.#notJudged();
    if (why) throw why;
    await this.#deps.announcer.sync(`route for ${route.targetNode}`);
    // refused by decidePodRoutes (the render just made): say why at once instead of waiting
    const refused = refusalOf(this.#deps.announcer.model, route);
    if (refused) {
      throw new ProviderError(
        `Not announcing ${route.destinationCIDR} for Node "${route.targetNode}": ${refused}`,
      );
    }
    const deadline = Date.now() + (this.#deps.waitMs ?? 5000);
    while (true) {
      await this.#deps.sessions.poll();
      const model = this.#deps.announcer.configuredModel;
      if (this.#routes().some((r) => sameRoute(r, route))) return;
      if (Date.now() >= deadline) {
        throw new ProviderError(
          `BIRD does not announce ${route.destinationCIDR} for Node "${route.targetNode}": ` +
            whyNot(model, route, this.#deps.sessions) +
            (this.#deps.reported
              ? "; and no host reports it announced to an eligible peer (heartbeats)"
              : ""),
        );
      }
      await delay(200);
    }
  }

  /** Renders; the route is gone once its Node or CIDR left the caches. */
  async deleteRoute(_clusterName: string, route: Route): Promise<void> {
    await this.#deps.announcer.sync(`route of ${route.targetNode} deleted`);
  }
}

const BGP_REMOVED = "[bgp] was removed from the configuration at a reload: this host's BIRD";
const POD_CIDRS_OFF = "no [[bgp.peers]] entry has pod_cidrs = true since a reload: BIRD";

/**
 * While a reload has removed `[bgp]` or turned `pod_cidrs` off on every peer, the route controller
 * (read only at start) still runs but no host announces a pod route. Failing every pass keeps it
 * from judging Nodes: it would otherwise set `NetworkUnavailable=True` on all of them (a taint),
 * which nothing clears once a restart stops the route controller, also where a CNI took over the
 * routing.
 * @param what the cause, ending in the subject of "announces no pod routes"
 */
function notJudgedError(what: string): ProviderError {
  return new ProviderError(
    `${what} announces no pod routes, and Node conditions are left as they are; restart ` +
      "keelson to stop the route controller, or bring the setting back",
  );
}

/** Why the model's pod-route decision refused `route`, if it did. */
function refusalOf(model: BirdModel | undefined, route: Route): string | undefined {
  const cidr = canonical(route.destinationCIDR);
  return model?.podRoutes?.refused.find((r) =>
    r.node === route.targetNode && (r.cidr === route.destinationCIDR || canonical(r.cidr) === cidr)
  )?.reason;
}

function sameRoute(a: Route, b: Route): boolean {
  return a.targetNode === b.targetNode && a.destinationCIDR === canonical(b.destinationCIDR);
}

function canonical(cidr: string): string {
  const prefix = parsePrefix(cidr);
  return prefix ? `${formatIp(prefix.family, prefix.value)}/${prefix.length}` : cidr;
}

/**
 * The pod routes of a model exported to at least one Established peer.
 * @param model the model BIRD accepted (undefined: nothing yet)
 * @param sessions the session states
 */
export function announcedRoutes(
  model: BirdModel | undefined,
  sessions: { established(peer: string): boolean },
): Route[] {
  if (!model) return [];
  const live = new Set<string>();
  for (const peer of model.peers) {
    if (!sessions.established(peer.label)) continue;
    for (const e of peer.exports) live.add(e);
  }
  const routes: Route[] = [];
  for (const protocol of model.statics) {
    if (protocol.kind !== "pod" || !live.has(protocol.name)) continue;
    for (const r of protocol.routes) {
      const cidr = `${formatIp(r.prefix.family, r.prefix.value)}/${r.prefix.length}`;
      routes.push({
        name: `${r.node ?? ""}/${cidr}`,
        targetNode: r.node ?? "",
        destinationCIDR: cidr,
      });
    }
  }
  return routes;
}

function whyNot(
  model: BirdModel | undefined,
  route: Route,
  sessions: { established(peer: string): boolean },
): string {
  if (!model) return "BIRD has not accepted any configuration from Keelson yet";
  const protocol = model.statics.find((s) =>
    s.kind === "pod" &&
    s.routes.some((r) => r.node === route.targetNode)
  );
  if (!protocol) {
    return "no route for it in the configuration (no [[bgp.peers]] entry with pod_cidrs = true " +
      "peers with this host, or the Nodes were not read yet)";
  }
  const peers = model.peers.filter((p) => p.exports.includes(protocol.name));
  if (peers.length === 0) {
    return "no [[bgp.peers]] entry with pod_cidrs = true has a subnet holding the Node's IP";
  }
  const down = peers.filter((p) => !sessions.established(p.label));
  return `no Established session to ${down.map((p) => `"${p.label}"`).join(", ")}`;
}
