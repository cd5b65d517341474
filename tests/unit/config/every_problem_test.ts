/**
 * `keelson check` reports every problem of a file in one pass, in file order with its line: a
 * field that fails the schema does not hide the cross-field problems of its section, nor of the
 * sections that read it.
 */
import assert from "node:assert/strict";
import { ConfigError } from "../../../src/config/config_error.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";

function problems(text: string): string[] {
  try {
    parseConfig(text, "k.toml");
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.issues.map((i) => `${i.line}: ${i.path}`);
  }
  return [];
}

const SEVERAL = `[cluster]
name = "t"

[keepalived]
interface = "eth0"
advert_interval = "200"
vrid_range = [250, 260]

[leader_election]
lease_duration = "abc"
renew_deadline = "20s"

[control_plane]
vip = ["192.0.2.5"]

[[pools]]
name = "a"
addresses = ["192.0.2.0/28"]
auto_assign = "yes"

[[machines]]
name = "cp1"
role = "control-plane"
state = "bogus"
internal_ips = ["10.0.0.11"]

[[machines]]
name = "cp2"
role = "control-plane"
internal_ips = ["10.0.0.11"]
`;

Deno.test("check reports a schema problem and the cross-field problems beside it, all at once", () => {
  assert.deepEqual(problems(SEVERAL), [
    "6: keepalived.advert_interval",
    // same section as the bad advert_interval: hidden before
    "7: keepalived.vrid_range",
    "10: leader_election.lease_duration",
    // the pool holding the VIP has a bad auto_assign: hidden before
    "14: control_plane.vip[0]",
    "19: pools[0].auto_assign",
    "24: machines[0].state",
    // the first machine's state is bad: hidden before
    "30: machines[1].internal_ips[0]",
  ]);
});

Deno.test("a check that reads a field which failed the schema says nothing about its default", () => {
  // renew_deadline 20s is longer than lease_duration's default 15s; the file wrote no valid
  // lease_duration, so only the bad value is reported, never a comparison with the default
  const found = problems(SEVERAL);
  assert.ok(!found.some((p) => p.includes("renew_deadline")), found.join("\n"));
});

Deno.test("the issue's example: advert_interval and vrid_range are both reported", () => {
  const text = `[keepalived]
advert_interval = "200"
vrid_range = [250, 260]

[[machines]]
name = "cp1"
role = "control-plane"
internal_ips = ["10.0.0.11"]
`;
  assert.deepEqual(problems(text), ["2: keepalived.advert_interval", "3: keepalived.vrid_range"]);
});
