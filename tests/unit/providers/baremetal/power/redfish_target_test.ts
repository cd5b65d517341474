/**
 * Every read and every ForceOff goes to the machine's one system, against a loopback Redfish
 * server that records each request-target as it arrived: a reset target that resolves to another
 * system is refused (nothing is posted), members and system ids that are not one safe path segment
 * are refused, a system reporting another machine's serial number or asset tag is not this
 * machine's, and discovery reads every member over every page (or refuses).
 */
import assert from "node:assert/strict";
import {
  MAX_DISCOVERED_SYSTEMS,
  RedfishClient,
  RedfishError,
} from "../../../../../providers/baremetal/power/redfish_client.ts";
import { computerSystem, FAKE_REDFISH_CA, startFakeRedfish } from "./_fake_redfish.ts";

const CREDENTIALS = { username: "admin", password: "s3cret", caPem: FAKE_REDFISH_CA };
const S1 = "/redfish/v1/Systems/1";
const S2 = "/redfish/v1/Systems/2";
const RESET_1 = `${S1}/Actions/ComputerSystem.Reset`;
const RESET_2 = `${S2}/Actions/ComputerSystem.Reset`;
const SERIAL = "SN-W1";

function signal(): AbortSignal {
  return AbortSignal.timeout(30_000);
}

function client(endpoint: string, system?: string, serial = SERIAL): RedfishClient {
  return new RedfishClient({
    endpoint,
    ...(system !== undefined ? { system } : {}),
    serial,
    timeoutMs: 10_000,
  });
}

function reason(expected: string) {
  return (error: unknown) => {
    assert.ok(error instanceof RedfishError, String(error));
    assert.equal(error.reason, expected, error.message);
    return true;
  };
}

Deno.test("ForceOff: a reset target that resolves to another system is refused and nothing is posted", async () => {
  await using bmc = startFakeRedfish(SERIAL);
  const targets = [
    `${S1}/../2/Actions/ComputerSystem.Reset`,
    `${S1}/%2e%2e/2/Actions/ComputerSystem.Reset`,
    `${S1}/.%2E/2/Actions/ComputerSystem.Reset`,
    `${S1}/..%2F2/Actions/ComputerSystem.Reset`,
    `${S1}%2F..%2F2/Actions/ComputerSystem.Reset`,
    `${S1}/Actions/../../2/Actions/ComputerSystem.Reset`,
    `${S1}\\..\\2\\Actions\\ComputerSystem.Reset`,
    `https://127.0.0.1:1${RESET_2}`,
    `${RESET_1}?system=2`,
    `${RESET_1}#2`,
    RESET_2,
  ];
  for (const target of targets) {
    bmc.requests.length = 0;
    bmc.serve({
      [S1]: computerSystem({
        PowerState: "On",
        SerialNumber: SERIAL,
        Actions: { "#ComputerSystem.Reset": { target } },
      }),
      [S2]: computerSystem({ PowerState: "On", SerialNumber: "SN-OTHER" }),
    });
    await assert.rejects(client(bmc.endpoint, S1).forceOff(CREDENTIALS, signal()), (error) => {
      assert.ok(error instanceof RedfishError, `${target}: ${error}`);
      assert.equal(error.reason, "unsafe_path", `${target}: ${error.message}`);
      return true;
    });
    const posts = bmc.requests.filter((r) => r.method === "POST");
    assert.deepEqual(posts, [], `${target}: posted ${JSON.stringify(posts)}`);
    assert.deepEqual(bmc.requests.map((r) => r.target), [S1], target);
  }
  // the standard target (also written as itself with a redundant step) is where ForceOff goes
  for (const target of [RESET_1, `${S1}/./Actions/ComputerSystem.Reset`, undefined]) {
    bmc.requests.length = 0;
    bmc.serve({
      [S1]: computerSystem({
        PowerState: "On",
        SerialNumber: SERIAL,
        ...(target ? { Actions: { "#ComputerSystem.Reset": { target } } } : {}),
      }),
    });
    await client(bmc.endpoint, S1).forceOff(CREDENTIALS, signal());
    assert.deepEqual(
      bmc.requests.map((r) => `${r.method} ${r.target} ${r.body}`),
      [`GET ${S1} `, `POST ${RESET_1} {"ResetType":"ForceOff"}`],
    );
  }
});

Deno.test("discovery: a member that is not one safe path segment is refused, never read or skipped", async () => {
  await using bmc = startFakeRedfish(SERIAL);
  const odd = [
    "/redfish/v1/Systems/..",
    "/redfish/v1/Systems/.",
    "/redfish/v1/Systems/",
    "/redfish/v1/Systems/%2e%2e",
    "/redfish/v1/Systems/a%2Fb",
    "/redfish/v1/Systems/1/../2",
    "/redfish/v1/Systems/x?y",
    "/redfish/v1/Systems/x#y",
    "/redfish/v1/Systems/a b",
    "/redfish/v1/Systems/a\u0000b",
    "/redfish/v1/Managers/1",
    "https://127.0.0.1/redfish/v1/Systems/1",
  ];
  for (const member of odd) {
    for (const members of [[member], [S1, member]]) {
      bmc.requests.length = 0;
      bmc.serve({
        "/redfish/v1/Systems": { Members: members.map((m) => ({ "@odata.id": m })) },
        [S1]: computerSystem({ PowerState: "Off", SerialNumber: SERIAL }),
      });
      await assert.rejects(
        client(bmc.endpoint).readPower(CREDENTIALS, signal()),
        reason("unsafe_path"),
        `${JSON.stringify(members)}`,
      );
      assert.deepEqual(bmc.requests.map((r) => r.target), ["/redfish/v1/Systems"], member);
    }
  }
  // one trailing '/' (as some BMCs write members) is the same system
  bmc.requests.length = 0;
  bmc.serve({
    "/redfish/v1/Systems": { Members: [{ "@odata.id": `${S1}/` }] },
    [S1]: computerSystem({ PowerState: "Off", SerialNumber: SERIAL }),
  });
  assert.deepEqual(await client(bmc.endpoint).readPower(CREDENTIALS, signal()), {
    state: "off",
    detail: 'PowerState "Off"',
    system: S1,
  });
});

Deno.test("a configured system path that is not one safe segment is never requested", async () => {
  await using bmc = startFakeRedfish(SERIAL);
  for (
    const system of [
      "/redfish/v1/Systems/..",
      "/redfish/v1/Systems/.",
      "/redfish/v1/Systems/%2e%2e",
    ]
  ) {
    bmc.requests.length = 0;
    await assert.rejects(
      client(bmc.endpoint, system).readPower(CREDENTIALS, signal()),
      reason("unsafe_path"),
    );
    assert.deepEqual(bmc.requests, [], system);
  }
});

Deno.test("identity: a system reporting another SerialNumber or AssetTag is not this machine's, whether named or discovered", async () => {
  await using bmc = startFakeRedfish(SERIAL);
  const other = { PowerState: "Off", SerialNumber: "SN-OTHER" };
  const cases: [string, Record<string, unknown>, string | undefined][] = [
    ["named, other serial", other, S1],
    ["discovered, the only member, other serial", other, undefined],
    ["named, other asset tag, no serial", { PowerState: "Off", AssetTag: "TAG-9" }, S1],
  ];
  for (const [what, fields, system] of cases) {
    bmc.requests.length = 0;
    bmc.serve({
      "/redfish/v1/Systems": { Members: [{ "@odata.id": S1 }] },
      [S1]: computerSystem({ ...fields, UUID: "6ad1b1a0-0000-4000-8000-000000000001" }),
    });
    const c = client(bmc.endpoint, system);
    await assert.rejects(c.readPower(CREDENTIALS, signal()), (error) => {
      assert.ok(error instanceof RedfishError, `${what}: ${error}`);
      assert.equal(error.reason, "identity", `${what}: ${error.message}`);
      assert.match(error.message, /not the machine's id "SN-W1"/, what);
      return true;
    });
    await assert.rejects(c.forceOff(CREDENTIALS, signal()), reason("identity"), what);
    assert.deepEqual(bmc.requests.filter((r) => r.method === "POST"), [], what);
  }
  // a machine without an id is compared by its name, and the message says so
  const named = new RedfishClient({
    endpoint: bmc.endpoint,
    system: S1,
    serial: "w-1",
    serialIsName: true,
    timeoutMs: 10_000,
  });
  await assert.rejects(
    named.readPower(CREDENTIALS, signal()),
    /reports AssetTag "TAG-9", not the machine's id "w-1" \(its name: no id is set\)/,
  );
  // the same system with the machine's serial (any ASCII case, padded), asset tag or UUID is
  // its own; one that reports none (or a firmware placeholder) contradicts nothing
  const own: Record<string, unknown>[] = [
    { SerialNumber: " sn-w1 " },
    { SerialNumber: "SN-OTHER-CHASSIS", AssetTag: SERIAL },
    { SerialNumber: "SN-OTHER", UUID: SERIAL },
    {},
    { SerialNumber: null, AssetTag: "" },
    { SerialNumber: "To Be Filled By O.E.M.", AssetTag: "Default string" },
  ];
  for (const fields of own) {
    bmc.serve({ [S1]: computerSystem({ PowerState: "Off", ...fields }) });
    assert.equal(
      (await client(bmc.endpoint, S1).readPower(CREDENTIALS, signal())).state,
      "off",
      JSON.stringify(fields),
    );
  }
});

Deno.test("discovery: several members are told apart by identity, a renumbered BMC is noticed", async () => {
  await using bmc = startFakeRedfish(SERIAL);
  const members = { Members: [{ "@odata.id": S1 }, { "@odata.id": S2 }] };
  bmc.serve({
    "/redfish/v1/Systems": members,
    [S1]: computerSystem({ PowerState: "On", SerialNumber: "SN-OTHER" }),
    [S2]: computerSystem({ PowerState: "Off", SerialNumber: SERIAL }),
  });
  const c = client(bmc.endpoint);
  assert.deepEqual(await c.readPower(CREDENTIALS, signal()), {
    state: "off",
    detail: 'PowerState "Off"',
    system: S2,
  });
  // every member read once, then only the one found
  await c.readPower(CREDENTIALS, signal());
  assert.deepEqual(bmc.requests.map((r) => r.target), ["/redfish/v1/Systems", S1, S2, S2]);
  // the systems swap: the found path now reports another serial
  bmc.serve({
    "/redfish/v1/Systems": members,
    [S1]: computerSystem({ PowerState: "On", SerialNumber: SERIAL }),
    [S2]: computerSystem({ PowerState: "Off", SerialNumber: "SN-OTHER" }),
  });
  await assert.rejects(c.readPower(CREDENTIALS, signal()), reason("identity"));
  assert.equal((await c.readPower(CREDENTIALS, signal())).system, S1);
  // two members without any identity, or two with the machine's: which one is unknown
  for (const [a, b] of [[{}, {}], [{ SerialNumber: SERIAL }, { AssetTag: SERIAL }]]) {
    bmc.serve({
      "/redfish/v1/Systems": members,
      [S1]: computerSystem({ PowerState: "Off", ...a }),
      [S2]: computerSystem({ PowerState: "Off", ...b }),
    });
    await assert.rejects(
      client(bmc.endpoint).readPower(CREDENTIALS, signal()),
      reason("no_system"),
    );
  }
});

Deno.test("discovery: every page is read (Members@odata.nextLink); too many systems, a short list or an odd next page is refused", async () => {
  await using bmc = startFakeRedfish(SERIAL);
  // the machine's system is on the third page
  bmc.serve({
    "/redfish/v1/Systems": {
      Members: [{ "@odata.id": S1 }],
      "Members@odata.count": 3,
      "Members@odata.nextLink": "/redfish/v1/Systems?$skip=1",
    },
    "/redfish/v1/Systems?$skip=1": {
      Members: [{ "@odata.id": S2 }],
      "Members@odata.nextLink": "/redfish/v1/Systems?$skip=2",
    },
    "/redfish/v1/Systems?$skip=2": { Members: [{ "@odata.id": "/redfish/v1/Systems/3" }] },
    [S1]: computerSystem({ PowerState: "On", SerialNumber: "SN-A" }),
    [S2]: computerSystem({ PowerState: "On", SerialNumber: "SN-B" }),
    "/redfish/v1/Systems/3": computerSystem({ PowerState: "Off", SerialNumber: SERIAL }),
  });
  assert.equal(
    (await client(bmc.endpoint).readPower(CREDENTIALS, signal())).system,
    "/redfish/v1/Systems/3",
  );
  // the first page alone, with one member: not taken as "the only system"
  bmc.serve({
    "/redfish/v1/Systems": {
      Members: [{ "@odata.id": S1 }],
      "Members@odata.nextLink": "/redfish/v1/Systems?page=2",
    },
    "/redfish/v1/Systems?page=2": { Members: [{ "@odata.id": S2 }] },
    [S1]: computerSystem({ PowerState: "Off" }),
    [S2]: computerSystem({ PowerState: "On" }),
  });
  await assert.rejects(client(bmc.endpoint).readPower(CREDENTIALS, signal()), reason("no_system"));
  // a collection that counts more members than it lists
  bmc.serve({
    "/redfish/v1/Systems": { Members: [{ "@odata.id": S1 }], "Members@odata.count": 2 },
    [S1]: computerSystem({ PowerState: "Off" }),
  });
  await assert.rejects(client(bmc.endpoint).readPower(CREDENTIALS, signal()), reason("no_system"));
  // more systems than discovery reads: refused, none read
  const many = Array.from(
    { length: MAX_DISCOVERED_SYSTEMS + 1 },
    (_, i) => ({ "@odata.id": `/redfish/v1/Systems/n${i}` }),
  );
  bmc.requests.length = 0;
  bmc.serve({ "/redfish/v1/Systems": { Members: many } });
  await assert.rejects(client(bmc.endpoint).readPower(CREDENTIALS, signal()), reason("no_system"));
  assert.deepEqual(bmc.requests.map((r) => r.target), ["/redfish/v1/Systems"]);
  // a next page outside the collection, and one that loops
  for (
    const link of [
      "/redfish/v1/Managers?$skip=1",
      "/redfish/v1/Systems/../Managers",
      "https://evil.invalid/redfish/v1/Systems?$skip=1",
    ]
  ) {
    bmc.requests.length = 0;
    bmc.serve({
      "/redfish/v1/Systems": {
        Members: [{ "@odata.id": S1 }],
        "Members@odata.nextLink": link,
      },
      [S1]: computerSystem({ PowerState: "Off", SerialNumber: SERIAL }),
    });
    await assert.rejects(
      client(bmc.endpoint).readPower(CREDENTIALS, signal()),
      reason("unsafe_path"),
      link,
    );
    assert.deepEqual(bmc.requests.map((r) => r.target), ["/redfish/v1/Systems"], link);
  }
  bmc.serve({
    "/redfish/v1/Systems": {
      Members: [{ "@odata.id": S1 }],
      "Members@odata.nextLink": "/redfish/v1/Systems",
    },
  });
  await assert.rejects(
    client(bmc.endpoint).readPower(CREDENTIALS, signal()),
    reason("not_redfish"),
  );
});
