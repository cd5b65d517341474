/**
 * Golden tests of configurations as real clusters run them: MetalLB objects without the ones
 * they refer to, MetalLB before 0.13 (the `config` ConfigMap) and 0.13's AddressPool, and
 * kube-vip-cloud-provider's lookup rules. Each input is in testdata/real/ with the inventory it
 * must produce (or the refusal it must get).
 */
import assert from "node:assert/strict";
import { parse } from "smol-toml";
import { importMetallb } from "../../../src/import/metallb.ts";
import { ImportError } from "../../../src/import/source_objects.ts";
import { golden, readData } from "./_golden.ts";

Deno.test("import metallb: a file of advertisements, Communities and BFDProfiles says what it holds", async () => {
  const text = await readData("real/advertisements_only.yaml");
  assert.throws(
    () => importMetallb(text, { source: "ads.yaml" }),
    (error: unknown) =>
      error instanceof ImportError &&
      /^ads\.yaml: holds no MetalLB IPAddressPool or BGPPeer \(it holds 1 L2Advertisement, 1 BGPAdvertisement, 1 Community, 1 BFDProfile\)/
        .test(error.message) &&
      /addresspools/.test(error.message) &&
      /configmap config -n metallb-system/.test(error.message),
  );
});

Deno.test("import metallb: an advertisement's communities and localPref are kept without a BGPPeer", async () => {
  const text = importMetallb(await readData("real/advertisement_no_peer.yaml"), {
    source: "advertisement_no_peer.yaml",
  });
  await golden("real/advertisement_no_peer.expected.toml", text);
  assert.match(text, /spec\.communities = \["no-export","64512:100"\]: tagged the routes/);
  assert.match(text, /spec\.localPref = 150: sent with the routes of pool "anycast"/);
  const doc = parse(text) as { bgp: { communities?: Record<string, string> } };
  assert.deepEqual({ ...doc.bgp.communities }, { "no-export": "65535:65281" });
});
