import assert from "node:assert/strict";
import {
  additionalLabelsToAdd,
  gaLabelsToReconcile,
} from "../../../../src/controllers/node/node_labels.ts";

Deno.test("additionalLabelsToAdd drops kubernetes.io and k8s.io keys (and subdomains)", () => {
  const result = additionalLabelsToAdd({}, {
    "kubernetes.io/a": "1",
    "node.kubernetes.io/b": "1",
    "k8s.io/c": "1",
    "x.k8s.io/d": "1",
    "example.com/ok": "1",
    "notkubernetes.io/e": "1",
  });
  assert.deepEqual(result.added, { "example.com/ok": "1", "notkubernetes.io/e": "1" });
  assert.equal(result.warnings.length, 4);
});

Deno.test("additionalLabelsToAdd never overwrites an existing label", () => {
  const result = additionalLabelsToAdd({ team: "a" }, { team: "b", rack: "r1" });
  assert.deepEqual(result.added, { rack: "r1" });
  assert.match(result.warnings[0] ?? "", /"team"="a"/);
});

Deno.test("gaLabelsToReconcile copies beta values onto missing or different GA labels", () => {
  assert.deepEqual(
    gaLabelsToReconcile({
      "failure-domain.beta.kubernetes.io/zone": "z1",
      "topology.kubernetes.io/zone": "edited",
      "beta.kubernetes.io/instance-type": "t",
      "failure-domain.beta.kubernetes.io/region": "r",
      "topology.kubernetes.io/region": "r",
    }),
    { "topology.kubernetes.io/zone": "z1", "node.kubernetes.io/instance-type": "t" },
  );
  assert.deepEqual(gaLabelsToReconcile({ "topology.kubernetes.io/zone": "z" }), {});
});
