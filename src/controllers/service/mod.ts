/**
 * The service (LoadBalancer) controller: what `src/cli/run.ts` wires up.
 *
 * @module
 */
export {
  PENDING_RETRY_MS,
  SERVICE_CONTROLLER_EVENT_COMPONENT,
  SERVICE_CONTROLLER_NAME,
  ServiceController,
  type ServiceControllerDeps,
  type ServiceControllerOptions,
} from "./service_controller.ts";
export { handlesService, matchesClass } from "./handles_service.ts";
export { type EndpointLocator, LOCAL_TRAFFIC_DROPPED_REASON } from "./local_traffic.ts";
export { LOAD_BALANCER_CLEANUP_FINALIZER } from "./finalizer.ts";
