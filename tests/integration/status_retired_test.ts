/**
 * `keelson status` against a real kube-apiserver holding a heartbeat Lease left by a host that is
 * no longer in the inventory: with `--config` it is listed as retired (with the command that
 * deletes it) and the cluster is healthy (exit 0); without the inventory it is a silent host
 * (exit 3) whose problem line names the same command; deleted with that command, it is gone.
 * cp-1 and the leader renew their Leases meanwhile (the command judges freshness by seeing them
 * renewed, so a Lease nobody renews would be silent).
 */
import { statusJson } from "./_harness/status_cli.ts";
import assert from "node:assert/strict";
import type { V1Lease } from "@kubernetes/client-node";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { encodeHostReport } from "../../src/status/encode_host_report.ts";
import { MicroTime } from "../../src/kube/micro_time.ts";
import { report } from "../unit/status/_leases.ts";

const LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";

const INVENTORY = `
[cluster]
name = "status"

[keepalived]
enabled = false

[[machines]]
name = "cp-1"
role = "control-plane"
zone = "z1"
region = "r1"
internal_ips = ["10.0.0.11"]
`;

function heartbeat(host: string, ageMs: number): V1Lease {
  return {
    metadata: {
      name: `keelson-host-${host}`,
      labels: { "keelson.io/heartbeat": "true" },
      annotations: { "keelson.io/data-plane": encodeHostReport(report(host, [])) },
    },
    spec: {
      holderIdentity: host,
      leaseDurationSeconds: 15,
      renewTime: new MicroTime(Date.now() - ageMs),
    },
  };
}

integrationTest(
  "keelson status: a removed host's heartbeat is retired with --config (exit 0), silent without (exit 3)",
  async () => {
    await using cp = await startControlPlane();
    const dir = await Deno.makeTempDir({ prefix: "keelson-status-retired-" });
    try {
      const config = `${dir}/keelson.toml`;
      await Deno.writeTextFile(config, INVENTORY);
      const kubeconfig = cp.tokenKubeconfigPath;
      await cp.requestOk("POST", LEASES, {
        metadata: { name: "keelson" },
        spec: {
          holderIdentity: "cp-1_x",
          leaseDurationSeconds: 15,
          renewTime: new MicroTime(Date.now()),
        },
      });
      await cp.requestOk("POST", LEASES, heartbeat("cp-1", 0));
      await cp.requestOk("POST", LEASES, heartbeat("cp-9", 3_600_000));
      const stop = new AbortController();
      const renewing = (async () => {
        while (!stop.signal.aborted) {
          await new Promise((r) => setTimeout(r, 1000));
          for (const name of ["keelson", "keelson-host-cp-1"]) {
            await cp.requestOk("PATCH", `${LEASES}/${name}`, {
              spec: { renewTime: new MicroTime(Date.now()) },
            });
          }
        }
      })();
      try {
        const known = await statusJson(kubeconfig, ["--config", config]);
        assert.equal(known.code, 0, JSON.stringify(known.status.problems));
        assert.deepEqual(known.status.hosts.map((h) => h.host), ["cp-1"]);
        assert.deepEqual(known.status.retired.map((h) => [h.host, h.cleanup]), [
          ["cp-9", "kubectl -n kube-system delete lease keelson-host-cp-9"],
        ]);

        const blind = await statusJson(kubeconfig);
        assert.equal(blind.code, 3);
        assert.deepEqual(blind.status.retired, []);
        assert.equal(blind.status.problems.length, 1, JSON.stringify(blind.status.problems));
        assert.match(
          blind.status.problems[0]!,
          new RegExp(
            "^host cp-9 is silent: its heartbeat did not change in the 1[5-9]s watched \\(lease " +
              "15s; its last renewal says 1h00m ago, by its own clock\\) \\(if it was removed " +
              "from the inventory: kubectl -n kube-system delete lease keelson-host-cp-9; --config " +
              "tells retired hosts apart\\)$",
          ),
        );

        // the command shown, as the admin runs it (kubectl's DELETE)
        await cp.requestOk("DELETE", `${LEASES}/keelson-host-cp-9`);
        const cleaned = await statusJson(kubeconfig);
        assert.equal(cleaned.code, 0, JSON.stringify(cleaned.status.problems));
        assert.deepEqual(cleaned.status.hosts.map((h) => h.host), ["cp-1"]);
      } finally {
        stop.abort();
        await renewing;
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
