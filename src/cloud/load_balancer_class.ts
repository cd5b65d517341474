/**
 * Which Services Keelson's service controller (and its load balancer) takes care of. Upstream's
 * controller takes only Services without `spec.loadBalancerClass`; Keelson also takes its own
 * class, and can leave unclassed Services to another implementation.
 *
 * @module
 */
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../config/types.ts";

/**
 * True when the Service's load-balancer class is Keelson's, whatever its type: unset while
 * `[load_balancer] default_class` is true, or equal to `[load_balancer] class`.
 * @param config the validated configuration
 * @param service the Service
 * @returns whether Keelson owns the Service's load balancer, if it has one
 */
export function matchesClass(config: Config, service: V1Service): boolean {
  const cls = service.spec?.loadBalancerClass;
  if (cls === undefined || cls === null || cls === "") return config.load_balancer.default_class;
  return cls === config.load_balancer.class;
}

/** The Service as if its type were LoadBalancer (to ask the class filter after a type change). */
export function asLoadBalancer(service: V1Service): V1Service {
  return { ...service, spec: { ...service.spec, type: "LoadBalancer" } };
}

/**
 * True when the Service is a LoadBalancer Service of Keelson's class.
 * @param config the validated configuration
 * @param service the Service
 * @returns `spec.type == "LoadBalancer"` and `matchesClass`
 */
export function handlesService(config: Config, service: V1Service): boolean {
  return service.spec?.type === "LoadBalancer" && matchesClass(config, service);
}
