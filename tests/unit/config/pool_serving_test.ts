/**
 * Which machines serve a pool (`[pools.served_by]`): every key given must match, the default is
 * the control-plane machines, retired machines serve nothing, and `check` refuses a selection
 * naming an unknown machine or selecting none.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseConfig } from "../../../src/config/parse_config.ts";
import {
  isServingHost,
  matchesServedBy,
  poolServers,
  poolsServedBy,
  servingHostNames,
} from "../../../src/config/pool_serving.ts";
import type { Machine, Pool } from "../../../src/config/types.ts";
import { issues } from "./_issues.ts";

const inventory = (servedBy: string) =>
  `[[pools]]
name = "edge"
addresses = ["192.0.2.0/28"]
${servedBy}

[[pools]]
name = "inner"
addresses = ["192.0.2.32/28"]

[[machines]]
name = "cp-1"
role = "control-plane"
internal_ips = ["10.0.0.11"]

[[machines]]
name = "w-1"
internal_ips = ["10.0.0.21"]
labels = { rack = "r1" }

[[machines]]
name = "w-2"
internal_ips = ["10.0.0.22"]
labels = { rack = "r2" }

[[machines]]
name = "w-3"
internal_ips = ["10.0.0.23"]
labels = { rack = "r1" }
state = "retired"
`;

const names = (ms: Machine[]) => ms.map((m) => m.name);

Deno.test("a pool without served_by is served by the control-plane machines", () => {
  const config = parseConfig(inventory(""), "keelson.toml");
  assert.deepEqual(names(poolServers(config, config.pools[0]!)), ["cp-1"]);
  assert.deepEqual(poolsServedBy(config, "w-1").map((p) => p.name), []);
  assert.equal(isServingHost(config, "cp-1"), true);
  assert.equal(isServingHost(config, "w-1"), false);
});

Deno.test("every key of served_by must match; a retired machine serves nothing", () => {
  const config = parseConfig(
    inventory('served_by = { roles = ["worker"], labels = { rack = "r1" } }'),
    "keelson.toml",
  );
  const edge = config.pools[0]!;
  assert.deepEqual(names(poolServers(config, edge)), ["w-1"]);
  assert.equal(matchesServedBy(config.machines[3]!, edge), true, "w-3 matches, retired");
  assert.deepEqual(poolsServedBy(config, "w-1").map((p) => p.name), ["edge"]);
  assert.deepEqual(poolsServedBy(config, "cp-1").map((p) => p.name), ["inner"]);
  assert.equal(isServingHost(config, "w-1"), true);
  assert.equal(isServingHost(config, "w-2"), false);
  assert.equal(isServingHost(config, "w-3"), false);
  assert.equal(isServingHost(config, "nobody"), false);
});

Deno.test("servingHostNames() lists exactly the machines isServingHost accepts, in inventory order", () => {
  for (
    const [servedBy, expected] of [
      ["", ["cp-1"]],
      ['served_by = { roles = ["worker"], labels = { rack = "r1" } }', ["cp-1", "w-1"]],
      ['served_by = { roles = ["worker"] }', ["cp-1", "w-1", "w-2"]],
    ] as const
  ) {
    const config = parseConfig(inventory(servedBy), "keelson.toml");
    assert.deepEqual(servingHostNames(config), expected, servedBy);
    assert.deepEqual(
      servingHostNames(config),
      config.machines.filter((m) => isServingHost(config, m.name)).map((m) => m.name),
    );
  }
});

Deno.test("served_by by machine name", () => {
  const config = parseConfig(
    inventory('served_by = { machines = ["w-2", "cp-1"] }'),
    "keelson.toml",
  );
  assert.deepEqual(names(poolServers(config, config.pools[0]!)), ["cp-1", "w-2"]);
});

Deno.test("check refuses an unknown machine, an empty table and a selection of none", () => {
  const unknown = issues(inventory('served_by = { machines = ["w-9"] }'));
  assert.equal(unknown.length, 1);
  assert.match(unknown[0]!.message, /machine "w-9", which no \[\[machines\]\] entry has/);
  assert.match(unknown[0]!.path, /pools\[0\]\.served_by\.machines\[0\]|served_by/);

  const empty = issues(inventory("served_by = {}"));
  assert.equal(empty.length, 1);
  assert.match(empty[0]!.message, /selects nothing/);

  const none = issues(inventory('served_by = { labels = { rack = "r9" } }'));
  assert.equal(none.length, 1);
  assert.match(none[0]!.message, /selects no machine/);

  assert.deepEqual(issues(inventory('served_by = { labels = { rack = "r1" } }')), []);
});

Deno.test("property: a server matches every given key and is not retired", () => {
  const role = fc.constantFrom<"control-plane" | "worker">("control-plane", "worker");
  const rack = fc.constantFrom("r1", "r2");
  fc.assert(fc.property(
    fc.array(fc.record({ role, rack, retired: fc.boolean() }), { minLength: 1, maxLength: 8 }),
    fc.record({
      machines: fc.option(fc.subarray(["m0", "m1", "m2", "m3"], { minLength: 1 }), {
        nil: undefined,
      }),
      roles: fc.option(fc.subarray(["control-plane", "worker"] as const, { minLength: 1 }), {
        nil: undefined,
      }),
      rack: fc.option(rack, { nil: undefined }),
    }),
    (specs, sel) => {
      const machines = specs.map((s, i) => ({
        name: `m${i}`,
        role: s.role,
        state: s.retired ? "retired" : "active",
        labels: { rack: s.rack },
      })) as unknown as Machine[];
      const pool = {
        name: "p",
        served_by: {
          machines: sel.machines,
          roles: sel.roles,
          labels: sel.rack === undefined ? undefined : { rack: sel.rack },
        },
      } as unknown as Pool;
      const servers = new Set(poolServers({ machines }, pool).map((m) => m.name));
      for (const m of machines) {
        const expected = m.state !== "retired" &&
          (sel.machines === undefined || sel.machines.includes(m.name)) &&
          (sel.roles === undefined || sel.roles.includes(m.role)) &&
          (sel.rack === undefined || m.labels["rack"] === sel.rack);
        assert.equal(servers.has(m.name), expected, m.name);
      }
    },
  ));
});
