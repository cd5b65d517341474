/**
 * Machine power from the BMC, end to end: Keelson as it ships (the bundle, the baked permissions,
 * the unprivileged user) against a real kube-apiserver and a real Redfish server it did not write
 * (sushy-tools' emulator). A system powered off through Redfish gets its NotReady Node the
 * `node.cloudprovider.kubernetes.io/shutdown` taint; every way a BMC can fail to tell the truth
 * leaves its Node untainted, although the system behind it (where there is one) is Off — among
 * them a system that reports another machine's serial number, which is also a Warning Event on
 * the Node.
 *
 * Figures are printed with a `FIGURE` prefix.
 */
import assert from "node:assert/strict";
import type { CoreV1Event, V1Node } from "@kubernetes/client-node";
import { type ControlPlane, startControlPlane } from "./_harness/control_plane.ts";
import { type KeelsonProcess, startKeelson } from "./_harness/keelson_process.ts";
import { writeKubeconfig } from "./_harness/kubeconfig.ts";
import { registerNode } from "./_harness/kubelet.ts";
import { figure } from "./_harness/lb_services.ts";
import { freePorts } from "./_harness/process.ts";
import { readableByTestUser } from "./_harness/shipped_keelson.ts";
import { runStatus } from "./_harness/status_cli.ts";
import type { ClusterStatus } from "../../src/status/cluster_status.ts";
import { makeBmcCertificates, startSushy, sushyTest } from "./_harness/sushy.ts";
import { waitFor } from "./_harness/wait.ts";

const SHUTDOWN_TAINT = "node.cloudprovider.kubernetes.io/shutdown";

/** The bound on power-off to taint (the goal is 30 s with default settings; loaded machine). */
const TAINT_BOUND_MS = 90_000;

/** Failed requests per broken BMC before its Node's taints are judged. */
const FAILURES_SEEN = 3;

interface BmcLines {
  endpoint: string;
  system: string;
  usernameFile: string;
  passwordFile: string;
  /** The CA; absent: `certificateSha256`. */
  caFile?: string;
  /** The BMC certificate's SHA-256 fingerprint, instead of `caFile`. */
  certificateSha256?: string;
  /** Faster than the default for the fail-closed machines; absent: the defaults (5 s, 5 s). */
  fast?: boolean;
}

function machine(name: string, bmc: BmcLines): string {
  return `
[[machines]]
name = "${name}"
role = "worker"
internal_ips = []

[machines.bmc]
endpoint = "${bmc.endpoint}"
${bmc.system ? `system = "${bmc.system}"` : "# system: discovered"}
username_file = "${bmc.usernameFile}"
password_file = "${bmc.passwordFile}"
${
    bmc.certificateSha256
      ? `certificate_sha256 = "${bmc.certificateSha256}"`
      : `ca_file = "${bmc.caFile}"`
  }
${bmc.fast ? 'poll_interval = "1s"\ntimeout = "1s"\n' : ""}`;
}

/** Whether the Node carries the shutdown taint (the apiserver's not-ready taint is not ours). */
async function hasShutdownTaint(cp: ControlPlane, name: string): Promise<boolean> {
  const node = await cp.requestOk<V1Node>("GET", `/api/v1/nodes/${name}`);
  return (node.spec?.taints ?? []).some((t) =>
    t.key === SHUTDOWN_TAINT && t.effect === "NoSchedule"
  );
}

/** A series' value on /metrics, summing nothing: exact sample text. */
async function sample(agent: KeelsonProcess, text: string): Promise<number | undefined> {
  return await agent.metric(text);
}

/** An HTTPS server on loopback with the given certificate, answering with `handler`. */
function httpsServer(
  certFile: string,
  keyFile: string,
  handler: (request: Request) => Response,
): { url: string; requests: () => number; close: () => Promise<void> } {
  let count = 0;
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: Deno.readTextFileSync(certFile),
    key: Deno.readTextFileSync(keyFile),
    onListen() {},
  }, (request) => {
    count++;
    return handler(request);
  });
  return {
    url: `https://127.0.0.1:${server.addr.port}`,
    requests: () => count,
    close: () => server.shutdown(),
  };
}

/** A loopback socket that accepts connections and never answers (a hung BMC). */
function silentListener(): { url: string; close: () => void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  (async () => {
    try {
      for await (const conn of listener) held.push(conn);
    } catch { /* closed */ }
  })();
  return {
    url: `https://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    close: () => {
      for (const conn of held) {
        try {
          conn.close();
        } catch { /* gone */ }
      }
      listener.close();
    },
  };
}

sushyTest(
  "a BMC's Off gives the NotReady Node the shutdown taint; an unreachable, hung, refusing, non-Redfish, mistrusted, flapping, ambiguous or impostor BMC never does",
  async (t) => {
    const off = crypto.randomUUID();
    const refused = crypto.randomUUID();
    const mistrusted = crypto.randomUUID();
    const mispinned = crypto.randomUUID();
    await using cp = await startControlPlane();
    // the systems behind the refusing and the mistrusted BMC are Off: only failing closed keeps
    // their Nodes untainted
    await using bmc = await startSushy({
      systems: [
        { uuid: off, name: "w-off", power: "On" },
        { uuid: refused, name: "w-refused", power: "Off" },
        { uuid: mistrusted, name: "w-mistrusted", power: "Off" },
        { uuid: mispinned, name: "w-mispinned", power: "Off" },
      ],
    });
    // a BMC with a single system, Off from the start: found without `system`
    const lone = crypto.randomUUID();
    await using single = await startSushy({
      systems: [{ uuid: lone, name: "w-lone", power: "Off" }],
    });
    await readableByTestUser(single.usernameFile, single.passwordFile);
    const dir = bmc.dir;
    const wrongPassword = `${dir}/wrong-password`;
    await Deno.writeTextFile(wrongPassword, "not-the-password\n", { mode: 0o600 });
    await readableByTestUser(bmc.usernameFile, bmc.passwordFile, wrongPassword);
    const otherCaDir = `${dir}/other-ca`;
    await Deno.mkdir(otherCaDir, { mode: 0o755 });
    const otherCa = await makeBmcCertificates(otherCaDir);
    const certs = bmc.certificates;
    // a server answering JSON that is not Redfish (it even says "Off")
    const notRedfish = httpsServer(
      certs.certFile,
      certs.keyFile,
      () => Response.json({ PowerState: "Off", hello: "not a BMC" }),
    );
    // a ComputerSystem whose power alternates at every request
    let flip = false;
    const flapping = httpsServer(certs.certFile, certs.keyFile, () => {
      flip = !flip;
      return Response.json({
        "@odata.type": "#ComputerSystem.v1_1_0.ComputerSystem",
        Id: "1",
        PowerState: flip ? "Off" : "On",
      });
    });
    // a BMC of two systems, both Off, neither reporting a serial number: which is the machine's
    // cannot be told
    const system = (power: string, serial?: string) =>
      Response.json({
        "@odata.type": "#ComputerSystem.v1_1_0.ComputerSystem",
        PowerState: power,
        ...(serial ? { SerialNumber: serial } : {}),
      });
    const twoSystems = httpsServer(certs.certFile, certs.keyFile, (request) => {
      const path = new URL(request.url).pathname;
      if (path === "/redfish/v1/Systems") {
        return Response.json({
          Members: [{ "@odata.id": "/redfish/v1/Systems/1" }, {
            "@odata.id": "/redfish/v1/Systems/2",
          }],
        });
      }
      return system("Off");
    });
    // a BMC whose system is Off but reports another machine's serial number
    const impostor = httpsServer(certs.certFile, certs.keyFile, () => system("Off", "SN-OTHER-7"));
    const silent = silentListener();
    const [closedPort] = freePorts(1);
    try {
      const common = {
        system: bmc.systemPath(off),
        usernameFile: bmc.usernameFile,
        passwordFile: bmc.passwordFile,
        caFile: certs.caFile,
      };
      const fast = { ...common, fast: true };
      const cases = {
        "w-unreachable": { ...fast, endpoint: `https://127.0.0.1:${closedPort}` },
        "w-hung": { ...fast, endpoint: silent.url },
        "w-refused": {
          ...fast,
          endpoint: bmc.url,
          system: bmc.systemPath(refused),
          passwordFile: wrongPassword,
        },
        "w-not-redfish": { ...fast, endpoint: notRedfish.url },
        "w-mistrusted": {
          ...fast,
          endpoint: bmc.url,
          system: bmc.systemPath(mistrusted),
          caFile: otherCa.caFile,
        },
        // pinned to another certificate's fingerprint (the CA's, which the BMC does not serve)
        "w-mispinned": {
          ...fast,
          endpoint: bmc.url,
          system: bmc.systemPath(mispinned),
          caFile: undefined,
          certificateSha256: certs.caSha256,
        },
        "w-flapping": { ...fast, endpoint: flapping.url, system: "/redfish/v1/Systems/1" },
        // two systems reporting no identity: which one is the machine's is unknown
        "w-ambiguous": { ...fast, endpoint: twoSystems.url, system: "" },
        "w-impostor": { ...fast, endpoint: impostor.url, system: "/redfish/v1/Systems/1" },
      } as const;
      const reasons: Record<keyof typeof cases, string> = {
        "w-unreachable": "unreachable",
        "w-hung": "timeout",
        "w-refused": "unauthorized",
        "w-not-redfish": "not_redfish",
        "w-mistrusted": "tls",
        "w-mispinned": "tls",
        "w-flapping": "",
        "w-ambiguous": "no_system",
        "w-impostor": "identity",
      };
      const inventory = `
[cluster]
name = "it"

[keepalived]
enabled = false

[controllers]
enabled = ["cloud-node-lifecycle"]
${machine("w-off", { ...common, endpoint: bmc.url })}
${
        machine("w-discovered", {
          endpoint: single.url,
          system: "",
          usernameFile: single.usernameFile,
          passwordFile: single.passwordFile,
          // trusted by pin, not by CA: the pinned path under the baked permissions
          certificateSha256: single.certificates.certSha256,
          fast: true,
        })
      }
${Object.entries(cases).map(([name, lines]) => machine(name, lines)).join("\n")}`;
      const configPath = `${dir}/keelson.toml`;
      await Deno.writeTextFile(configPath, inventory, { mode: 0o644 });
      const kubeconfig = `${dir}/keelson.kubeconfig`;
      await writeKubeconfig(kubeconfig, cp.server, cp.caPem, "admin", { token: cp.adminToken });
      await readableByTestUser(kubeconfig);
      // NotReady from the start, as a dead kubelet leaves a Node; already initialized
      for (const name of ["w-off", "w-discovered", ...Object.keys(cases)]) {
        await registerNode(cp, name, {
          ready: false,
          initialized: true,
          providerID: `baremetal://${name}`,
        });
      }
      await using agent = await startKeelson({
        configPath,
        kubeconfig,
        dir,
        host: "w-off",
        unprivileged: true,
      });
      await waitFor(async () => (await sample(agent, 'keelson_bmc_up{machine="w-off"}')) === 1, {
        timeoutMs: 60_000,
        message: "Keelson reading w-off's power from sushy",
      }).catch(async (error) => {
        throw new Error(`${error}\n--- agent log tail\n${(await agent.log()).slice(-3000)}`);
      });
      assert.equal(await sample(agent, 'keelson_bmc_power_state{machine="w-off",state="on"}'), 1);
      assert.equal(await hasShutdownTaint(cp, "w-off"), false, "a machine that is On: no taint");

      await t.step("ForceOff through Redfish: the Node gets the shutdown taint", async () => {
        const posted = performance.now();
        await bmc.reset(off, "ForceOff");
        const applied = await bmc.waitForPower(off, "Off");
        const tainted = await waitFor(
          async () => (await hasShutdownTaint(cp, "w-off")) ? performance.now() : undefined,
          { timeoutMs: TAINT_BOUND_MS, intervalMs: 100, message: "the shutdown taint on w-off" },
        );
        figure(
          `power-off -> shutdown taint: ${((tainted - applied) / 1000).toFixed(1)} s after ` +
            `sushy first answered Off (${((tainted - posted) / 1000).toFixed(1)} s after the ` +
            "ForceOff POST; sushy applies a reset 1-11 s late); defaults: poll_interval 5s, " +
            "node_monitor_period 5s",
        );
        assert.equal(
          await sample(agent, 'keelson_bmc_power_state{machine="w-off",state="off"}'),
          1,
        );
        // power never deletes: the Node is still there
        assert.ok((await cp.request("GET", "/api/v1/nodes/w-off")).status === 200);
      });

      await t.step(
        "a BMC's only system is found without `system`, its certificate pinned by " +
          "certificate_sha256; Off from the start taints",
        async () => {
          await waitFor(() => hasShutdownTaint(cp, "w-discovered"), {
            timeoutMs: TAINT_BOUND_MS,
            message: "the shutdown taint on w-discovered",
          });
        },
      );

      for (const [name, reason] of Object.entries(reasons)) {
        await t.step(`${name}: no taint (${reason || "PowerState flaps"})`, async () => {
          if (reason) {
            const series = `keelson_bmc_request_errors_total{machine="${name}",reason="${reason}"}`;
            await waitFor(async () => ((await sample(agent, series)) ?? 0) >= FAILURES_SEEN, {
              timeoutMs: 60_000,
              message: `${FAILURES_SEEN} failures counted as ${series}`,
            });
            assert.equal(await sample(agent, `keelson_bmc_up{machine="${name}"}`), 0);
            assert.equal(
              await sample(agent, `keelson_bmc_power_state{machine="${name}",state="unknown"}`),
              1,
            );
          } else {
            // several answers of each kind, and the lifecycle controller ran in between
            await waitFor(() => flapping.requests() >= 8, {
              timeoutMs: 60_000,
              message: "8 requests to the flapping BMC",
            });
          }
          assert.equal(await hasShutdownTaint(cp, name), false, `${name} must stay untainted`);
        });
      }

      await t.step(
        "w-impostor: one BMCIdentityMismatch Warning on its Node, and status says identity",
        async () => {
          const mismatchEvents = async () =>
            (await cp.requestOk<{ items: CoreV1Event[] }>(
              "GET",
              "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dw-impostor",
            )).items.filter((e) => e.reason === "BMCIdentityMismatch");
          await waitFor(async () => (await mismatchEvents()).length > 0, {
            timeoutMs: 60_000,
            message: "a BMCIdentityMismatch Event on w-impostor",
          });
          const mismatches = await mismatchEvents();
          // one Event for the cause (a repeat would raise its count, not add one)
          assert.equal(mismatches.length, 1);
          assert.equal(mismatches[0]!.type, "Warning");
          assert.equal(mismatches[0]!.involvedObject.kind, "Node");
          assert.match(
            mismatches[0]!.message ?? "",
            /SerialNumber "SN-OTHER-7", not the machine's id "w-impostor"/,
          );
        },
      );

      await t.step(
        "keelson status shows each machine's power from the leader's heartbeat",
        async () => {
          const run = async (args: string[]) => {
            const { out, err } = await runStatus(["--kubeconfig", cp.tokenKubeconfigPath, ...args]);
            return out + err;
          };
          const model = JSON.parse(await run(["-o", "json"])) as ClusterStatus;
          assert.equal(model.powerFrom, "w-off");
          const states = Object.fromEntries(model.power.map((p) => [p.machine, p.state]));
          assert.equal(states["w-off"], "off");
          assert.equal(states["w-refused"], "unknown");
          assert.equal(states["w-mistrusted"], "unknown");
          assert.ok(
            model.problems.some((p) => p.startsWith("machine w-hung: power unknown")),
            model.problems.join("\n"),
          );
          assert.ok(
            model.problems.some((p) =>
              p.startsWith("machine w-impostor: power unknown (identity: /redfish/v1/Systems/1")
            ),
            model.problems.join("\n"),
          );
          const text = await run([]);
          assert.match(text, /Machine power \(from the leader w-off's heartbeat\)/);
          assert.match(text, /w-off +off +\d/);
        },
      );
    } finally {
      silent.close();
      await notRedfish.close();
      await flapping.close();
      await twoSystems.close();
      await impostor.close();
    }
  },
);
