/**
 * `keelson plan --kubeconfig` against a real kube-apiserver, run as it ships (the bundle with the
 * baked permissions, as the unprivileged test user) and as a user bound to nothing but a
 * read-only ClusterRole (get/list on nodes, services, endpointslices, leases): each inventory
 * edit gives its exit status (retire a NotReady Node's machine: deleted, 2; shrink a pool under a
 * held address: stranded and refused, 2; a comment: 0), the read-only user gets the same answer
 * as the admin, and the apiserver's audit log shows that user sent only GETs (list), never a
 * write; a collection above one page (600 Leases) is read in two pages of 500. An unreachable
 * apiserver, one that never answers (the read ends at --timeout) and a missing kubeconfig exit 1,
 * naming them.
 */
import assert from "node:assert/strict";
import { integrationTest, startControlPlane } from "./_harness/control_plane.ts";
import { keelsonCommand, readableByTestUser } from "./_harness/shipped_keelson.ts";
import { writeKubeconfig } from "./_harness/kubeconfig.ts";
import { waitFor } from "./_harness/wait.ts";
import {
  COMMENTED,
  IN_FORCE,
  nodeObject,
  NODES,
  RETIRE_N2,
  serviceObject,
  SERVICES,
  serviceStatus,
  SHRINK_POOL,
} from "../unit/plan/_live_plan_fixture.ts";
import { encodeHostReport } from "../../src/status/encode_host_report.ts";
import { MicroTime } from "../../src/kube/micro_time.ts";
import { report } from "../unit/status/_leases.ts";

/** The read-only user's identity in the control plane's token file. */
const VIEWER = "viewer";

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    users: ["${VIEWER}"]
  - level: None
`;

/** The ClusterRole an operator gives a CI job that runs the live plan. */
const READER_ROLE = {
  metadata: { name: "keelson-plan-reader" },
  rules: [
    { apiGroups: [""], resources: ["nodes", "services"], verbs: ["get", "list"] },
    { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["get", "list"] },
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "list"] },
  ],
};

interface Run {
  code: number;
  out: string;
  err: string;
  ms: number;
}

async function plan(args: string[]): Promise<Run> {
  const [command, ...argv] = await keelsonCommand(["plan", ...args], { unprivileged: true });
  const began = performance.now();
  const out = await new Deno.Command(command!, {
    args: argv,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return {
    code: out.code,
    out: decode(out.stdout),
    err: decode(out.stderr),
    ms: performance.now() - began,
  };
}

interface AuditEvent {
  verb: string;
  stage: string;
  requestURI: string;
  user: { username: string };
  userAgent?: string;
  responseStatus?: { code: number };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

async function auditEvents(path: string): Promise<AuditEvent[]> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l))
    .filter((e: AuditEvent) => e.stage === "ResponseComplete" && e.user.username === VIEWER);
}

integrationTest(
  "keelson plan --kubeconfig: each edit's exit status, the same answer for a read-only user, and no request but GETs",
  async (t) => {
    const dir = await Deno.makeTempDir({ prefix: "keelson-plan-live-" });
    try {
      const audit = `${dir}/audit.log`;
      await Deno.writeTextFile(`${dir}/audit-policy.yaml`, AUDIT_POLICY);
      await using cp = await startControlPlane({
        apiserverArgs: [
          `--audit-policy-file=${dir}/audit-policy.yaml`,
          `--audit-log-path=${audit}`,
        ],
      });

      // the cluster: two initialized Nodes (n-2 NotReady), two Services holding addresses, and
      // n-1's heartbeat reporting shop/db's address
      await cp.requestOk("POST", "/api/v1/namespaces", { metadata: { name: "shop" } });
      for (const node of NODES) await cp.requestOk("POST", "/api/v1/nodes", nodeObject(node));
      for (const service of SERVICES) {
        const path = `/api/v1/namespaces/${service.namespace}/services`;
        await cp.requestOk("POST", path, serviceObject(service));
        await cp.requestOk("PATCH", `${path}/${service.name}/status`, {
          status: serviceStatus(service),
        });
      }
      // n-1 leads (the leader Lease names it) and reports n-2 off for 90 s at its last renewal
      const renewMs = Date.now();
      const heartbeat = {
        ...report("n-1", ["192.0.2.14"]),
        power: [{
          machine: "n-2",
          state: "off" as const,
          since: new Date(renewMs - 90_000).toISOString(),
          detail: 'PowerState "Off"',
        }],
      };
      await cp.requestOk("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", {
        metadata: {
          name: "keelson-host-n-1",
          labels: { "keelson.io/heartbeat": "true" },
          annotations: { "keelson.io/data-plane": encodeHostReport(heartbeat) },
        },
        spec: {
          holderIdentity: "n-1",
          leaseDurationSeconds: 15,
          renewTime: new MicroTime(renewMs),
        },
      });
      await cp.requestOk("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", {
        metadata: { name: "keelson" },
        spec: { holderIdentity: "n-1_6f1c", leaseDurationSeconds: 15 },
      });
      await cp.requestOk(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        READER_ROLE,
      );
      await cp.requestOk("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        metadata: { name: "keelson-plan-reader" },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: READER_ROLE.metadata.name,
        },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: VIEWER }],
      });

      const files = {
        current: `${dir}/keelson.toml`,
        retire: `${dir}/retire.toml`,
        shrink: `${dir}/shrink.toml`,
        same: `${dir}/same.toml`,
        viewer: `${dir}/viewer.kubeconfig`,
        admin: `${dir}/admin.kubeconfig`,
      };
      await Deno.writeTextFile(files.current, IN_FORCE);
      await Deno.writeTextFile(files.retire, RETIRE_N2);
      await Deno.writeTextFile(files.shrink, SHRINK_POOL);
      await Deno.writeTextFile(files.same, COMMENTED);
      await writeKubeconfig(files.viewer, cp.server, cp.caPem, VIEWER, { token: cp.viewerToken });
      await writeKubeconfig(files.admin, cp.server, cp.caPem, "admin", { token: cp.adminToken });
      await readableByTestUser(...Object.values(files));
      // the read-only user may not write: the role is what this test says it is
      const denied = await cp.request(
        "DELETE",
        "/api/v1/nodes/n-2",
        undefined,
        undefined,
        cp.viewerToken,
      );
      assert.equal(denied.status, 403);
      // that refused DELETE is in the audit log too: the runs' requests are the ones after it
      const before = (await waitFor(async () => {
        const events = await auditEvents(audit);
        return events.some((e) => e.verb === "delete") ? events : undefined;
      }, { timeoutMs: 10_000, message: "the refused DELETE in the audit log" })).length;

      const live = (inventory: string, kubeconfig = files.viewer) =>
        plan([
          "-c",
          inventory,
          "--current",
          files.current,
          "--kubeconfig",
          kubeconfig,
          "-o",
          "json",
        ]);
      const runs: Run[] = [];

      await t.step(
        "retiring the machine of a NotReady Node: it would be deleted, exit 2",
        async () => {
          const run = await live(files.retire);
          runs.push(run);
          assert.equal(run.code, 2, run.err);
          const diff = JSON.parse(run.out);
          // the Services: shop's two and the apiserver's own default/kubernetes
          assert.deepEqual([diff.read.nodes, diff.read.services, diff.read.heartbeats], [2, 3, 1]);
          assert.deepEqual(diff.nodes.map((n: { node: string }) => n.node), ["n-2"]);
          assert.deepEqual(diff.nodes[0].proposed, {
            machineState: "retired",
            actions: [{ action: "delete", reason: "its machine is retired in the inventory" }],
          });
          assert.deepEqual(diff.nodes[0].inForce.actions, []);
          assert.deepEqual([diff.services, diff.refused], [[], []]);
          // the leader's heartbeat's power, aged by its own renewTime
          assert.deepEqual(
            [diff.power.from, diff.power.chosen, diff.power.machines[0].ageMs],
            ["n-1", "leader", 90_000],
          );
        },
      );

      let viewerShrink = "";
      await t.step(
        "shrinking the pool under shop/db's address: stranded, refused, exit 2",
        async () => {
          const run = await live(files.shrink);
          runs.push(run);
          assert.equal(run.code, 2, run.err);
          const diff = JSON.parse(run.out);
          assert.equal(diff.refused.length, 1);
          assert.match(diff.refused[0], /192\.0\.2\.14 \(service "shop\/db"\)/);
          assert.deepEqual(
            diff.services.map((
              s: { serviceKey: string; change: string; reportedBy: string[] },
            ) => [s.serviceKey, s.change, s.reportedBy]),
            [["shop/db", "stranded", ["n-1"]]],
          );
          assert.deepEqual(diff.nodes, []);
          viewerShrink = run.out;
        },
      );

      await t.step("an edit that changes nothing: exit 0", async () => {
        const run = await live(files.same);
        runs.push(run);
        assert.equal(run.code, 0, run.err);
        assert.equal(JSON.parse(run.out).changes, false);
        const text = await plan([
          "-c",
          files.same,
          "--current",
          files.current,
          "--kubeconfig",
          files.viewer,
        ]);
        assert.equal(text.code, 0, text.err);
        assert.match(
          text.out,
          /No changes: the proposed inventory does what the one in force does/,
        );
      });

      await t.step("the read-only user got the admin's answer, and sent only GETs", async () => {
        const admin = await live(files.shrink, files.admin);
        assert.equal(admin.code, 2, admin.err);
        const strip = (text: string) => ({ ...JSON.parse(text), cluster: "", proposed: "" });
        assert.deepEqual(strip(viewerShrink), strip(admin.out));

        // four runs as the viewer (three JSON, one text); the audit backend writes as it answers
        const events = await waitFor(async () => {
          const all = (await auditEvents(audit)).slice(before);
          return all.length >= 16 ? all : undefined;
        }, { timeoutMs: 10_000, message: "16 audit events of the read-only user" });
        assert.ok(events.every((e) => e.userAgent === "keelson-plan"), JSON.stringify(events));
        const verbs = [...new Set(events.map((e) => e.verb))];
        assert.deepEqual(verbs, ["list"], JSON.stringify(events.map((e) => e.requestURI)));
        assert.ok(events.every((e) => e.responseStatus?.code === 200));
        // each run: one page of each of the four collections
        assert.equal(events.length, 16);
        const first = Date.parse(events[0]!.requestReceivedTimestamp);
        const last = Math.max(...events.slice(0, 4).map((e) => Date.parse(e.stageTimestamp)));
        // deno-lint-ignore no-console
        console.log(
          `live plan: ${events.length / 4} requests per run (${
            [...new Set(events.map((e) => e.requestURI.split("?")[0]))].join(", ")
          }); first run's reads took ${last - first} ms at the apiserver; whole runs ${
            runs.map((r) => Math.round(r.ms)).join(", ")
          } ms (process start included)`,
        );
      });

      await t.step("a collection above one page is read in pages of 500 (continue)", async () => {
        // 600 Leases that are no heartbeat: the Lease list takes two pages
        const leases = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
        for (let i = 0; i < 600; i += 50) {
          await Promise.all(
            Array.from(
              { length: 50 },
              (_, j) => cp.requestOk("POST", leases, { metadata: { name: `filler-${i + j}` } }),
            ),
          );
        }
        const seen = (await auditEvents(audit)).length;
        const run = await live(files.same);
        assert.equal(run.code, 0, run.err);
        assert.equal(JSON.parse(run.out).read.heartbeats, 1);
        const events = await waitFor(async () => {
          const all = (await auditEvents(audit)).slice(seen);
          return all.length >= 5 ? all : undefined;
        }, { timeoutMs: 10_000, message: "5 audit events of the paged run" });
        const leaseLists = events.filter((e) => e.requestURI.startsWith(`${leases}?`));
        assert.deepEqual(
          leaseLists.map((e) => new URL(e.requestURI, "https://x").searchParams.has("continue")),
          [false, true],
        );
        assert.ok(leaseLists.every((e) => /[?&]limit=500(&|$)/.test(e.requestURI)));
        assert.deepEqual([...new Set(events.map((e) => e.verb))], ["list"]);
        assert.equal(events.length, 5);
      });

      await t.step(
        "an unreachable, a silent apiserver and a missing kubeconfig: exit 1, naming them",
        async () => {
          // a port nothing listens on: bound, read, then closed
          const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
          const port = listener.addr.port;
          listener.close();
          const gone = `${dir}/gone.kubeconfig`;
          await writeKubeconfig(gone, `https://127.0.0.1:${port}`, cp.caPem, VIEWER, {
            token: cp.viewerToken,
          });
          await readableByTestUser(gone);
          const unreachable = await live(files.same, gone);
          assert.equal(unreachable.code, 1);
          assert.equal(unreachable.out, "");
          assert.match(
            unreachable.err,
            new RegExp(
              `^keelson plan: cannot read the cluster at .*https://127\\.0\\.0\\.1:${port}`,
            ),
          );
          assert.doesNotMatch(unreachable.err, /^\s+at /m);

          // an apiserver that accepts connections and never answers: the whole read ends at --timeout
          const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
          const held: Deno.Conn[] = [];
          const accepting = (async () => {
            for await (const conn of silent) held.push(conn);
          })().catch(() => {});
          try {
            const mute = `${dir}/mute.kubeconfig`;
            await writeKubeconfig(mute, `https://127.0.0.1:${silent.addr.port}`, cp.caPem, VIEWER, {
              token: cp.viewerToken,
            });
            await readableByTestUser(mute);
            const hung = await plan([
              "-c",
              files.same,
              "--current",
              files.current,
              "--kubeconfig",
              mute,
              "--timeout",
              "2s",
            ]);
            assert.equal(hung.code, 1);
            assert.match(hung.err, /the cluster was not read within --timeout 2s/);
          } finally {
            silent.close();
            for (const conn of held) conn.close();
            await accepting;
          }

          const missing = await live(files.same, `${dir}/none.kubeconfig`);
          assert.equal(missing.code, 1);
          assert.equal(missing.out, "");
          assert.match(missing.err, /none\.kubeconfig/);
          assert.doesNotMatch(missing.err, /^\s+at /m);
        },
      );
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);
