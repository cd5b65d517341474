/**
 * The provider's Redfish client against sushy-tools' emulator (a Redfish server Keelson did not
 * write): it reads PowerState, sends ComputerSystem.Reset ForceOff (as fencing will) and says why
 * when the credentials are refused. In-process: the shipped agent's use is bmc_power_test.ts.
 */
import assert from "node:assert/strict";
import { RedfishClient, RedfishError } from "../../providers/baremetal/power/redfish_client.ts";
import { readBmcCredentials } from "../../src/config/bmc_credentials.ts";
import { startSushy, sushyTest } from "./_harness/sushy.ts";

sushyTest(
  "RedfishClient: reads On, sends ForceOff, reads Off; wrong credentials are unauthorized",
  async () => {
    const uuid = crypto.randomUUID();
    await using bmc = await startSushy({ systems: [{ uuid, name: "w-1", power: "On" }] });
    const bmcTable = {
      endpoint: bmc.url,
      username_file: bmc.usernameFile,
      password_file: bmc.passwordFile,
      ca_file: bmc.certificates.caFile,
    };
    const credentials = await readBmcCredentials(
      bmcTable as Parameters<typeof readBmcCredentials>[0],
    );
    const client = new RedfishClient({
      endpoint: bmc.url,
      system: bmc.systemPath(uuid),
      serial: "w-1",
      timeoutMs: 5_000,
    });
    const signal = AbortSignal.timeout(60_000);
    assert.deepEqual(await client.readPower(credentials, signal), {
      state: "on",
      detail: 'PowerState "On"',
      system: bmc.systemPath(uuid),
    });
    await client.forceOff(credentials, signal);
    await bmc.waitForPower(uuid, "Off");
    assert.equal((await client.readPower(credentials, signal)).state, "off");
    // the only system of the BMC is found without a path
    const discovering = new RedfishClient({ endpoint: bmc.url, serial: "w-1", timeoutMs: 5_000 });
    assert.equal((await discovering.readPower(credentials, signal)).system, bmc.systemPath(uuid));
    await assert.rejects(
      client.readPower({ ...credentials, password: "wrong" }, signal),
      (error) => error instanceof RedfishError && error.reason === "unauthorized",
    );
  },
);
