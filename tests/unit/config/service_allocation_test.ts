/** `[pools.service_allocation]`: accepted shapes, and every mistake named by file, line and path. */
import assert from "node:assert/strict";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { issues } from "./_issues.ts";

const MACHINE = '[keepalived]\nenabled = false\n[[machines]]\nname = "w-1"\n';

Deno.test("service_allocation: priority, namespaces and service selectors are read", () => {
  const config = parseConfig(
    `${MACHINE}
[[pools]]
name = "edge"
addresses = ["192.0.2.0/28"]
[pools.service_allocation]
priority = 10
namespaces = ["web"]
[[pools.service_allocation.service_selectors]]
match_labels = { tier = "edge" }
[[pools.service_allocation.service_selectors.match_expressions]]
key = "env"
operator = "In"
values = ["prod"]
`,
    "keelson.toml",
  );
  assert.deepEqual(config.pools[0]!.service_allocation, {
    priority: 10,
    namespaces: ["web"],
    service_selectors: [{
      match_labels: { tier: "edge" },
      match_expressions: [{ key: "env", operator: "In", values: ["prod"] }],
    }],
  });
});

Deno.test("service_allocation: each mistake is reported with its line and path, all in one run", () => {
  const found = issues(`${MACHINE}
[[pools]]
name = "edge"
addresses = ["192.0.2.0/28"]
namespaces = ["web"]
[pools.service_allocation]
priority = -1
namespaces = ["web"]
namespace_selectors = [{ match_labels = { team = "a" } }]
[[pools.service_allocation.service_selectors]]
match_labels = { "bad key!" = "x" }
[[pools.service_allocation.service_selectors.match_expressions]]
key = "env"
operator = "Equals"
[[pools.service_allocation.service_selectors.match_expressions]]
key = "env"
operator = "Exists"
values = ["prod"]
[[pools.service_allocation.service_selectors.match_expressions]]
key = "env"
operator = "NotIn"
`);
  const at = (path: string) => found.find((i) => i.path === path);
  const expect = (path: string, line: number, words: RegExp) => {
    const issue = at(path);
    assert.ok(issue, `no issue at ${path}; got ${JSON.stringify(found)}`);
    assert.equal(issue.file, "keelson.toml");
    assert.equal(issue.line, line, `line of ${path}`);
    assert.match(issue.message, words);
  };
  expect("pools[0].service_allocation.priority", 11, /must be at least 0, not -1/);
  expect("pools[0].service_allocation.namespace_selectors", 13, /does not watch Namespaces/);
  expect(
    'pools[0].service_allocation.service_selectors[0].match_labels["bad key!"]',
    15,
    /not a valid Kubernetes label key/,
  );
  expect(
    "pools[0].service_allocation.service_selectors[0].match_expressions[0].operator",
    18,
    /"Equals" is not allowed; expected one of "In", "NotIn", "Exists", "DoesNotExist"/,
  );
  expect(
    "pools[0].service_allocation.service_selectors[0].match_expressions[1].values",
    22,
    /must be empty for operator "Exists"/,
  );
  expect(
    "pools[0].service_allocation.service_selectors[0].match_expressions[2].operator",
    25,
    /"NotIn" needs at least one entry in values/,
  );
});

Deno.test("service_allocation: namespaces in both places is refused, naming the pool-level key", () => {
  const found = issues(`${MACHINE}
[[pools]]
name = "edge"
addresses = ["192.0.2.0/28"]
namespaces = ["web"]
[pools.service_allocation]
namespaces = ["web"]
`);
  assert.equal(found.length, 1, JSON.stringify(found));
  assert.equal(found[0]!.path, "pools[0].namespaces");
  assert.equal(found[0]!.line, 9);
  assert.match(found[0]!.message, /keep one list/);
});
