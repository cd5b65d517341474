import assert from "node:assert/strict";
import { clusterCidrRanges, insideClusterCidr } from "../../../src/config/cluster_cidr.ts";
import { ConfigError } from "../../../src/config/config_error.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { issues } from "./_issues.ts";
import { parseRunFlags } from "../../../src/cli/run_flags.ts";
import { validateConfig } from "../../../src/config/parse_config.ts";

const BASE = await Deno.readTextFile(new URL("./bgp/base.toml", import.meta.url));
const CLUSTER = '[cluster]\ncluster_cidr = ["10.244.0.0/16", "fd00:244::/32"]\n';

function withCluster(cluster: string): string {
  assert.ok(BASE.includes(CLUSTER));
  return BASE.replace(CLUSTER, cluster);
}

Deno.test("a pod_cidrs peer needs [cluster] cluster_cidr, named at the peer's line", () => {
  const text = withCluster("");
  const found = issues(text);
  assert.equal(found.length, 1, JSON.stringify(found));
  assert.equal(found[0]!.path, "bgp.peers[0].pod_cidrs");
  assert.equal(found[0]!.line, text.split("\n").indexOf("pod_cidrs = true") + 1);
  assert.match(found[0]!.message, /peer "tor-a" receives pod CIDRs.*set \[cluster\] cluster_cidr/);
});

Deno.test("cluster_cidr entries: CIDRs only, one per family, clear of pools and the control-plane VIP", () => {
  const cases: Array<[string, string, RegExp]> = [
    ['["10.244.0.0-10.244.0.9"]', "cluster.cluster_cidr[0]", /is not a CIDR/],
    ['["10.244.0.1/16"]', "cluster.cluster_cidr[0]", /host bits are set/],
    ['["10.244.0.0/16", "10.245.0.0/16"]', "cluster.cluster_cidr[1]", /a second IPv4 CIDR/],
    ['["198.51.100.0/24"]', "cluster.cluster_cidr[0]", /overlaps pool "bgp-public"/],
    ['["10.0.0.0/8"]', "cluster.cluster_cidr[0]", /holds the control-plane VIP 10\.0\.0\.10/],
    ['["10.244.0.0/16", "fd00::/64", "10.1.0.0/16"]', "cluster.cluster_cidr", /at most two/],
  ];
  for (const [value, path, message] of cases) {
    const found = issues(withCluster(`[cluster]\ncluster_cidr = ${value}\n`));
    const hit = found.find((i) => i.path === path);
    assert.ok(hit, `${value}: ${JSON.stringify(found)}`);
    assert.match(hit.message, message, value);
    assert.equal(typeof hit.line, "number", `${value}: a line`);
  }
});

Deno.test("--cluster-cidr overrides the file and passes the same checks", () => {
  const config = parseConfig(BASE, "keelson.toml");
  const flags = parseRunFlags(["--cluster-cidr", "10.250.0.0/16, fd00:250::/48"], () => undefined);
  assert.deepEqual(flags.apply(config).cluster.cluster_cidr, ["10.250.0.0/16", "fd00:250::/48"]);
  const bad = parseRunFlags(["--cluster-cidr", "0.0.0.0/0"], () => undefined);
  assert.throws(
    () => validateConfig(bad.apply(config), "keelson.toml with the command-line flags"),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.issues.some((i) =>
        i.path === "cluster.cluster_cidr[0]" && /overlaps pool/.test(i.message)
      ),
  );
});

Deno.test("insideClusterCidr(): the whole pod CIDR inside one range of its family", () => {
  const ranges = clusterCidrRanges({
    cluster: { name: "k", provider: "baremetal", cluster_cidr: ["10.244.0.0/16", "fd00:244::/32"] },
  });
  const inside = ["10.244.1.0/24", "10.244.0.0/16", "10.244.255.128/25", "fd00:244:1::/64"];
  const outside = [
    "10.244.0.0/15",
    "0.0.0.0/0",
    "10.245.0.0/24",
    "fd00:245::/64",
    "10.244.1.1/24",
    "10.244.1.0",
    "10.244.1.0-10.244.1.9",
    "not a cidr",
    "",
  ];
  for (const cidr of inside) assert.equal(insideClusterCidr(ranges, cidr), true, cidr);
  for (const cidr of outside) assert.equal(insideClusterCidr(ranges, cidr), false, cidr);
  assert.equal(insideClusterCidr([], "10.244.1.0/24"), false, "no range: nothing is inside");
});
