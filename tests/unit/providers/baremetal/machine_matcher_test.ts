import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { matchMachine } from "../../../../providers/baremetal/machine_matcher.ts";
import { sampleConfig, testConfig } from "../../_fakes/test_inventory.ts";

const machines = sampleConfig().machines;
function node(name: string, extra: Partial<V1Node> = {}): V1Node {
  return { ...extra, metadata: { name, ...extra.metadata } };
}

Deno.test("matchMachine prefers spec.providerID over the name", () => {
  const match = matchMachine(
    node("w-1", { spec: { providerID: "baremetal://SN-1" } }),
    machines,
    "baremetal",
  );
  assert.equal(match.kind === "matched" && match.machine.name, "cp-1");
  assert.equal(match.kind === "matched" && match.step, "providerID");
});

Deno.test("matchMachine treats a providerID naming an unknown id as absent without falling through", () => {
  const match = matchMachine(
    node("w-1", { spec: { providerID: "baremetal://nope" } }),
    machines,
    "baremetal",
  );
  assert.equal(match.kind, "absent");
});

Deno.test("matchMachine reports a providerID of another scheme as foreign", () => {
  const match = matchMachine(
    node("w-1", { spec: { providerID: "aws://i-1" } }),
    machines,
    "baremetal",
  );
  assert.equal(match.kind, "foreign");
});

Deno.test("matchMachine matches by name, then hostname (name or Hostname address), then InternalIP", () => {
  assert.equal(matchMachine(node("w-2"), machines, "baremetal").kind === "matched", true);
  const byHostname = matchMachine(node("w1.example.net"), machines, "baremetal");
  assert.equal(byHostname.kind === "matched" && byHostname.step, "hostname");
  const byAddress = matchMachine(
    node("other", {
      status: { addresses: [{ type: "Hostname", address: "CP-1.dc1.example.net" }] },
    }),
    machines,
    "baremetal",
  );
  assert.equal(byAddress.kind === "matched" && byAddress.machine.name, "cp-1");
  const byIp = matchMachine(
    node("x", {
      metadata: { name: "x", annotations: { "alpha.kubernetes.io/provided-node-ip": "10.0.0.22" } },
    }),
    machines,
    "baremetal",
  );
  assert.equal(byIp.kind === "matched" && byIp.step, "internalIP");
  const byStatusIp = matchMachine(
    node("y", { status: { addresses: [{ type: "InternalIP", address: "fd00:0::11" }] } }),
    machines,
    "baremetal",
  );
  assert.equal(byStatusIp.kind === "matched" && byStatusIp.machine.name, "cp-1");
});

Deno.test("matchMachine reports two machines matching at one step as ambiguous, naming both", () => {
  const config = testConfig({
    machines: [
      { name: "a", internal_ips: ["10.0.0.5"] },
      { name: "b", internal_ips: ["10.0.0.5"] },
    ],
  });
  const match = matchMachine(
    node("z", { status: { addresses: [{ type: "InternalIP", address: "10.0.0.5" }] } }),
    config.machines,
    "baremetal",
  );
  assert.equal(match.kind, "ambiguous");
  assert.deepEqual(match.kind === "ambiguous" && match.machines.map((m) => m.name), ["a", "b"]);
});

Deno.test("matchMachine reports absent with what was tried", () => {
  const match = matchMachine(
    node("ghost", { status: { addresses: [{ type: "InternalIP", address: "10.9.9.9" }] } }),
    machines,
    "baremetal",
  );
  assert.equal(match.kind, "absent");
  assert.match(match.kind === "absent" ? match.tried : "", /name "ghost".*10\.9\.9\.9/);
});

Deno.test("matchMachine never matches a machine another Node holds by IP or hostname (issue 9 item 2)", () => {
  const holders = new Map([["baremetal://SN-1", "cp-1"]]);
  const holderOf = (id: string) => holders.get(id);
  const evil = node("evil", {
    status: {
      addresses: [
        { type: "InternalIP", address: "10.0.0.11" },
        { type: "Hostname", address: "cp-1.dc1.example.net" },
      ],
    },
  });
  const match = matchMachine(evil, machines, "baremetal", holderOf);
  assert.equal(match.kind, "claimed");
  assert.equal(match.kind === "claimed" && match.holder, "cp-1");
  assert.equal(match.kind === "claimed" && match.machine.name, "cp-1");
  // the rightful Node still matches by its providerID, and by name when it has none yet
  const rightful = node("cp-1", { spec: { providerID: "baremetal://SN-1" } });
  assert.equal(matchMachine(rightful, machines, "baremetal", holderOf).kind, "matched");
  assert.equal(matchMachine(node("cp-1"), machines, "baremetal", holderOf).kind, "matched");
  // an IP-mapped spelling of the address is the same address
  const mapped = node("evil-2", {
    status: { addresses: [{ type: "InternalIP", address: "::ffff:10.0.0.11" }] },
  });
  assert.equal(matchMachine(mapped, machines, "baremetal", holderOf).kind, "claimed");
});
