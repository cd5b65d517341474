import assert from "node:assert/strict";
import {
  COMMENTED,
  IN_FORCE,
  RETIRE_N2,
  SHRINK_POOL,
  snapshotJson,
} from "../../unit/plan/_live_plan_fixture.ts";
import { planCommand } from "../../../src/cli/plan.ts";
import { UsageError } from "../../../src/cli/usage_error.ts";

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

/** Writes the fixture's files; returns their paths. */
async function files(dir: string) {
  const paths = {
    current: `${dir}/keelson.toml`,
    retire: `${dir}/retire.toml`,
    shrink: `${dir}/shrink.toml`,
    same: `${dir}/same.toml`,
    state: `${dir}/state.json`,
  };
  await Deno.writeTextFile(paths.current, IN_FORCE);
  await Deno.writeTextFile(paths.retire, RETIRE_N2);
  await Deno.writeTextFile(paths.shrink, SHRINK_POOL);
  await Deno.writeTextFile(paths.same, COMMENTED);
  await Deno.writeTextFile(paths.state, snapshotJson());
  return paths;
}

Deno.test("plan --current: retiring the machine of a NotReady Node deletes it, exit 2", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = await files(dir);
    const { code, out } = await runPlan([
      "-c",
      p.retire,
      "-s",
      p.state,
      "--current",
      p.current,
      "-o",
      "json",
    ]);
    assert.equal(code, 2);
    const plan = JSON.parse(out);
    assert.equal(plan.changes, true);
    assert.deepEqual(plan.nodes.map((n: { node: string }) => n.node), ["n-2"]);
    assert.deepEqual(plan.nodes[0].inForce, { machineState: "active", actions: [] });
    assert.deepEqual(plan.nodes[0].proposed, {
      machineState: "retired",
      actions: [{ action: "delete", reason: "its machine is retired in the inventory" }],
    });
    assert.deepEqual([plan.services, plan.routes, plan.refused], [[], [], []]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("plan --current: shrinking a pool under a held address strands it and is refused, exit 2", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = await files(dir);
    const { code, out } = await runPlan(["-c", p.shrink, "-s", p.state, "--current", p.current]);
    assert.equal(code, 2);
    assert.match(out, /A reload of this inventory would be refused/);
    assert.match(out, /strand 1 address .*: 192\.0\.2\.14 \(service "shop\/db"\)/);
    assert.match(
      out,
      /^ {2}shop\/db {2}stranded: keeps 192\.0\.2\.14, which no pool of the proposed inventory offers$/m,
    );
    // shop/web keeps 192.0.2.1, inside the smaller pool: not listed
    assert.doesNotMatch(out, /shop\/web/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("plan --current: an edit that changes nothing exits 0; an unreadable inventory in force exits 1", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = await files(dir);
    const same = await runPlan(["-c", p.same, "-s", p.state, "--current", p.current]);
    assert.equal(same.code, 0, same.err);
    assert.match(same.out, /No changes: the proposed inventory does what the one in force does\./);
    const missing = await runPlan(["-c", p.same, "-s", p.state, "--current", `${dir}/nope.toml`]);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /nope\.toml/);
    assert.equal(missing.out, "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("plan --current: a pool moved to other hosts by served_by is a change, exit 2, in text and JSON", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = await files(dir);
    const moved = `${dir}/moved.toml`;
    await Deno.writeTextFile(
      moved,
      IN_FORCE.replace(/^(addresses = .*)$/m, '$1\n[pools.served_by]\nmachines = ["n-1"]'),
    );
    const text = await runPlan(["-c", moved, "-s", p.state, "--current", p.current]);
    assert.equal(text.code, 2, text.err);
    assert.match(
      text.out,
      /^Serving hosts that would change \(1\):\n {2}lan \(VRRP\): none -> n-1$/m,
    );
    assert.match(
      text.out,
      /^Changes: 0 Nodes, 0 pod routes, 0 Services, 1 pool served by other hosts\.$/m,
    );
    const json = await runPlan(["-c", moved, "-s", p.state, "--current", p.current, "-o", "json"]);
    assert.equal(json.code, 2, json.err);
    const plan = JSON.parse(json.out);
    assert.equal(plan.changes, true);
    assert.deepEqual(
      plan.servingHosts.pools.map((s: { pool: string; inForce: string[]; proposed: string[] }) => [
        s.pool,
        s.inForce,
        s.proposed,
      ]),
      [["lan", [], ["n-1"]]],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("plan: --state and --kubeconfig exclude each other; --context needs --kubeconfig", async () => {
  await assert.rejects(
    planCommand(["-c", "x.toml", "-s", "s.yaml", "--kubeconfig", "k"]),
    (e: unknown) => e instanceof UsageError && /not both/.test(e.message),
  );
  await assert.rejects(
    planCommand(["-c", "x.toml", "-s", "s.yaml", "--context", "c"]),
    (e: unknown) => e instanceof UsageError && /--context needs --kubeconfig/.test(e.message),
  );
  await assert.rejects(
    planCommand(["-c", "x.toml", "--kubeconfig", "k", "--timeout", "0s"]),
    (e: unknown) => e instanceof UsageError && /--timeout/.test(e.message),
  );
});

Deno.test('plan: a wrong command line exits 1, never 2 (which means "changes" to a CI gate)', async () => {
  const { dispatch } = await import("../../../src/cli/dispatch.ts");
  assert.equal(await dispatch(["plan", "-c", "x.toml", "--no-such-flag"]), 1);
  assert.equal(await dispatch(["plan", "-c", "x.toml", "-s", "s.yaml", "--kubeconfig", "k"]), 1);
  // other commands keep 2 for a wrong command line
  assert.equal(await dispatch(["check", "--no-such-flag"]), 2);
});

Deno.test("plan --current none: against the cluster as it stands; the inventory that keeps every address exits 0, one that strands one exits 2", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const p = await files(dir);
    const kept = await runPlan(["-c", p.current, "-s", p.state, "--current", "none"]);
    assert.equal(kept.code, 0, kept.out + kept.err);
    assert.match(kept.out, /against the cluster as it stands \(no inventory in force\)/);
    const shrunk = await runPlan([
      "-c",
      p.shrink,
      "-s",
      p.state,
      "--current",
      "none",
      "-o",
      "json",
    ]);
    assert.equal(shrunk.code, 2, shrunk.err);
    const diff = JSON.parse(shrunk.out);
    assert.equal(diff.current, "none");
    assert.deepEqual(
      diff.services.map((s: { serviceKey: string; change: string }) => [s.serviceKey, s.change]),
      [["shop/db", "stranded"]],
    );
    assert.deepEqual(diff.refused, []); // no reload: nothing is in force to refuse it
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
