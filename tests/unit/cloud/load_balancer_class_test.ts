import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { handlesService, matchesClass } from "../../../src/cloud/load_balancer_class.ts";
import { testConfig } from "../_fakes/test_inventory.ts";

function service(type: string, loadBalancerClass?: string): V1Service {
  return {
    metadata: { name: "s", namespace: "d" },
    spec: { type, ...(loadBalancerClass && { loadBalancerClass }) },
  };
}

Deno.test("handlesService() takes LoadBalancer Services without a class or of the configured class", () => {
  const config = testConfig({});
  assert.equal(handlesService(config, service("LoadBalancer")), true);
  assert.equal(handlesService(config, service("LoadBalancer", "keelson.io/vip")), true);
  assert.equal(handlesService(config, service("LoadBalancer", "metallb.io/x")), false);
  assert.equal(handlesService(config, service("ClusterIP")), false);
  assert.equal(matchesClass(config, service("ClusterIP")), true);
});

Deno.test("handlesService() leaves unclassed Services alone when default_class is false", () => {
  const config = testConfig({ load_balancer: { default_class: false, class: "example.com/lb" } });
  assert.equal(handlesService(config, service("LoadBalancer")), false);
  assert.equal(handlesService(config, service("LoadBalancer", "example.com/lb")), true);
  assert.equal(handlesService(config, service("LoadBalancer", "keelson.io/vip")), false);
});
