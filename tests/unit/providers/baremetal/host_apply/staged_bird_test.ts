import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { stagedBirdProblem } from "../../../../../providers/baremetal/host_apply/staged_bird.ts";
import {
  birdHostFile,
  renderHostBird,
} from "../../../../../providers/baremetal/bird/host_config.ts";
import { bgpConfig } from "../bird/_inventory.ts";

const VIPS = ["198.51.100.1", "198.51.100.3", "2001:db8:100::5"];
function node(name: string, cidrs: string[], ips: string[]): V1Node {
  return {
    metadata: { name },
    spec: { podCIDRs: cidrs },
    status: { addresses: ips.map((address) => ({ type: "InternalIP", address })) },
  };
}
const NODES = [
  node("w-1", ["10.244.1.0/24", "fd00:244:1::/64"], ["10.0.0.21", "fd00::21"]),
  node("far", ["10.244.2.0/24"], ["10.0.7.21"]),
  node("w-b", ["10.244.3.0/24"], ["10.0.1.21"]),
];
const PASSWORD_FILE = "/etc/keelson/tor-a.key";
const withPassword = (t: string) =>
  t.replace("bfd = true\n", `bfd = true\npassword_file = "${PASSWORD_FILE}"\n`)
    .replace("multihop = 2\n", "multihop = 2\npod_cidrs = true\n");
const PASSWORDS = new Map([[PASSWORD_FILE, "S3cr3t-key"]]);

async function rendered(host: string, healthy = true, vips = VIPS, nodes = NODES): Promise<string> {
  const config = await bgpConfig(withPassword);
  const out = renderHostBird({
    config,
    host,
    serviceVips: vips,
    nodes,
    controlPlaneHealthy: healthy,
    passwords: PASSWORDS,
  });
  if ("error" in out) throw new Error(out.error);
  return out.text;
}

async function judge(text: string, host = "cp-1"): Promise<string | undefined> {
  return stagedBirdProblem(text, {
    config: await bgpConfig(withPassword),
    host,
    passwords: PASSWORDS,
  });
}

Deno.test("Keelson's own renderings are accepted: every host, with and without VIPs, pod routes, control-plane route", async () => {
  for (const host of ["cp-1", "cp-2", "cp-3"]) {
    for (const healthy of [true, false]) {
      for (const vips of [[], VIPS]) {
        for (const nodes of [[], NODES]) {
          const text = await rendered(host, healthy, vips, nodes);
          assert.equal(await judge(text, host), undefined, text);
        }
      }
    }
  }
});

Deno.test("a draining or unready host's rendering (birdHostFile's gating) is accepted", async () => {
  const config = await bgpConfig(withPassword);
  for (const gate of [{ draining: true }, { nodeReady: false }]) {
    const out = birdHostFile({
      config,
      host: "cp-1",
      fileVips: VIPS,
      nodes: NODES,
      nodeReady: true,
      controlPlaneHealthy: true,
      passwords: PASSWORDS,
      ...gate,
    });
    if ("error" in out) throw new Error(out.error);
    assert.equal(await judge(out.text), undefined);
  }
});

/** What keelson's account might write instead: reach root's files, or export what it likes. */
const HOSTILE: [string, (text: string) => string][] = [
  ["an include of a root-only file", (t) => t + 'include "/etc/shadow";\n'],
  ["an include at the top", (t) => 'include "/root/secret.conf";\n' + t],
  [
    "a kernel export of a default route",
    (t) =>
      t +
      "\nprotocol kernel {\n  ipv4 { export all; };\n}\n\nprotocol static {\n  ipv4;\n  route 0.0.0.0/0 via 10.0.0.99;\n}\n",
  ],
  [
    "a default route among the VIPs",
    (t) =>
      t.replace(
        "  route 198.51.100.1/32 blackhole;\n",
        "  route 0.0.0.0/0 blackhole;\n  route 198.51.100.1/32 blackhole;\n",
      ),
  ],
  [
    "a VIP of no BGP pool",
    (t) =>
      t.replace(
        "  route 198.51.100.1/32 blackhole;\n",
        "  route 198.51.100.1/32 blackhole;\n  route 203.0.113.9/32 blackhole;\n",
      ),
  ],
  [
    "a VRRP pool's VIP",
    (t) =>
      t.replace(
        "  route 198.51.100.1/32 blackhole;\n",
        "  route 192.0.2.3/32 blackhole;\n  route 198.51.100.1/32 blackhole;\n",
      ),
  ],
  [
    "a pod route outside cluster_cidr",
    (t) =>
      t.replace(
        /( {2}route 10\.244\.1\.0\/24 blackhole \{ bgp_next_hop = 10\.0\.0\.21; \};\n)/,
        "$1  route 10.99.0.0/16 blackhole { bgp_next_hop = 10.0.0.21; };\n",
      ),
  ],
  [
    "a pod route towards a router",
    (t) => t.replace("bgp_next_hop = 10.0.0.21;", "bgp_next_hop = 10.0.0.1;"),
  ],
  ["a filter that accepts everything", (t) => t.replace(/then reject;\n/, "then accept;\n")],
  ["routes imported from the peer", (t) => t.replace("import none;", "import all;")],
  [
    "an extra peer",
    (t) =>
      t +
      "\nprotocol bgp evil {\n  local as 64513;\n  neighbor 192.0.2.66 as 666;\n  ipv4 { export all; };\n}\n",
  ],
  [
    "a changed neighbor",
    (t) => t.replace("neighbor 10.0.0.1 as 64512;", "neighbor 10.0.0.66 as 64512;"),
  ],
  ["a changed password", (t) => t.replace('password "S3cr3t-key";', 'password "other";')],
  [
    "a control socket restricted command",
    (t) => t.replace("log syslog all;", 'log "/etc/passwd" all;'),
  ],
  ["a second router id", (t) => t.replace(/router id [0-9.]+;/, "router id 10.0.0.1;")],
];

for (const [what, edit] of HOSTILE) {
  Deno.test(`a staged BIRD file with ${what} is refused`, async () => {
    const good = await rendered("cp-1");
    const bad = edit(good);
    assert.notEqual(bad, good, "the edit changed nothing");
    const problem = await judge(bad);
    assert.ok(problem, `accepted:\n${bad}`);
    assert.doesNotMatch(problem, /S3cr3t/, "a refusal never shows a password");
  });
}

Deno.test("a BIRD file for an inventory without [bgp] is refused", async () => {
  const config = await bgpConfig();
  const { bgp: _, ...noBgp } = config;
  assert.match(
    stagedBirdProblem(await rendered("cp-1"), { config: noBgp, host: "cp-1" })!,
    /no \[bgp\] table/,
  );
});

Deno.test("the bound on pod routes is the inventory's: inside cluster_cidr, towards a machine's own address", async () => {
  // which Node holds which CIDR is the API's, not the inventory's: the account can point a pod
  // CIDR at another machine of the inventory, and nothing outside that
  const good = await rendered("cp-1");
  const moved = good.replace("bgp_next_hop = 10.0.0.21;", "bgp_next_hop = 10.0.0.12;");
  assert.notEqual(moved, good);
  assert.equal(await judge(moved), undefined);
  const outside = good.replace("bgp_next_hop = 10.0.0.21;", "bgp_next_hop = 10.0.0.99;");
  assert.match((await judge(outside))!, /no machine's internal IP/);
});
