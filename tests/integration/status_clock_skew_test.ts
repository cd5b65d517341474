/**
 * `keelson status` against a real kube-apiserver whose Leases were written by clocks that lie:
 * a host that died with its clock 9 minutes fast, a live host whose clock is 20 s slow, and a
 * leader Lease renewed "tomorrow" that nobody renews. Judged by the command's own observation,
 * the dead host is silent, the slow one serves the VIP, and nobody leads. Before, the dead host
 * was "0ms ago" and served the VIP, the live one SILENT, the leader alive.
 *
 * Also: a holderIdentity holding terminal escapes (the apiserver stores it) is shown escaped.
 */
import { runStatus } from "./_harness/status_cli.ts";
import assert from "node:assert/strict";
import type { V1Lease } from "@kubernetes/client-node";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import type { ClusterStatus } from "../../src/status/cluster_status.ts";
import { encodeHostReport } from "../../src/status/encode_host_report.ts";
import { MicroTime } from "../../src/kube/micro_time.ts";
import { report } from "../unit/status/_leases.ts";

const LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
const VIP = "10.0.0.150";
const ESCAPES = "cp-1_x\x1b]0;owned\x07\x1b[2J\x1b[32mHealthy";

function heartbeat(host: string, skewMs: number): V1Lease {
  return {
    metadata: {
      name: `keelson-host-${host}`,
      labels: { "keelson.io/heartbeat": "true" },
      annotations: {
        "keelson.io/data-plane": encodeHostReport(report(host, [VIP], { all: [VIP] })),
      },
    },
    spec: {
      holderIdentity: host,
      leaseDurationSeconds: 15,
      renewTime: new MicroTime(Date.now() + skewMs),
    },
  };
}

// the shipped bundle with the baked flags: status runs in the binary too
const status = runStatus;

integrationTest(
  "keelson status: freshness by its own observation, whatever the writers' clocks say",
  async () => {
    await using cp = await startControlPlane();
    await cp.requestOk("POST", "/api/v1/namespaces/default/services", {
      metadata: { name: "web", annotations: { "keelson.io/allocated-from-pool": "lan" } },
      spec: { type: "LoadBalancer", ports: [{ port: 80 }] },
    });
    await cp.requestOk("PATCH", "/api/v1/namespaces/default/services/web/status", {
      status: { loadBalancer: { ingress: [{ ip: VIP }] } },
    });
    await cp.requestOk("POST", LEASES, {
      metadata: { name: "keelson" },
      spec: {
        holderIdentity: ESCAPES,
        leaseDurationSeconds: 15,
        renewTime: new MicroTime(Date.now() + 86_400_000),
      },
    });
    // cp-1 died with its clock 9 minutes fast; cp-2 (20 s slow) took the VIP and renews
    await cp.requestOk("POST", LEASES, heartbeat("cp-1", 9 * 60_000));
    await cp.requestOk("POST", LEASES, heartbeat("cp-2", -20_000));
    const stop = new AbortController();
    const renewing = (async () => {
      while (!stop.signal.aborted) {
        await new Promise((r) => setTimeout(r, 2000));
        await cp.requestOk("PATCH", `${LEASES}/keelson-host-cp-2`, {
          spec: { renewTime: new MicroTime(Date.now() - 20_000) },
        });
      }
    })();
    try {
      const kubeconfig = ["--kubeconfig", cp.tokenKubeconfigPath];
      const json = await status([...kubeconfig, "-o", "json"]);
      assert.equal(json.code, 3, json.err);
      const model = JSON.parse(json.out) as ClusterStatus;
      assert.deepEqual(model.hosts.map((h) => [h.host, h.silent]), [["cp-1", true], [
        "cp-2",
        false,
      ]], json.out);
      assert.deepEqual(model.vips.map((v) => [v.vip, v.hosts, v.problem]), [
        [VIP, ["cp-2"], undefined],
      ]);
      assert.equal(model.leader.expired, true);
      const byHost = new Map(model.hosts.map((h) => [h.host, h]));
      assert.deepEqual(
        [byHost.get("cp-1")?.freshness, byHost.get("cp-2")?.freshness],
        ["silent", "fresh"],
      );
      assert.ok(byHost.get("cp-1")!.ageMs >= 15_000, json.out);
      assert.equal(model.leader.identity, ESCAPES); // JSON: exact
      // it watched for cp-1's lease (15 s), bounded by --observe (20 s)
      assert.ok(json.ms >= 15_000 && json.ms < 40_000, `${json.ms} ms`);

      const text = await status(kubeconfig);
      assert.equal(text.code, 3, text.err);
      // deno-lint-ignore no-control-regex -- no control character but newline reaches the terminal
      assert.doesNotMatch(text.out, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
      assert.match(text.out, /Leader: cp-1_x\\x1b\]0;owned\\x07\\x1b\[2J\\x1b\[32mHealthy/);
      assert.match(text.out, /^ {2}cp-1 +SILENT/m);
      assert.match(text.out, /^ {2}10\.0\.0\.150 +default\/web +lan +cp-2 /m);

      // --observe 0s: read once, judge nothing by time
      const quick = await status([...kubeconfig, "-o", "json", "--observe", "0s"]);
      const once = JSON.parse(quick.out) as ClusterStatus;
      assert.deepEqual(once.hosts.map((h) => h.freshness), ["unobserved", "unobserved"]);
      assert.equal(once.leader.expired, false);
      assert.deepEqual(once.vips.map((v) => v.problem), ["unknown"]);
    } finally {
      stop.abort();
      await renewing;
    }
  },
);
