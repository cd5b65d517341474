/**
 * The Redfish emulator harness itself (tests/integration/_harness/sushy.ts): it serves the given
 * systems over HTTPS with the test's CA, refuses wrong credentials, and applies a reset.
 */
import assert from "node:assert/strict";
import { startSushy, sushyTest } from "./_harness/sushy.ts";

sushyTest(
  "startSushy: serves the given systems over HTTPS, with basic auth, and applies a reset",
  async () => {
    const uuid = crypto.randomUUID();
    await using bmc = await startSushy({ systems: [{ uuid, name: "w-1", power: "On" }] });
    assert.equal(await bmc.powerState(uuid), "On");
    const system = (await bmc.request("GET", bmc.systemPath(uuid))).body as Record<string, unknown>;
    assert.equal(system.Id, uuid);
    // wrong credentials are refused
    const refused = await fetch(`${bmc.url}${bmc.systemPath(uuid)}`, {
      headers: { authorization: `Basic ${btoa(`${bmc.username}:wrong`)}` },
      client: Deno.createHttpClient({ caCerts: [bmc.certificates.caPem] }),
    });
    await refused.body?.cancel();
    assert.equal(refused.status, 401);
    const before = performance.now();
    await bmc.reset(uuid, "ForceOff");
    const at = await bmc.waitForPower(uuid, "Off");
    // deno-lint-ignore no-console
    console.log(`sushy applied ForceOff after ${((at - before) / 1000).toFixed(1)} s`);
  },
);
