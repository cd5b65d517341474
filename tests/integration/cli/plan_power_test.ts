/**
 * `keelson plan` shows the machines' power the leader's heartbeat carries, in both modes, text
 * and JSON, with each age taken from the heartbeat Lease's own renewal (not this clock).
 */
import assert from "node:assert/strict";
import type { V1Lease } from "@kubernetes/client-node";
import { IN_FORCE, RETIRE_N2, snapshotJson } from "../../unit/plan/_live_plan_fixture.ts";
import type { HostReport } from "../../../src/status/host_report.ts";
import { heartbeatLease, report } from "../../unit/status/_leases.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

async function runPlan(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "--allow-sys", "main.ts", "plan", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, out: decode(output.stdout), err: decode(output.stderr) };
}

/**
 * n-1's heartbeat, renewed in 2031 by its clock (years from this one: an age from this process's
 * clock would be absurd), reporting n-2 off for 3m20s and w-9 unknown.
 */
function poweredHeartbeat(): V1Lease {
  const rep: HostReport = {
    ...report("n-1", []),
    power: [
      {
        machine: "w-9",
        state: "unknown",
        since: "2031-05-05T08:59:00.000Z",
        detail: "https://10.0.9.19/redfish/v1/Systems/1: no answer within 5 s",
      },
      {
        machine: "n-2",
        state: "off",
        since: "2031-05-05T08:56:40.000Z",
        answered: "2031-05-05T08:59:57.500Z",
        detail: 'PowerState "Off"',
      },
    ],
  };
  const lease = heartbeatLease("n-1", rep);
  lease.spec!.renewTime = "2031-05-05T09:00:00.000000Z" as unknown as Date;
  return { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...lease };
}

function stateWith(leases: V1Lease[]): string {
  const list = JSON.parse(snapshotJson());
  list.items.push(...leases);
  return JSON.stringify(list);
}

Deno.test("plan --state: the leader's heartbeat's power, aged by its own renewal, in text and JSON", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/keelson.toml`, IN_FORCE);
    await Deno.writeTextFile(`${dir}/state.json`, stateWith([poweredHeartbeat()]));
    const args = ["-c", `${dir}/keelson.toml`, "-s", `${dir}/state.json`];

    const text = await runPlan(args);
    assert.equal(text.code, 0, text.err);
    assert.match(
      text.out,
      /\nMachine power \(from n-1's heartbeat, renewed latest; ages as of its last renewal, 2031-05-05T09:00:00\.000Z by its own clock\):\n {2}n-2 {2}off {6}for 3m20s, BMC last answered 2s before: PowerState "Off"\n {2}w-9 {2}unknown {2}for 1m00s, BMC never answered: https:\/\/10\.0\.9\.19\//,
    );

    const json = await runPlan([...args, "-o", "json"]);
    assert.equal(json.code, 0, json.err);
    const doc = JSON.parse(json.out);
    assert.deepEqual(doc.power, {
      from: "n-1",
      chosen: "latest-renewal",
      renewTime: "2031-05-05T09:00:00.000Z",
      alsoReporting: [],
      omitted: 0,
      machines: [
        {
          machine: "n-2",
          state: "off",
          ageMs: 200_000,
          answerAgeMs: 2_500,
          detail: 'PowerState "Off"',
        },
        {
          machine: "w-9",
          state: "unknown",
          ageMs: 60_000,
          answerAgeMs: null,
          detail: "https://10.0.9.19/redfish/v1/Systems/1: no answer within 5 s",
        },
      ],
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("plan --state: without heartbeats, the text is as before and JSON power is null", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/keelson.toml`, IN_FORCE);
    await Deno.writeTextFile(`${dir}/state.json`, snapshotJson());
    const args = ["-c", `${dir}/keelson.toml`, "-s", `${dir}/state.json`];
    const text = await runPlan(args);
    assert.equal(text.code, 0, text.err);
    assert.doesNotMatch(text.out, /power/i);
    const json = await runPlan([...args, "-o", "json"]);
    assert.equal(JSON.parse(json.out).power, null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("plan --current: the power under the heading (text) and as power (JSON); a hostile report is not shown", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/keelson.toml`, IN_FORCE);
    await Deno.writeTextFile(`${dir}/retire.toml`, RETIRE_N2);
    // n-3's report hides an escape sequence in a detail: the strict schema refuses it
    const hostile = heartbeatLease(
      "n-3",
      JSON.stringify({
        ...report("n-3", []),
        power: [{
          machine: "n-2",
          state: "on",
          since: "2031-05-05T08:00:00.000Z",
          detail: "\x1b]0;owned\x07\x1b[2J",
        }],
      }),
    );
    hostile.spec!.renewTime = "2031-05-05T10:00:00.000Z" as unknown as Date;
    await Deno.writeTextFile(
      `${dir}/state.json`,
      stateWith([poweredHeartbeat(), { kind: "Lease", ...hostile }]),
    );
    const args = ["-c", `${dir}/retire.toml`, "-s", `${dir}/state.json`, "--current"];

    const text = await runPlan([...args, `${dir}/keelson.toml`]);
    assert.equal(text.code, 2, text.err);
    assert.match(
      text.out,
      /^Plan: .*\nCluster: .*\n\nMachine power \(from n-1's heartbeat, renewed latest; .*\n {2}n-2 {2}off {6}for 3m20s, BMC last answered 2s before: PowerState "Off"\n/,
    );
    assert.ok(!text.out.includes("owned") && !text.out.includes("\x1b"), text.out);

    const json = await runPlan([...args, `${dir}/keelson.toml`, "-o", "json"]);
    assert.equal(json.code, 2, json.err);
    const doc = JSON.parse(json.out);
    assert.equal(doc.read.heartbeats, 2);
    assert.equal(doc.power.from, "n-1");
    assert.deepEqual(
      doc.power.machines.map((m: { machine: string; ageMs: number }) => [m.machine, m.ageMs]),
      [["n-2", 200_000], ["w-9", 60_000]],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
