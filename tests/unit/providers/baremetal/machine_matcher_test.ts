import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import fc from "fast-check";
import {
  type MachineMatch,
  matchMachine,
} from "../../../../providers/baremetal/machine_matcher.ts";
import { type Machine, machineId } from "../../../../src/config/types.ts";
import { canonicalIp } from "../../../../src/net/ip.ts";
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

Deno.test("matchMachine never matches a machine another Node holds by IP or hostname", () => {
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

// The matcher before its index: a scan of every machine per step, the oracle of the property below.
function scanMatch(
  n: V1Node,
  list: Machine[],
  scheme: string,
  holderOf: (providerID: string) => string | undefined,
): unknown {
  const name = n.metadata?.name ?? "";
  const providerID = n.spec?.providerID ?? "";
  const canonical = (ip: string) => canonicalIp(ip) ?? ip;
  const pickOne = (found: Machine[], step: string) =>
    found.length > 1
      ? { kind: "ambiguous", step, machines: [found[0]!.name, found[1]!.name] }
      : { kind: "matched", machine: found[0]!.name, step };
  if (providerID !== "") {
    if (!providerID.startsWith(`${scheme}://`)) return { kind: "foreign" };
    const found = list.filter((m) => machineId(m) === providerID.slice(scheme.length + 3));
    return found.length === 0 ? { kind: "absent" } : pickOne(found, "providerID");
  }
  const hostnames = new Set([name.toLowerCase()]);
  const ips = new Set<string>();
  for (const a of n.status?.addresses ?? []) {
    if (a.type === "Hostname") hostnames.add(a.address.toLowerCase());
    if (a.type === "InternalIP") ips.add(canonical(a.address));
  }
  const steps: [string, (m: Machine) => boolean][] = [
    ["name", (m) => m.name === name],
    ["hostname", (m) => m.hostname !== undefined && hostnames.has(m.hostname.toLowerCase())],
    ["internalIP", (m) => m.internal_ips.some((ip) => ips.has(canonical(ip)))],
  ];
  let claimed: unknown;
  for (const [step, test] of steps) {
    const free = list.filter(test).filter((m) => {
      const holder = holderOf(`${scheme}://${machineId(m)}`);
      if (holder === undefined || holder === name) return true;
      claimed ??= { kind: "claimed", machine: m.name, step, holder };
      return false;
    });
    if (free.length > 0) return pickOne(free, step);
  }
  return claimed ?? { kind: "absent" };
}

function comparable(match: MachineMatch): unknown {
  switch (match.kind) {
    case "matched":
      return { kind: match.kind, machine: match.machine.name, step: match.step };
    case "ambiguous":
      return { kind: match.kind, step: match.step, machines: match.machines.map((m) => m.name) };
    case "claimed":
      return {
        kind: match.kind,
        machine: match.machine.name,
        step: match.step,
        holder: match.holder,
      };
    default:
      return { kind: match.kind };
  }
}

Deno.test("matchMachine's index finds what a scan of every machine finds (property)", () => {
  const word = fc.constantFrom("a", "b", "c", "A", "d");
  const ip = fc.constantFrom("10.0.0.1", "10.0.0.2", "::ffff:10.0.0.1", "fd00::1", "fd00:0::1");
  const machineArb = fc.record({
    name: word,
    id: fc.option(word, { nil: undefined }),
    hostname: fc.option(word, { nil: undefined }),
    internal_ips: fc.array(ip, { maxLength: 2 }),
  });
  fc.assert(
    fc.property(
      fc.array(machineArb, { maxLength: 6 }),
      word,
      fc.option(fc.constantFrom("baremetal://a", "baremetal://b", "aws://a"), { nil: undefined }),
      fc.array(fc.constantFrom("Hostname", "InternalIP"), { maxLength: 3 }),
      fc.array(fc.oneof(word, ip), { minLength: 3, maxLength: 3 }),
      fc.constantFrom(undefined, "a", "b"),
      (specs, name, providerID, types, values, holder) => {
        const list = specs.map((s) => ({ ...sampleConfig().machines[0]!, ...s })) as Machine[];
        const n: V1Node = {
          metadata: { name },
          ...(providerID ? { spec: { providerID } } : {}),
          status: { addresses: types.map((type, i) => ({ type, address: values[i]! })) },
        };
        // a holder for machine ids "a"/"b" when set
        const holderOf = (id: string) => id === `baremetal://${holder}` ? "other" : undefined;
        assert.deepEqual(
          comparable(matchMachine(n, list, "baremetal", holderOf)),
          scanMatch(n, list, "baremetal", holderOf),
        );
      },
    ),
    { numRuns: 2000 },
  );
});
