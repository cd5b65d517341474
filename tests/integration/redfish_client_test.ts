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
      "username_file": bmc.usernameFile,
      "password_file": bmc.passwordFile,
      "ca_file": bmc.certificates.caFile,
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

sushyTest(
  "RedfishClient: PoweringOff is not off, a body over 1 MiB is not Redfish, a redirect is not followed",
  async () => {
    await using bmc = await startSushy({
      systems: [{ uuid: crypto.randomUUID(), name: "w-1", power: "On" }],
    });
    const credentials = await readBmcCredentials(
      {
        endpoint: bmc.url,
        username_file: bmc.usernameFile,
        password_file: bmc.passwordFile,
        ca_file: bmc.certificates.caFile,
      } as Parameters<typeof readBmcCredentials>[0],
    );
    const system = (PowerState: unknown) => ({
      "@odata.type": "#ComputerSystem.v1_13_0.ComputerSystem",
      PowerState,
    });
    const answers: Record<string, () => Response> = {
      "/redfish/v1/Systems/powering-off": () => Response.json(system("PoweringOff")),
      "/redfish/v1/Systems/null": () => Response.json(system(null)),
      "/redfish/v1/Systems/huge": () =>
        Response.json({ ...system("Off"), pad: "x".repeat(2 * 1024 * 1024) }),
      "/redfish/v1/Systems/moved": () =>
        new Response(null, { status: 302, headers: { location: "https://example.invalid/" } }),
    };
    const server = Deno.serve(
      {
        hostname: "127.0.0.1",
        port: 0,
        cert: await Deno.readTextFile(bmc.certificates.certFile),
        key: await Deno.readTextFile(bmc.certificates.keyFile),
        onListen() {},
      },
      (request) => answers[new URL(request.url).pathname]?.() ?? new Response("", { status: 404 }),
    );
    try {
      const read = (path: string) =>
        new RedfishClient({
          endpoint: `https://127.0.0.1:${server.addr.port}`,
          system: path,
          serial: "w-1",
          timeoutMs: 5_000,
        }).readPower(credentials, AbortSignal.timeout(30_000));
      const poweringOff = await read("/redfish/v1/Systems/powering-off");
      assert.equal(poweringOff.state, "unknown");
      assert.match(poweringOff.detail, /PoweringOff.*not off yet/);
      assert.equal((await read("/redfish/v1/Systems/null")).state, "unknown");
      await assert.rejects(
        read("/redfish/v1/Systems/huge"),
        (error) => error instanceof RedfishError && error.reason === "not_redfish",
      );
      await assert.rejects(
        read("/redfish/v1/Systems/moved"),
        (error) => error instanceof RedfishError && error.reason === "http_error",
      );
    } finally {
      await server.shutdown();
    }
  },
);

/** Request lines sushy-emulator logged (werkzeug logs one per request it served). */
async function requestLines(bmc: { log(): Promise<string> }): Promise<number> {
  return ((await bmc.log()).match(/"(GET|POST) \/redfish\/[^"]* HTTP\/1\.1"/g) ?? []).length;
}

sushyTest(
  "RedfishClient, certificate_sha256: the pinned certificate reads power and ForceOff works; another pin is tls and sushy serves no request",
  async () => {
    const uuid = crypto.randomUUID();
    await using bmc = await startSushy({ systems: [{ uuid, name: "w-1", power: "On" }] });
    // no ca_file: the pin is the only trust
    const credentials = await readBmcCredentials(
      {
        endpoint: bmc.url,
        username_file: bmc.usernameFile,
        password_file: bmc.passwordFile,
      } as Parameters<typeof readBmcCredentials>[0],
    );
    assert.equal(credentials.caPem, undefined);
    const pinned = (certificateSha256: string) =>
      new RedfishClient({
        endpoint: bmc.url,
        system: bmc.systemPath(uuid),
        serial: "w-1",
        timeoutMs: 5_000,
        certificateSha256,
      });
    const signal = AbortSignal.timeout(60_000);
    const client = pinned(bmc.certificates.certSha256);
    assert.equal((await client.readPower(credentials, signal)).state, "on");
    const served = await requestLines(bmc);
    assert.ok(served >= 1, "sushy's log names the requests it served");
    // the CA's fingerprint is not the serving certificate's: refused before any request
    const wrong = await pinned(bmc.certificates.caSha256).readPower(credentials, signal)
      .then(() => undefined, (e) => e);
    assert.ok(wrong instanceof RedfishError && wrong.reason === "tls", String(wrong));
    assert.match(wrong.message, new RegExp(`fingerprint ${bmc.certificates.certSha256}, not`));
    await assert.rejects(
      pinned(bmc.certificates.caSha256).forceOff(credentials, signal),
      (e) => e instanceof RedfishError && e.reason === "tls",
    );
    assert.equal(await bmc.powerState(uuid), "On");
    // the harness's own powerState GET is one more line; the refused client added none
    assert.equal(await requestLines(bmc), served + 1);
    await client.forceOff(credentials, signal);
    await bmc.waitForPower(uuid, "Off");
    assert.equal((await client.readPower(credentials, signal)).state, "off");
  },
);

sushyTest(
  "RedfishClient: a BMC serving a self-signed CA:TRUE certificate is refused through ca_file but works pinned by fingerprint",
  async () => {
    const uuid = crypto.randomUUID();
    await using bmc = await startSushy({
      systems: [{ uuid, name: "w-1", power: "Off" }],
      serveCa: true,
    });
    const table = {
      endpoint: bmc.url,
      "username_file": bmc.usernameFile,
      "password_file": bmc.passwordFile,
    };
    const signal = AbortSignal.timeout(60_000);
    const target = {
      endpoint: bmc.url,
      system: bmc.systemPath(uuid),
      serial: "w-1",
      timeoutMs: 5_000,
    };
    // the certificate itself as ca_file: Deno's verifier refuses a CA as its own server certificate
    const withCa = await readBmcCredentials(
      { ...table, ca_file: bmc.certificates.caFile } as Parameters<typeof readBmcCredentials>[0],
    );
    await assert.rejects(
      new RedfishClient(target).readPower(withCa, signal),
      (e) => e instanceof RedfishError && e.reason === "tls" && /CaUsedAsEndEntity/.test(e.message),
    );
    const credentials = await readBmcCredentials(table as Parameters<typeof readBmcCredentials>[0]);
    const client = new RedfishClient({ ...target, certificateSha256: bmc.certificates.caSha256 });
    assert.deepEqual(await client.readPower(credentials, signal), {
      state: "off",
      detail: 'PowerState "Off"',
      system: bmc.systemPath(uuid),
    });
  },
);
