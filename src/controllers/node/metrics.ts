/**
 * The cloud-node controller's metrics, under their upstream names.
 *
 * @module
 */
import { Histogram, type Registry } from "prom-client";
import { declareOnce } from "../../metrics/registry.ts";

/** Upstream's buckets: exponential from 1 s, factor 4, 6 buckets. */
export const NODE_SYNC_BUCKETS: number[] = [1, 4, 16, 64, 256, 1024];

/** The controller's histograms. */
export interface NodeControllerMetrics {
  /** Seconds from Node creation to the removal of the uninitialized taint. */
  taintRemovalDelay: Histogram;
  /** Seconds from Node creation to the end of its first successful sync. */
  initialSyncDelay: Histogram;
}

/**
 * Declares the metrics on `registry`.
 * @param registry the process's registry
 * @returns the histograms
 */
export function nodeControllerMetrics(registry: Registry): NodeControllerMetrics {
  return {
    taintRemovalDelay: declareOnce(
      registry,
      "node_controller_cloud_provider_taint_removal_delay_seconds",
      () =>
        new Histogram({
          name: "node_controller_cloud_provider_taint_removal_delay_seconds",
          help: "Number of seconds after node creation when the cloud provider taint was removed.",
          buckets: NODE_SYNC_BUCKETS,
          registers: [registry],
        }),
    ),
    initialSyncDelay: declareOnce(
      registry,
      "node_controller_initial_node_sync_delay_seconds",
      () =>
        new Histogram({
          name: "node_controller_initial_node_sync_delay_seconds",
          help:
            "Number of seconds after node creation when the node controller finished its initial sync.",
          buckets: NODE_SYNC_BUCKETS,
          registers: [registry],
        }),
    ),
  };
}
