/**
 * The route controller (upstream `node-route-controller`): every Node's `spec.podCIDRs` gets a
 * route through the provider's Routes, routes of Nodes that are gone are deleted, and each Node
 * with pod CIDRs gets the `NetworkUnavailable` condition: `False`/`RouteCreated` once all its
 * routes exist, `True`/`NoRouteCreated` otherwise (a failed create also records
 * `FailedToCreateRoute` on the Node). Runs on the leader: a full reconcile every period
 * (`--route-reconciliation-period`, upstream 10 s) and shortly after any Node change, as
 * upstream's watch-based gate does.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import { Counter, type Registry } from "prom-client";
import { declareOnce } from "../../metrics/registry.ts";
import type { Route, Routes } from "../../cloud/provider.ts";
import type { ClusterWriter, EventRecorder, Informer } from "../../kube/ports.ts";
import { delay } from "../../kube/delay.ts";
import { logger } from "../../log/logging.ts";
import { errorMessage } from "../../log/error_message.ts";

/** The Node condition this controller owns. */
export const NETWORK_UNAVAILABLE = "NetworkUnavailable";
/** Event component, as upstream. */
export const ROUTE_CONTROLLER_EVENT_COMPONENT = "route_controller";

/** What the controller reads and writes. */
export interface RouteControllerDeps {
  nodes: Informer<V1Node>;
  routes: Routes;
  writer: Pick<ClusterWriter, "patchNodeStatus">;
  events: EventRecorder;
  registry: Registry;
}

/** Options of `RouteController`. */
export interface RouteControllerOptions {
  clusterName: string;
  /** Full reconcile period. @default 10000 */
  periodMs?: number;
  /** Delay after a Node change before reconciling (bursts share one). @default 200 */
  debounceMs?: number;
}

/** The route controller. */
export class RouteController {
  #deps: RouteControllerDeps;
  #options: RouteControllerOptions;
  #log = logger("controllers", "route");
  /** The last failure logged, so a repeated one is said once. */
  #lastError = "";
  #syncs: Counter<"result">;
  #kick: (() => void) | undefined;
  #kicked = false;

  /** @param deps Node informer, Routes, writer, events, registry */
  constructor(deps: RouteControllerDeps, options: RouteControllerOptions) {
    this.#deps = deps;
    this.#options = options;
    this.#syncs = declareOnce(
      deps.registry,
      "route_controller_route_sync_total",
      () =>
        new Counter({
          name: "route_controller_route_sync_total",
          help: "Route reconciles of the route controller, by result.",
          labelNames: ["result"],
          registers: [deps.registry],
        }),
    );
  }

  /**
   * Runs until `signal` aborts.
   * @param signal stops the loop
   */
  async run(signal: AbortSignal): Promise<void> {
    const off = this.#deps.nodes.subscribe((event) => {
      if (event.type === "delete" || relevantChange(event.old, event.object)) this.#wake();
    });
    try {
      if (!await this.#deps.nodes.waitForSync(signal)) return;
      while (!signal.aborted) {
        this.#kicked = false;
        try {
          await this.reconcile();
          this.#syncs.inc({ result: "success" });
          this.#lastError = "";
        } catch (error) {
          this.#syncs.inc({ result: "error" });
          // the same cause every pass (e.g. [bgp] removed until a restart) is said once; the
          // counter keeps counting every failed pass
          const message = String(error);
          if (message !== this.#lastError) {
            this.#log.error("Route reconcile failed: {error}", { error: message });
          } else {
            this.#log.debug("Route reconcile failed again: {error}", { error: message });
          }
          this.#lastError = message;
        }
        if (this.#kicked) {
          await delay(this.#options.debounceMs ?? 200, signal);
          continue;
        }
        await new Promise<void>((resolve) => {
          const wake = () => {
            clearTimeout(timer);
            signal.removeEventListener("abort", wake);
            this.#kick = undefined;
            resolve();
          };
          const timer = setTimeout(wake, this.#options.periodMs ?? 10_000);
          signal.addEventListener("abort", wake, { once: true });
          this.#kick = () => setTimeout(wake, this.#options.debounceMs ?? 200);
        });
      }
    } finally {
      off();
    }
  }

  #wake(): void {
    this.#kicked = true;
    const kick = this.#kick;
    this.#kick = undefined;
    kick?.();
  }

  /** One full pass: create missing routes, delete orphans, write conditions. */
  async reconcile(): Promise<void> {
    const cluster = this.#options.clusterName;
    const existing = await this.#deps.routes.listRoutes(cluster);
    const nodes = this.#deps.nodes.list().filter((n) => !n.metadata?.deletionTimestamp);
    const wanted = new Map<string, { node: V1Node; cidrs: string[] }>();
    for (const node of nodes) {
      const name = node.metadata?.name;
      const cidrs = node.spec?.podCIDRs ?? (node.spec?.podCIDR ? [node.spec.podCIDR] : []);
      if (name && cidrs.length > 0) wanted.set(name, { node, cidrs });
    }
    const has = (node: string, cidr: string) =>
      existing.some((r) => r.targetNode === node && r.destinationCIDR === cidr.toLowerCase());

    // delete pass: routes whose Node is gone or no longer holds the CIDR
    await Promise.all(
      existing.filter((r) =>
        !wanted.get(r.targetNode)?.cidrs.some((c) => c.toLowerCase() === r.destinationCIDR)
      ).map((r) =>
        this.#deps.routes.deleteRoute(cluster, r).catch((error) =>
          this.#log.warn("Could not delete route {cidr} of {node}: {error}", {
            cidr: r.destinationCIDR,
            node: r.targetNode,
            error: String(error),
          })
        )
      ),
    );

    // create pass, concurrently; a failure is an Event and a NoRouteCreated condition
    const outcomes = await Promise.all(
      [...wanted.entries()].map(async ([name, { node, cidrs }]) => {
        let created = true;
        for (const cidr of cidrs) {
          if (has(name, cidr)) continue;
          const route: Route = { name: "", targetNode: name, destinationCIDR: cidr };
          try {
            await this.#deps.routes.createRoute(cluster, node.metadata?.uid ?? name, route);
          } catch (error) {
            created = false;
            const message = errorMessage(error);
            this.#deps.events.event(
              { kind: "Node", apiVersion: "v1", metadata: { name, uid: node.metadata?.uid } },
              "Warning",
              "FailedToCreateRoute",
              `Could not create route ${cidr} for node ${name}: ${message}`,
            );
          }
        }
        return { node, created };
      }),
    );
    for (const { node, created } of outcomes) await this.#setCondition(node, created);
  }

  async #setCondition(node: V1Node, created: boolean): Promise<void> {
    const name = node.metadata!.name!;
    const status = created ? "False" : "True";
    const reason = created ? "RouteCreated" : "NoRouteCreated";
    const current = node.status?.conditions?.find((c) => c.type === NETWORK_UNAVAILABLE);
    if (current?.status === status && current.reason === reason) return;
    const now = new Date().toISOString();
    // upstream: a one-element conditions list (merge key "type"), both times set to now
    const condition = {
      type: NETWORK_UNAVAILABLE,
      status,
      reason,
      message: created
        ? "RouteController created a route"
        : "RouteController failed to create a route",
      lastTransitionTime: now,
      lastHeartbeatTime: now,
    };
    try {
      await this.#deps.writer.patchNodeStatus(
        name,
        { status: { conditions: [condition] } },
        "strategic",
      );
      this.#log.info("Node {node}: {type}={status} ({reason})", {
        node: name,
        type: NETWORK_UNAVAILABLE,
        status,
        reason,
      });
    } catch (error) {
      this.#log.warn("Could not set {type} on Node {node}: {error}", {
        type: NETWORK_UNAVAILABLE,
        node: name,
        error: String(error),
      });
    }
  }
}

function relevantChange(old: V1Node | undefined, node: V1Node): boolean {
  if (!old) return true;
  const key = (n: V1Node) =>
    JSON.stringify([
      n.spec?.podCIDRs ?? n.spec?.podCIDR,
      n.status?.addresses,
      n.status?.conditions?.find((c) => c.type === NETWORK_UNAVAILABLE)?.status,
    ]);
  return key(old) !== key(node);
}
