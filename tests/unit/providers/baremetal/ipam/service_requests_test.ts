import assert from "node:assert/strict";
import { readServiceRequest } from "../../../../../providers/baremetal/ipam/service_requests.ts";
import { svc, type SvcSpec } from "./_helpers.ts";

function read(spec: SvcSpec) {
  return readServiceRequest(svc(spec));
}

function invalid(spec: SvcSpec): string {
  const result = read(spec);
  assert.equal(result.ok, false, JSON.stringify(spec));
  return result.ok ? "" : result.message;
}

Deno.test("readServiceRequest() reads addresses, pool, sharing key, families and ports", () => {
  const result = read({
    key: "shop/web",
    annotations: {
      "keelson.io/load-balancer-ips": " 10.0.0.5 , 2001:0db8::0005 ",
      "metallb.io/address-pool": "public",
      "metallb.universe.tf/allow-shared-ip": "web",
    },
    ipFamilies: ["IPv6", "IPv4"],
    policy: "RequireDualStack",
    ports: ["TCP/80", "UDP/53"],
    etpLocal: { tier: "web", app: "shop" },
  });
  assert.ok(result.ok);
  const r = result.request;
  assert.equal(r.serviceKey, "shop/web");
  assert.equal(r.namespace, "shop");
  assert.deepEqual(r.ips.map((ip) => ip.text), ["10.0.0.5", "2001:db8::5"]);
  assert.equal(r.ipsSource, 'annotation "keelson.io/load-balancer-ips"');
  assert.equal(r.pool, "public");
  assert.deepEqual(r.families, [6, 4]);
  assert.equal(r.policy, "RequireDualStack");
  assert.deepEqual(r.sharing, {
    key: "web",
    ports: ["TCP/80", "UDP/53"],
    backendKey: "app=shop,tier=web",
  });
});

Deno.test("readServiceRequest() defaults to SingleStack, IPv4 then IPv6, and no request", () => {
  const result = read({ key: "web", ports: [] });
  assert.ok(result.ok);
  assert.deepEqual(result.request.ips, []);
  assert.equal(result.request.pool, undefined);
  assert.equal(result.request.sharing.key, undefined);
  assert.deepEqual(result.request.families, [4, 6]);
  assert.equal(result.request.policy, "SingleStack");
  const v6 = read({ key: "web", loadBalancerIP: "2001:db8::1" });
  assert.ok(v6.ok);
  assert.deepEqual(v6.request.families, [6, 4]);
});

Deno.test("readServiceRequest() accepts agreeing sources and refuses conflicting ones", () => {
  const agree = read({
    key: "web",
    loadBalancerIP: "10.0.0.1",
    annotations: {
      "metallb.io/loadBalancerIPs": "10.0.0.1",
      "kube-vip.io/loadbalancerIPs": "10.0.0.1",
    },
  });
  assert.ok(agree.ok);
  assert.equal(agree.request.ipsSource, 'annotation "metallb.io/loadBalancerIPs"');
  assert.equal(
    invalid({
      key: "web",
      loadBalancerIP: "10.0.0.2",
      annotations: { "keelson.io/load-balancer-ips": "10.0.0.1" },
    }),
    'Cannot allocate an address for service "default/web": annotation ' +
      '"keelson.io/load-balancer-ips" asks for "10.0.0.1" but spec.loadBalancerIP asks for ' +
      '"10.0.0.2"; remove one of them or make them agree',
  );
  assert.match(
    invalid({
      key: "web",
      annotations: { "keelson.io/address-pool": "a", "metallb.io/address-pool": "b" },
    }),
    /annotation "keelson.io\/address-pool" is "a" but annotation "metallb.io\/address-pool" is "b"/,
  );
  assert.match(
    invalid({
      key: "web",
      annotations: {
        "metallb.io/allow-shared-ip": "a",
        "metallb.universe.tf/allow-shared-ip": "b",
      },
    }),
    /"metallb.io\/allow-shared-ip" is "a"/,
  );
});

Deno.test("readServiceRequest() turns malformed values into InvalidRequest without throwing", () => {
  const cases: [SvcSpec, RegExp][] = [
    [
      { key: "a", loadBalancerIP: "10.0.0.300" },
      /spec.loadBalancerIP holds "10.0.0.300", which is not an IP address/,
    ],
    [
      { key: "a", annotations: { "metallb.io/loadBalancerIPs": "10.0.0.1,10.0.0.2" } },
      /at most one IPv4 and one IPv6/,
    ],
    [
      { key: "a", annotations: { "metallb.io/loadBalancerIPs": "10.0.0.1,10.0.0.01" } },
      /not an IP address|twice/,
    ],
    [
      { key: "a", annotations: { "keelson.io/load-balancer-ips": "::1,0:0::1" } },
      /names "::1" twice/,
    ],
    [{ key: "a", policy: "Sometimes" }, /spec.ipFamilyPolicy is "Sometimes"; allowed: SingleStack/],
    [{ key: "a", ipFamilies: ["IPv5"] }, /spec.ipFamilies holds "IPv5"; allowed: IPv4, IPv6/],
    [
      { key: "a", ipFamilies: ["IPv4"], loadBalancerIP: "2001:db8::1" },
      /asks for IPv6 address "2001:db8::1" but spec.ipFamilies is \[IPv4\]/,
    ],
    [
      { key: "a", annotations: { "keelson.io/load-balancer-ips": "10.0.0.1,::1" } },
      /but spec.ipFamilyPolicy is SingleStack/,
    ],
    [
      { key: "a", policy: "RequireDualStack", loadBalancerIP: "10.0.0.1" },
      /asks for only "10.0.0.1" but spec.ipFamilyPolicy is RequireDualStack/,
    ],
    [{ key: "a", ports: ["TCP/0"] }, /spec.ports holds port "0"; allowed: 1-65535/],
  ];
  for (const [spec, expected] of cases) {
    const result = read(spec);
    assert.equal(result.ok, false, JSON.stringify(spec));
    if (!result.ok) {
      assert.equal(result.reason, "InvalidRequest");
      assert.match(result.message, expected);
    }
  }
});
