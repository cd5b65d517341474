/**
 * The series the alert rules and dashboards read, declared when the agent starts: before the
 * kubeconfig resolves, before any API connection and on hosts that never lead. Without them an
 * agent that cannot reach the apiserver exports nothing a rule could compare, so "no host leads"
 * would evaluate to no result exactly when no host can connect.
 *
 * - `leader_election_master_status{name}` 0 and `leader_election_slowpath_total{name}` 0 (with
 *   leader election on; upstream exports nothing without it);
 * - the `rest_client_*` families (their series come with the first request, as upstream's);
 * - every `workqueue_*` family at zero for each queue of every controller this host would start
 *   when leading (upstream creates them with the queue, i.e. only on the leader);
 * - the out-of-service controller's counters at zero when this host would start it.
 *
 * @module
 */
import type { Registry } from "prom-client";
import type { CloudProvider } from "../cloud/provider.ts";
import type { Config } from "../config/types.ts";
import { declareRestClientMetrics } from "../kube/http_transport.ts";
import { declareElectionMetrics } from "../kube/leader_election.ts";
import { declareQueueMetrics } from "../kube/work_queue.ts";
import { outOfServiceMetrics } from "../controllers/out_of_service/metrics.ts";
import { CONTROLLER_QUEUES, startableControllers } from "./leader_controllers.ts";

/**
 * Declares the start-up series on `registry`.
 * @param registry the process's registry
 * @param config the configuration at start (leader election and controllers are start-only)
 * @param provider the provider's capabilities (which controllers can start)
 */
export function declareStartupMetrics(
  registry: Registry,
  config: Config,
  provider: Pick<CloudProvider, "instancesV2" | "loadBalancer" | "routes" | "power">,
): void {
  declareRestClientMetrics(registry);
  if (config.leader_election.enabled) {
    declareElectionMetrics(registry, config.leader_election.name);
  }
  const controllers = startableControllers(config, provider);
  for (const controller of controllers) {
    for (const queue of CONTROLLER_QUEUES[controller]) declareQueueMetrics(registry, queue);
  }
  if (controllers.has("out-of-service")) outOfServiceMetrics(registry);
}
