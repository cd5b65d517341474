/** The `-o json` documents of plan, check and version: flat, stable keys, counts as numbers. */
import assert from "node:assert/strict";
import { planJson } from "../../../src/plan/plan_json.ts";
import { planAllocations } from "../../../providers/baremetal/ipam/plan_allocations.ts";
import { jsonCount, toJsonText } from "../../../src/text/json_text.ts";
import { configWith, svc } from "../../unit/providers/baremetal/ipam/_helpers.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

async function cli(args: string[]): Promise<{ code: number; json: unknown; err: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "--allow-sys", "main.ts", ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(output.stdout);
  const err = new TextDecoder().decode(output.stderr);
  return { code: output.code, json: out.trim() === "" ? undefined : JSON.parse(out), err };
}

Deno.test("jsonCount(): numbers up to 2^53, decimal text above", () => {
  assert.equal(jsonCount(14n), 14);
  assert.equal(jsonCount(BigInt(Number.MAX_SAFE_INTEGER)), Number.MAX_SAFE_INTEGER);
  assert.equal(jsonCount(2n ** 53n), "9007199254740992");
  assert.equal(jsonCount(2n ** 64n), "18446744073709551616");
  assert.equal(jsonCount(3), 3);
  assert.equal(
    toJsonText({ a: 2n ** 64n, b: 5n }),
    '{\n  "a": "18446744073709551616",\n  "b": 5\n}\n',
  );
});

Deno.test("plan -o json is one flat document: services a list, pools with numeric totals and IPv4/IPv6", async () => {
  const { code, json } = await cli([
    "plan",
    "--config",
    "deploy/examples/keelson.toml",
    "--state",
    "deploy/examples/cluster-state.yaml",
    "-o",
    "json",
  ]);
  assert.equal(code, 0);
  const doc = json as Record<string, unknown>;
  assert.deepEqual(Object.keys(doc), [
    "nodes",
    "services",
    "otherClass",
    "orphans",
    "pools",
    "problems",
    "power",
    "servingHosts",
  ]);
  assert.ok(Array.isArray(doc.services), "services is the list itself, not an object holding one");
  // each pool's serving hosts, with the snapshot's Nodes' readiness
  const serving = doc.servingHosts as {
    pools: { pool: string; proposed: string[]; hosts: { host: string; node: string }[] }[];
    problems: string[];
  };
  assert.deepEqual(serving.pools.map((p) => p.pool), ["public", "public-bgp", "internal-v6"]);
  for (const pool of serving.pools) {
    assert.deepEqual(Object.keys(pool), [
      "pool",
      "announce",
      "inForce",
      "proposed",
      "hosts",
      "changed",
    ]);
    assert.ok(pool.hosts.every((h) => ["True", "False", "Unknown", "absent"].includes(h.node)));
  }
  assert.deepEqual(serving.problems, []);
  for (const pool of doc.pools as Record<string, unknown>[]) {
    assert.deepEqual(Object.keys(pool), ["pool", "family", "total", "used"]);
    assert.ok(pool.family === "IPv4" || pool.family === "IPv6", String(pool.family));
    assert.equal(typeof pool.total, "number");
    assert.equal(typeof pool.used, "number");
  }
  for (const service of doc.services as Record<string, unknown>[]) {
    for (const key of ["serviceKey", "outcome", "ips", "pool", "pools"]) {
      assert.ok(key in service, `${key} missing in ${JSON.stringify(service)}`);
    }
  }
});

Deno.test("planJson(): an IPv6 pool over 2^53 addresses has its total as decimal text; pending Services have pool null", () => {
  const config = configWith([{ name: "v6", addresses: ["2001:db8::/64"] }]);
  const plan = planAllocations(config, [svc({ key: "a/s", loadBalancerIP: "192.0.2.1" })]);
  const doc = JSON.parse(toJsonText(planJson([], plan)));
  assert.deepEqual(doc.pools, [
    { pool: "v6", family: "IPv6", total: "18446744073709551615", used: 0 },
  ]);
  assert.equal(doc.services[0].outcome, "pending");
  assert.equal(doc.services[0].pool, null);
});

Deno.test("check -o json: ok with no issues, or every issue with file, line, path and message", async () => {
  const good = await cli(["check", "--config", "deploy/examples/keelson.toml", "-o", "json"]);
  assert.equal(good.code, 0);
  assert.deepEqual(good.json, { ok: true, file: "deploy/examples/keelson.toml", issues: [] });
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/bad.toml`;
    await Deno.writeTextFile(
      file,
      '[keepalived]\nenabled = false\n[[machines]]\nname = "w-1"\n[[pools]]\nname = "p"\naddresses = ["10.0.0.300/24"]\n',
    );
    const bad = await cli(["check", "--config", file, "-o", "json"]);
    assert.equal(bad.code, 1);
    const doc = bad.json as { ok: boolean; file: string; issues: Record<string, unknown>[] };
    assert.equal(doc.ok, false);
    assert.equal(doc.file, file);
    assert.deepEqual(Object.keys(doc.issues[0]!), ["file", "line", "path", "message"]);
    assert.equal(doc.issues[0]!.line, 7);
    assert.equal(doc.issues[0]!.path, "pools[0].addresses[0]");
    assert.match(String(doc.issues[0]!.message), /not an IP range/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("version -o json names version, commit, build date, deno and target; unstamped says unknown", async () => {
  const { code, json } = await cli(["version", "-o", "json"]);
  assert.equal(code, 0);
  const doc = json as Record<string, string>;
  assert.deepEqual(Object.keys(doc), ["version", "commit", "buildDate", "deno", "target"]);
  assert.equal(doc.commit, "unknown");
  assert.equal(doc.buildDate, "unknown");
  assert.equal(doc.deno, Deno.version.deno);
});

Deno.test("scripts/stamp_version.sh writes the commit and build date where the placeholders are", async () => {
  const dir = await Deno.makeTempDir({ dir: `${ROOT}` });
  try {
    const copy = `${dir}/version_info.ts`;
    await Deno.copyFile(`${ROOT}src/version_info.ts`, copy);
    const run = await new Deno.Command("bash", {
      args: [`${ROOT}scripts/stamp_version.sh`, copy],
      env: { SOURCE_DATE_EPOCH: "1767225600" },
      stderr: "piped",
    }).output();
    assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
    const info = await import(`file://${copy}`);
    assert.equal(info.BUILD_DATE, "2026-01-01T00:00:00Z");
    const head = new TextDecoder().decode(
      (await new Deno.Command("git", { args: ["-C", ROOT, "rev-parse", "HEAD"], stdout: "piped" })
        .output()).stdout,
    ).trim();
    assert.match(info.COMMIT, new RegExp(`^${head}(-dirty)?$`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
