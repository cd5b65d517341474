/**
 * `[machines.bmc] system` is one safe path segment under /redfish/v1/Systems/, and two machines
 * may not share one BMC system: `check` refuses both, at each machine's line.
 */
import assert from "node:assert/strict";
import { ConfigError } from "../../../src/config/config_error.ts";
import { parseConfig } from "../../../src/config/parse_config.ts";
import { parseSystemPath, systemIdProblem } from "../../../src/config/bmc_system_path.ts";

/** One machine with a `[machines.bmc]` table (no file is read: parseConfig checks no files). */
function machine(name: string, endpoint: string, system?: string): string {
  return [
    "[[machines]]",
    `name = "${name}"`,
    "[machines.bmc]",
    `endpoint = "${endpoint}"`,
    ...(system === undefined ? [] : [`system = "${system}"`]),
    'username_file = "/etc/keelson/bmc/u"',
    'password_file = "/etc/keelson/bmc/p"',
    "",
  ].join("\n");
}

function issuesOf(text: string): { line?: number; path: string; message: string }[] {
  try {
    parseConfig(text, "keelson.toml");
    return [];
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.issues.map((i) => ({
      ...(i.line !== undefined ? { line: i.line } : {}),
      path: i.path,
      message: i.message,
    }));
  }
}

/** The 1-based line of the `nth` line starting with `prefix`. */
function lineOf(text: string, prefix: string, nth = 0): number {
  const lines = text.split("\n");
  return lines.map((l, i) => [l, i] as const).filter(([l]) => l.startsWith(prefix))[nth]![1] + 1;
}

Deno.test("[machines.bmc] system: '.', '..', empty and anything a URL parser or server reads as another path are refused", () => {
  const bad = [
    "/redfish/v1/Systems/..",
    "/redfish/v1/Systems/.",
    "/redfish/v1/Systems/",
    "/redfish/v1/Systems/%2e%2e",
    "/redfish/v1/Systems/1%2F..%2F2",
    "/redfish/v1/Systems/1/../2",
    "/redfish/v1/Systems/1?x",
    "/redfish/v1/Systems/1#x",
    "/redfish/v1/Systems/1\\t",
    "/redfish/v1/Managers/1",
    "/redfish/v1/Systems/" + "x".repeat(129),
  ];
  for (const system of bad) {
    const text = machine("w-1", "https://10.0.9.11", system);
    const issues = issuesOf(text);
    assert.equal(issues.length, 1, `${system}: ${JSON.stringify(issues)}`);
    assert.equal(issues[0]!.path, "machines[0].bmc.system");
    assert.equal(issues[0]!.line, lineOf(text, "system ="));
    assert.match(issues[0]!.message, /Redfish system path such as "\/redfish\/v1\/Systems\/1"/);
  }
  assert.match(
    issuesOf(machine("w-1", "https://h", "/redfish/v1/Systems/.."))[0]!.message,
    /a step/,
  );
  for (const good of ["1", "System.Embedded.1", "437XR1138R2", "...", "a:b@c~d_e-f"]) {
    assert.equal(systemIdProblem(good), undefined, good);
    assert.deepEqual(parseSystemPath(`/redfish/v1/Systems/${good}`), { id: good });
    assert.deepEqual(issuesOf(machine("w-1", "https://h", `/redfish/v1/Systems/${good}`)), []);
  }
});

Deno.test("check refuses two machines on one BMC system (same system, or discovery), at both lines", () => {
  const shared: [string, string | undefined, string, string | undefined][] = [
    ["https://10.0.9.11", "/redfish/v1/Systems/1", "https://10.0.9.11", "/redfish/v1/Systems/1"],
    // the same BMC written differently: host case, default port, trailing dot, IPv6 form
    [
      "https://BMC-1.example.net:443",
      "/redfish/v1/Systems/1",
      "https://bmc-1.example.net.",
      "/redfish/v1/Systems/1",
    ],
    [
      "https://[fd00:0::9]",
      "/redfish/v1/Systems/A",
      "https://[fd00::9]:443",
      "/redfish/v1/Systems/a",
    ],
    // discovery could take any system of the BMC
    ["https://10.0.9.11", undefined, "https://10.0.9.11", "/redfish/v1/Systems/2"],
    ["https://10.0.9.11", undefined, "https://10.0.9.11", undefined],
  ];
  for (const [endpoint1, system1, endpoint2, system2] of shared) {
    const text = machine("w-1", endpoint1, system1) +
      machine("w-2", endpoint2, system2);
    const issues = issuesOf(text);
    const what = JSON.stringify([endpoint1, system1, endpoint2, system2]);
    assert.equal(issues.length, 2, `${what}: ${JSON.stringify(issues)}`);
    const key1 = system1 === undefined ? "endpoint" : "system";
    const key2 = system2 === undefined ? "endpoint" : "system";
    assert.deepEqual(
      issues.map((i) => [i.path, i.line]),
      [
        [`machines[0].bmc.${key1}`, lineOf(text, `${key1} =`, 0)],
        [`machines[1].bmc.${key2}`, lineOf(text, `${key2} =`, key1 === key2 ? 1 : 0)],
      ],
      what,
    );
    assert.match(issues[0]!.message, /as machines\[1\] \("w-2", .*\) does: one system's power/);
    assert.match(issues[1]!.message, /as machines\[0\] \("w-1", .*\) does/);
  }
  // different systems of one BMC, or the same path on two BMCs: one machine each
  const apart = [
    machine("w-1", "https://10.0.9.11", "/redfish/v1/Systems/1") +
    machine("w-2", "https://10.0.9.11", "/redfish/v1/Systems/2"),
    machine("w-1", "https://10.0.9.11", "/redfish/v1/Systems/1") +
    machine("w-2", "https://10.0.9.12", "/redfish/v1/Systems/1"),
    machine("w-1", "https://10.0.9.11:8443") + machine("w-2", "https://10.0.9.11"),
  ];
  for (const text of apart) assert.deepEqual(issuesOf(text), [], text);
});
