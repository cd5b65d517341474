/**
 * The node-lifecycle controller, its pure decision function (shared with `keelson plan`) and the
 * deletion guards.
 *
 * @module
 */
export {
  type DeletionResult,
  NodeLifecycleController,
  type NodeLifecycleDeps,
  type NodeLifecycleOptions,
  type NodeLifecyclePolicy,
  policyFromConfig,
} from "./node_lifecycle_controller.ts";
export {
  decideLifecycle,
  type LifecycleDecision,
  MAINTENANCE_TAINT,
  readyStatus,
  RETIRED_TAINT,
  SHUTDOWN_TAINT,
} from "./decide_lifecycle.ts";
export {
  type DeletionGuard,
  DeletionRateLimiter,
  ReloadDeletionGuard,
  removedFractionBlock,
} from "./deletion_guards.ts";
