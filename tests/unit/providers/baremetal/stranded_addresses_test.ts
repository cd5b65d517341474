import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { parseConfig } from "../../../../src/config/parse_config.ts";
import { strandedAddressIssues } from "../../../../providers/baremetal/stranded_addresses.ts";

function service(name: string, ip: string): V1Service {
  return {
    metadata: { name, namespace: "default" },
    spec: { type: "LoadBalancer" },
    status: { loadBalancer: { ingress: [{ ip }] } },
  };
}

function config(pool: string, reserved: string[] = []): ReturnType<typeof parseConfig> {
  return parseConfig(
    `[keepalived]\nenabled = false\n[[pools]]\nname = "lan"\naddresses = ["${pool}"]\n` +
      `reserved = ${JSON.stringify(reserved)}\n[[machines]]\nname = "w-1"\n`,
    "k.toml",
  );
}

Deno.test("strandedAddressIssues() refuses a pool shrink that strands in-use addresses, naming the Services", () => {
  const services = [
    service("web", "192.0.2.2"),
    service("db", "192.0.2.9"),
    service("evil", "224.0.0.18"), // never served: not stranded by any reload
  ];
  const current = config("192.0.2.0/28");
  const issues = strandedAddressIssues(current, config("192.0.2.0/29"), services, "k.toml");
  assert.equal(issues.length, 1);
  assert.equal(issues[0]!.path, "pools");
  assert.match(issues[0]!.message, /strand 1 address .*192\.0\.2\.9 \(service "default\/db"\)/);
  // reserving an address in use strands it too
  const reserved = strandedAddressIssues(
    current,
    config("192.0.2.0/28", ["192.0.2.2"]),
    services,
    "k.toml",
  );
  assert.match(reserved[0]!.message, /192\.0\.2\.2 \(service "default\/web"\)/);
  // growing the pool, or no synced cache yet, is fine
  assert.deepEqual(strandedAddressIssues(current, config("192.0.2.0/27"), services, "k.toml"), []);
  assert.deepEqual(strandedAddressIssues(current, config("192.0.2.0/29"), undefined, "k.toml"), []);
});

Deno.test("strandedAddressIssues(): moving a pool between VRRP and BGP strands nothing; dropping a BGP pool does", () => {
  const services = [service("web", "192.0.2.2")];
  const withPool = (announce: string, pool = "192.0.2.0/28") =>
    parseConfig(
      `[keepalived]\nenabled = false\n[bgp]\nasn = 64513\n` +
        `[[bgp.peers]]\nname = "tor"\naddress = "10.0.0.1"\nasn = 64512\n` +
        `[[pools]]\nname = "lan"\naddresses = ["${pool}"]\nannounce = "${announce}"\n` +
        `[[machines]]\nname = "cp-1"\nrole = "control-plane"\ninternal_ips = ["10.0.0.11"]\n`,
      "k.toml",
    );
  assert.deepEqual(strandedAddressIssues(withPool("vrrp"), withPool("bgp"), services, "k"), []);
  assert.deepEqual(strandedAddressIssues(withPool("bgp"), withPool("vrrp"), services, "k"), []);
  const shrunk = strandedAddressIssues(
    withPool("bgp"),
    withPool("bgp", "192.0.2.8/29"),
    services,
    "k",
  );
  assert.match(shrunk[0]!.message, /192\.0\.2\.2 \(service "default\/web"\)/);
});
