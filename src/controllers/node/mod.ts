/**
 * The cloud-node controller and its pure decision functions (shared with `keelson plan`).
 *
 * @module
 */
export {
  NodeController,
  type NodeControllerDeps,
  type NodeControllerOptions,
} from "./node_controller.ts";
export { decideNodeSync, type NodeSyncDecision } from "./decide_node_sync.ts";
export { addressUpdate, applyInitialization, type Initialization } from "./initialize_node.ts";
export { hasUninitializedTaint, UNINITIALIZED_TAINT } from "./node_labels.ts";
export {
  applyProvidedNodeIp,
  filterAddressesByNodeIp,
  parseProvidedNodeIp,
  PROVIDED_NODE_IP_ANNOTATION,
} from "./provided_node_ip.ts";
