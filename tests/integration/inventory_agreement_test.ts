/**
 * One inventory on every host, against a real kube-apiserver: two agents run as they ship, cp-1
 * and cp-2, on two different inventory files (cp-2's has one more pool). Each heartbeat carries
 * the SHA-256 of its file (what `sha256sum` prints); the leader raises an `InventoryMismatch`
 * Warning on the other host's heartbeat Lease once the difference lasts 30 s, exports
 * `keelson_inventory_disagreement 1`, and `keelson status` names the host on another inventory
 * (exit 3). Fixed (the same file on both), all three clear.
 *
 * Also measured: how long `keelson status` takes to answer on this healthy two-host cluster, where
 * the leader publishes its judgement of the heartbeats (`RESULT status_answer_ms`).
 */
import assert from "node:assert/strict";
import { statusJson, type StatusRun } from "./_harness/status_cli.ts";
import type { CoreV1Event } from "@kubernetes/client-node";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { type KeelsonProcess, startKeelson } from "./_harness/keelson_process.ts";
import { waitFor } from "./_harness/wait.ts";

/** Prints a measured figure (a `RESULT` line) on stderr. */
function report(line: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(`${line}\n`));
}

const INVENTORY = `
[cluster]
name = "inventories"

[keepalived]
enabled = false

[leader_election]
lease_duration = "6s"
renew_deadline = "4s"
retry_period = "1s"

[[pools]]
name = "lan"
addresses = ["192.0.2.0/28"]

[[machines]]
name = "cp-1"
role = "control-plane"

[[machines]]
name = "cp-2"
role = "control-plane"
`;
const OTHER = `${INVENTORY}
[[pools]]
name = "extra"
addresses = ["198.51.100.0/28"]
`;

async function sha256(text: string): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("");
}

integrationTest(
  "two hosts on different inventory files: InventoryMismatch Warning, keelson_inventory_disagreement and keelson status name it; the same file clears them",
  async () => {
    await using cp = await startControlPlane();
    const dir = await Deno.makeTempDir({ prefix: "keelson-inventories-" });
    const agents: KeelsonProcess[] = [];
    try {
      const files = { "cp-1": `${dir}/cp-1.toml`, "cp-2": `${dir}/cp-2.toml` };
      await Deno.writeTextFile(files["cp-1"], INVENTORY);
      await Deno.writeTextFile(files["cp-2"], OTHER);
      for (const host of ["cp-1", "cp-2"] as const) {
        agents.push(
          await startKeelson({
            configPath: files[host],
            kubeconfig: cp.tokenKubeconfigPath,
            host,
            dir,
            name: host,
          }),
        );
      }
      const logs = async () =>
        (await Promise.all(agents.map(async (a) => (await a.log()).slice(-3000)))).join("\n---\n");
      const leader = await waitFor(async () => {
        const values = await Promise.all(
          agents.map((a) => a.metric('leader_election_master_status{name="keelson"}')),
        );
        return values.filter((v) => v === 1).length === 1 ? agents[values.indexOf(1)] : undefined;
      }, { timeoutMs: 60_000, message: "one leader" });
      const leaderHost = agents.indexOf(leader) === 0 ? "cp-1" : "cp-2";
      const otherHost = leaderHost === "cp-1" ? "cp-2" : "cp-1";
      const digests = { "cp-1": await sha256(INVENTORY), "cp-2": await sha256(OTHER) };

      // the metric at once (both heartbeats renewed under the leader's eyes), the Event after 30 s
      const began = performance.now();
      await waitFor(async () => (await leader.metric("keelson_inventory_disagreement")) === 1, {
        timeoutMs: 60_000,
        message: "keelson_inventory_disagreement 1",
      }).catch(async (e) => {
        throw new Error(`${e}\n${await logs()}`);
      });
      const event = await waitFor(async () => {
        const list = await cp.requestOk<{ items: CoreV1Event[] }>(
          "GET",
          `/api/v1/namespaces/kube-system/events?fieldSelector=reason%3DInventoryMismatch`,
        );
        return list.items.find((e) => e.involvedObject?.name === `keelson-host-${otherHost}`);
      }, { timeoutMs: 90_000, intervalMs: 500, message: "an InventoryMismatch Event" });
      report(
        `RESULT inventory_mismatch_event_ms=${(performance.now() - began).toFixed(0)} ` +
          `(grace 30 s) message="${event.message}"`,
      );
      assert.equal(event.type, "Warning");
      assert.equal(event.involvedObject?.kind, "Lease");
      assert.match(
        event.message ?? "",
        new RegExp(
          `^Host ${otherHost} runs another inventory \\(sha256 ${
            digests[otherHost].slice(0, 12)
          }\\) than the leader ${leaderHost} \\(sha256 ${digests[leaderHost].slice(0, 12)}\\)`,
        ),
      );

      // keelson status names it, with the digests sha256sum prints
      const seen = await statusJson(cp.tokenKubeconfigPath, ["--config", files[leaderHost]]);
      assert.equal(seen.code, 3);
      assert.deepEqual(seen.status.inventory.others.map((o) => [o.host, o.sha256]), [
        [otherHost, digests[otherHost]],
      ]);
      assert.ok(
        seen.status.problems.some((p) => p.startsWith(`host ${otherHost} runs another inventory`)),
        JSON.stringify(seen.status.problems),
      );

      // the same file on both hosts: every sign clears
      await agents[otherHost === "cp-1" ? 0 : 1]!.reload(
        files[otherHost],
        leaderHost === "cp-1" ? INVENTORY : OTHER,
      );
      await waitFor(async () => (await leader.metric("keelson_inventory_disagreement")) === 0, {
        timeoutMs: 30_000,
        message: "keelson_inventory_disagreement 0",
      });
      // a healthy cluster: status answers from the leader's published judgement
      const times: number[] = [];
      let healthy: StatusRun | undefined;
      for (let i = 0; i < 3; i++) {
        healthy = await statusJson(cp.tokenKubeconfigPath, ["--config", files[leaderHost]]);
        times.push(healthy.ms);
      }
      report(
        `RESULT status_answer_ms=${times.map((t) => t.toFixed(0)).join(",")} (healthy, ` +
          `2 hosts, process start included; judged by ${healthy!.status.judgedBy.by})`,
      );
      assert.equal(healthy!.code, 0, JSON.stringify(healthy!.status.problems));
      // with the inventory, status lists each pool's serving hosts (the Nodes read for readiness)
      assert.ok(healthy!.status.servingHosts.length > 0, JSON.stringify(healthy!.status));
      assert.equal(healthy!.status.judgedBy.by, "leader");
      // generous: a loaded machine; the watch it replaces took a heartbeat period or more
      assert.ok(Math.min(...times) < 8_000, `status took ${times} ms`);
    } finally {
      await Promise.all(agents.map((a) => a.stop()));
      await Deno.remove(dir, { recursive: true });
    }
  },
);
