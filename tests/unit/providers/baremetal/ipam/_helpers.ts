/** Builders shared by the IPAM tests: Services and pools in a line each. */
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../../../../../src/config/types.ts";
import { testConfig } from "../../../_fakes/test_inventory.ts";
import {
  readServiceRequest,
  type ServiceRequest,
} from "../../../../../providers/baremetal/ipam/service_requests.ts";
import { type AddressPool, buildPools } from "../../../../../providers/baremetal/ipam/pools.ts";

/** What a test Service says, in short. */
export interface SvcSpec {
  /** `namespace/name`; default namespace "default". */
  key: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  loadBalancerIP?: string;
  ipFamilies?: string[];
  policy?: string;
  /** `TCP/80` style. @default ["TCP/80"] */
  ports?: string[];
  etpLocal?: Record<string, string>;
  ingress?: string[];
  loadBalancerClass?: string;
  type?: string;
  created?: string;
}

/** A Service from a short spec. */
export function svc(spec: SvcSpec): V1Service {
  const [namespace, name] = spec.key.includes("/") ? spec.key.split("/") : ["default", spec.key];
  const service: V1Service = {
    metadata: { name, namespace, annotations: spec.annotations ?? {}, uid: `uid-${spec.key}` },
    spec: {
      type: spec.type ?? "LoadBalancer",
      ports: (spec.ports ?? ["TCP/80"]).map((p) => {
        const [protocol, port] = p.split("/");
        return { protocol, port: Number(port) };
      }),
    },
  };
  if (spec.labels) service.metadata!.labels = spec.labels;
  if (spec.created) service.metadata!.creationTimestamp = new Date(spec.created);
  if (spec.loadBalancerIP) service.spec!.loadBalancerIP = spec.loadBalancerIP;
  if (spec.ipFamilies) service.spec!.ipFamilies = spec.ipFamilies;
  if (spec.policy) service.spec!.ipFamilyPolicy = spec.policy;
  if (spec.loadBalancerClass) service.spec!.loadBalancerClass = spec.loadBalancerClass;
  if (spec.etpLocal) {
    service.spec!.externalTrafficPolicy = "Local";
    service.spec!.selector = spec.etpLocal;
  }
  if (spec.ingress) {
    service.status = { loadBalancer: { ingress: spec.ingress.map((ip) => ({ ip })) } };
  }
  return service;
}

/** The parsed request of a short spec; throws when the test built an invalid one. */
export function req(spec: SvcSpec): ServiceRequest {
  const result = readServiceRequest(svc(spec));
  if (!result.ok) throw new Error(`test Service is invalid: ${result.message}`);
  return result.request;
}

/** A pool entry as written in the TOML. */
export interface PoolSpec {
  name: string;
  addresses: string[];
  reserved?: string[];
  "auto_assign"?: boolean;
  namespaces?: string[];
  "service_allocation"?: Record<string, unknown>;
}

/** A validated configuration with these pools. */
export function configWith(pools: PoolSpec[], loadBalancer: Record<string, unknown> = {}): Config {
  return testConfig({ pools, load_balancer: loadBalancer });
}

/** Built pools from short specs. */
export function pools(...specs: PoolSpec[]): AddressPool[] {
  return buildPools(configWith(specs).pools);
}
