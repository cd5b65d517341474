import assert from "node:assert/strict";
import fc from "fast-check";
import type { V1Node } from "@kubernetes/client-node";
import { BaremetalInstances } from "../../../../providers/baremetal/instances.ts";
import { InstanceNotFoundError, ProviderError } from "../../../../src/cloud/provider.ts";
import { createBaremetalProvider } from "../../../../providers/baremetal/mod.ts";
import { sampleConfig, testConfig } from "../../_fakes/test_inventory.ts";

Deno.test("BaremetalInstances.instanceMetadata returns providerID, addresses, topology and labels", async () => {
  const provider = createBaremetalProvider(() => ({ config: sampleConfig(), healthy: true }));
  const metadata = await provider.instancesV2.instanceMetadata({ metadata: { name: "cp-1" } });
  assert.deepEqual(metadata, {
    providerID: "baremetal://SN-1",
    instanceType: "r650",
    nodeAddresses: [
      { type: "InternalIP", address: "10.0.0.11" },
      { type: "InternalIP", address: "fd00::11" },
      { type: "ExternalIP", address: "203.0.113.11" },
      { type: "Hostname", address: "cp-1.dc1.example.net" },
    ],
    zone: "dc1-a",
    region: "dc1",
    additionalLabels: { "example.com/storage": "nvme", "node-role.kubernetes.io/x": "y" },
  });
});

Deno.test("BaremetalInstances.instanceMetadata throws InstanceNotFoundError for an unknown machine", async () => {
  const provider = createBaremetalProvider(() => ({ config: sampleConfig(), healthy: true }));
  await assert.rejects(
    provider.instancesV2.instanceMetadata({ metadata: { name: "ghost" } }),
    (error) => error instanceof InstanceNotFoundError && /name "ghost"/.test(error.tried),
  );
});

Deno.test("BaremetalInstances.instanceExists is false for absent and retired, instanceShutdown follows state", async () => {
  const config = testConfig({
    machines: [{ name: "old", state: "retired" }, { name: "off", state: "shutdown" }],
  });
  const { instancesV2 } = createBaremetalProvider(() => ({ config, healthy: true }));
  assert.equal(await instancesV2.instanceExists({ metadata: { name: "old" } }), false);
  assert.equal(await instancesV2.instanceExists({ metadata: { name: "ghost" } }), false);
  assert.equal(await instancesV2.instanceExists({ metadata: { name: "off" } }), true);
  assert.equal(await instancesV2.instanceShutdown({ metadata: { name: "off" } }), true);
  assert.equal(await instancesV2.instanceState({ metadata: { name: "ghost" } }), "absent");
});

Deno.test("BaremetalInstances answers from the last good inventory after a rejected reload", async () => {
  const { instancesV2 } = createBaremetalProvider(() => ({
    config: sampleConfig(),
    healthy: false,
  }));
  // initialization and address sync go on; deletion is held by the lifecycle's guard
  assert.equal(
    (await instancesV2.instanceMetadata({ metadata: { name: "cp-1" } }))?.providerID,
    "baremetal://SN-1",
  );
  assert.equal(await instancesV2.instanceShutdown({ metadata: { name: "cp-1" } }), false);
  assert.equal(await instancesV2.instanceExists({ metadata: { name: "ghost" } }), false);
});

Deno.test("BaremetalInstances reads the inventory on every call so reloads take effect", async () => {
  let config = sampleConfig();
  const { instancesV2 } = createBaremetalProvider(() => ({ config, healthy: true }));
  assert.equal(await instancesV2.instanceExists({ metadata: { name: "w-2" } }), true);
  config = testConfig({ machines: [] });
  assert.equal(await instancesV2.instanceExists({ metadata: { name: "w-2" } }), false);
});

Deno.test("BaremetalInstances refuses a Node reporting the IP of a machine another Node holds", async () => {
  const provider = createBaremetalProvider(() => ({ config: sampleConfig(), healthy: true }));
  const nodes = [{ metadata: { name: "cp-1" }, spec: { providerID: "baremetal://SN-1" } }];
  await provider.initialize!({
    nodes: { list: () => nodes, get: () => undefined },
    services: { list: () => [], get: () => undefined },
    signal: new AbortController().signal,
  });
  const evil = {
    metadata: { name: "evil" },
    status: { addresses: [{ type: "InternalIP", address: "10.0.0.11" }] },
  };
  await assert.rejects(
    provider.instancesV2.instanceMetadata(evil),
    (error) =>
      error instanceof ProviderError && !(error instanceof InstanceNotFoundError) &&
      /already belongs to node "cp-1"/.test(error.message),
  );
  // fail closed for the lifecycle too: "cannot tell", never "gone"
  await assert.rejects(provider.instancesV2.instanceExists(evil), ProviderError);
  // the rightful Node is unaffected
  const metadata = await provider.instancesV2.instanceMetadata(nodes[0]!);
  assert.equal(metadata?.providerID, "baremetal://SN-1");
});

Deno.test("BaremetalInstances kept up to date by Node events answers as one re-reading every Node (property)", () => {
  const config = sampleConfig();
  const name = fc.constantFrom("cp-1", "w-1", "w-2", "x");
  const providerID = fc.constantFrom(
    undefined,
    "baremetal://SN-1",
    "baremetal://w-1",
    "baremetal://w-2",
  );
  const change = fc.record({ type: fc.constantFrom("set", "delete"), name, providerID });
  const nodeOf = (c: { name: string; providerID: string | undefined }): V1Node => ({
    metadata: { name: c.name },
    ...(c.providerID ? { spec: { providerID: c.providerID } } : {}),
    status: { addresses: [{ type: "InternalIP", address: "10.0.0.21" }] },
  });
  // what each instance says about every probe: the machine, or the error's message
  const answers = (instances: BaremetalInstances) =>
    ["cp-1", "w-1", "w-2", "x", "y"].map((probe) => {
      try {
        return instances.findMachine(nodeOf({ name: probe, providerID: undefined }))?.name;
      } catch (error) {
        return (error as Error).message;
      }
    });
  fc.assert(
    fc.property(fc.array(change, { maxLength: 20 }), (changes) => {
      const cache = new Map<string, V1Node>();
      const followed = new BaremetalInstances(() => ({ config, healthy: true }));
      followed.useNodes(() => [...cache.values()], { notifies: true });
      answers(followed); // build the index before the events
      for (const c of changes) {
        const old = cache.get(c.name);
        if (c.type === "delete") {
          if (!old) continue;
          cache.delete(c.name);
          followed.nodesChanged({ type: "delete", object: old });
        } else {
          const node = nodeOf(c);
          cache.set(c.name, node);
          followed.nodesChanged({ type: old ? "update" : "add", object: node });
        }
        const rereading = new BaremetalInstances(() => ({ config, healthy: true }));
        rereading.useNodes(() => [...cache.values()]);
        assert.deepEqual(answers(followed), answers(rereading));
      }
    }),
    { numRuns: 500 },
  );
});
