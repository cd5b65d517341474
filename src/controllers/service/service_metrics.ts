/**
 * The service controller's metrics, with upstream's names (k8s.io/cloud-provider
 * `controllers/service/metrics.go`) so existing dashboards keep working.
 *
 * @module
 */
import { Counter, Histogram, type Registry } from "prom-client";
import { declareOnce } from "../../metrics/registry.ts";

/** The metrics one ServiceController updates. */
export interface ServiceMetrics {
  /** One per UpdateLoadBalancer attempt by the node sync. */
  loadBalancerSync: Counter;
  /** Seconds a node sync pass took. */
  nodeSyncLatency: Histogram;
  /** Seconds one UpdateLoadBalancer call took. */
  updateHostLatency: Histogram;
  /** Node sync passes that left at least one Service to retry. */
  nodeSyncErrors: Counter;
}

// 1 s × 2^n, 15 buckets, as upstream
const BUCKETS = Array.from({ length: 15 }, (_, n) => 2 ** n);

/**
 * Declares (or reuses, when a new controller starts on the same registry after a leader change)
 * the service controller metrics.
 * @param registry where they are registered
 * @returns the metrics
 */
export function serviceMetrics(registry: Registry): ServiceMetrics {
  return {
    loadBalancerSync: counter(
      registry,
      "service_controller_loadbalancer_sync_total",
      "A metric counting the amount of times any load balancer has been configured, as an effect of service/node changes on the cluster",
    ),
    nodeSyncLatency: histogram(
      registry,
      "service_controller_nodesync_latency_seconds",
      "A metric measuring the latency for nodesync which updates loadbalancer hosts on cluster node updates",
    ),
    updateHostLatency: histogram(
      registry,
      "service_controller_update_loadbalancer_host_latency_seconds",
      "A metric measuring the latency for updating each load balancer hosts",
    ),
    nodeSyncErrors: counter(
      registry,
      "service_controller_nodesync_error_total",
      "A metric counting the amount of times any load balancer has been configured and errored, as an effect of node changes on the cluster",
    ),
  };
}

function counter(registry: Registry, name: string, help: string): Counter {
  return declareOnce(registry, name, () => new Counter({ name, help, registers: [registry] }));
}

function histogram(registry: Registry, name: string, help: string): Histogram {
  return declareOnce(
    registry,
    name,
    () => new Histogram({ name, help, buckets: BUCKETS, registers: [registry] }),
  );
}
