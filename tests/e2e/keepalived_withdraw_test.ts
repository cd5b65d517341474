/**
 * keepalived end to end: a reload that takes a host out of VRRP takes its VIPs off its interface.
 * Three control-plane "hosts" in `kk-w-*` network namespaces, each with a stand-in kube-apiserver
 * (`/readyz`), `keelson run` (no Kubernetes API: the Service VIPs come from the file keepalived
 * started with) and a real keepalived:
 * - every VIP (the control-plane VIP and three Service VIPs) is on exactly one host;
 * - the host holding the control-plane VIP is retired in every host's inventory (a reload): its
 *   keepalived gets a file with no VRRP instance, every VIP leaves its interface and is on exactly
 *   one of the two others; its log says so, its metrics claim no VIP;
 * - active again (another reload): it is a VRRP peer again and every VIP stays placed once;
 * - `[keepalived] enabled = false` everywhere: no host holds a VIP any more, restart required.
 * Prints the figures (reload to VIPs off the retired host). Each host runs Keelson as it ships
 * (`shipped_keelson.ts`: the bundle with the baked flags, unprivileged with no capability, beside
 * the root step that installs what it stages; the compiled binary itself cannot be built here,
 * denort cannot be downloaded).
 *
 * Needs root, keepalived, iproute2, openssl, python3 and curl; skipped loudly otherwise (failed
 * with KEELSON_REQUIRE_E2E=1).
 *
 * @module
 */
import assert from "node:assert/strict";
import { renderHostKeepalived } from "../../providers/baremetal/keepalived/announcer.ts";
import { parseConfig } from "../../src/config/parse_config.ts";
import { e2eUnavailable, KeepalivedLab, report, skipLoudly, sleep } from "./_keepalived_lab.ts";
import { holdsFor, pollUntil } from "../_support/poll.ts";

const reason = skipLoudly(
  "keepalived withdraw e2e test",
  e2eUnavailable(["keepalived", "ip", "openssl", "python3", "curl"]),
);

const SUBNET = "10.250.9";
const HOSTS: Record<string, string> = { n1: "cp-1", n2: "cp-2", n3: "cp-3" };
const CP_VIP = `${SUBNET}.100`;
const SERVICE_VIPS = [`${SUBNET}.150`, `${SUBNET}.151`, `${SUBNET}.152`];
const ALL = [CP_VIP, ...SERVICE_VIPS];
const LISTEN = "127.0.0.1:10258";
/** Generous: keepalived drops the VIPs milliseconds after the reload on an idle machine. */
const BOUND_MS = 30_000;
/** For keelson's start (a cold `deno run`) and what waits on the 10 s VIP-role loop. */
const SLOW_BOUND_MS = 90_000;

interface Edit {
  retired?: string;
  enabled?: boolean;
}

/** One node's inventory: the same machines everywhere, the keepalived paths in its own dir. */
function inventory(lab: KeepalivedLab, node: string, edit: Edit = {}): string {
  const machines = Object.values(HOSTS).map((name, i) =>
    `[[machines]]\nname = "${name}"\nrole = "control-plane"\n` +
    `internal_ips = ["${SUBNET}.${11 + i}"]\n` +
    (edit.retired === name ? 'state = "retired"\n' : "")
  );
  return [
    '[cluster]\nname = "e2e"\n',
    `[server]\nlisten = "${LISTEN}"\n`,
    ...lab.keepalivedSettings(node, { enabled: edit.enabled }),
    `[control_plane]\nvip = ["${CP_VIP}"]\nport = 6443\n`,
    `[[pools]]\nname = "lan"\naddresses = ["${SUBNET}.150-${SUBNET}.159"]\n`,
    ...machines,
  ].join("\n");
}

async function tail(path: string, lines = 15): Promise<string> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split("\n").slice(-lines).join("\n");
}

interface LogLine {
  level: string;
  message: string;
  properties: Record<string, unknown>;
}

/** keelson's JSON log lines. */
async function logLines(path: string): Promise<LogLine[]> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split("\n").flatMap((line) => {
    try {
      return [JSON.parse(line) as LogLine];
    } catch {
      return [];
    }
  });
}

/** The warning a withdrawal logs, for `why`, once it is there. */
async function withdrawalWarning(path: string, why: string): Promise<LogLine | undefined> {
  return (await logLines(path)).find((l) =>
    l.level === "WARN" && /no longer serves VIPs through keepalived/.test(l.message) &&
    l.properties.why === why
  );
}

function placedOnce(holders: Map<string, string[]>, allowed: readonly string[]): boolean {
  return [...holders.values()].every((h) => h.length === 1 && allowed.includes(h[0]!));
}

/** One sample of a node's keelson metrics, parsed to `name{labels}` -> value. */
async function metrics(lab: KeepalivedLab, node: string): Promise<Map<string, number>> {
  const text = await lab.inNamespace(node, ["curl", "-sS", "-m", "5", `http://${LISTEN}/metrics`]);
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = line.match(/^([a-z_]+(?:\{[^}]*\})?) (\S+)$/);
    if (match) samples.set(match[1]!, Number(match[2]));
  }
  return samples;
}

Deno.test({
  name:
    "keepalived e2e: a reload retiring a host takes its VIPs off its interface, and the others serve each once",
  ignore: reason !== undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const lab = await KeepalivedLab.create("w", 3, {
      prefix: "kk-w",
      subnet: SUBNET,
      shipped: true,
    });
    const keelson = new Map<string, Deno.ChildProcess>();
    const log = (node: string) => `${lab.nodeDir(node)}/keelson.log`;
    try {
      for (const node of lab.nodes) {
        const text = inventory(lab, node);
        await lab.writeInventory(node, text);
        // the file keepalived ran before keelson started: keelson keeps its Service VIPs until
        // a Service cache syncs, and there is no Kubernetes API here
        const seeded = renderHostKeepalived({
          config: parseConfig(text, lab.inventoryPath(node)),
          host: HOSTS[node]!,
          serviceVips: SERVICE_VIPS,
        });
        if ("error" in seeded) throw new Error(seeded.error);
        await Deno.writeTextFile(lab.confFile(node), seeded.text);
      }
      await lab.startStandInApiservers();
      for (const node of lab.nodes) keelson.set(node, await lab.startKeelson(node, HOSTS[node]!));
      // keepalived is not running yet: the file is written and not reloaded ("not_running")
      for (const node of lab.nodes) {
        await pollUntil(
          `${node}'s keelson to write its keepalived file`,
          async () =>
            (await logLines(log(node))).some((l) =>
                /^keepalived config not_running: /.test(l.message)
              )
              ? true
              : undefined,
          {
            timeoutMs: SLOW_BOUND_MS,
            intervalMs: 20,
            context: () => tail(log(node)),
          },
        );
      }
      const rendered = await Deno.readTextFile(lab.confFile("n1"));
      for (const vip of SERVICE_VIPS) assert.match(rendered, new RegExp(`${vip}/32`));
      for (const node of lab.nodes) lab.startKeepalived(node);
      await lab.waitFor(
        "every VIP on exactly one host",
        (h) => placedOnce(h, lab.nodes),
        ALL,
        45_000,
      );
      await sleep(1000);
      const placed = await lab.holders(ALL);
      assert.ok(placedOnce(placed, lab.nodes), JSON.stringify([...placed]));
      const victim = placed.get(CP_VIP)![0]!;
      const others = lab.nodes.filter((n) => n !== victim);
      report(`RESULT placement=${JSON.stringify(Object.fromEntries(placed))} retiring=${victim}`);

      // every host's inventory retires the victim, as configuration management would push it
      const reload = async (edit: Edit) => {
        for (const node of lab.nodes) {
          const file = `${lab.nodeDir(node)}/keelson.toml`;
          await Deno.writeTextFile(`${file}.new`, inventory(lab, node, edit));
          await Deno.rename(`${file}.new`, file);
          keelson.get(node)!.kill("SIGHUP");
        }
      };
      await reload({ retired: HOSTS[victim] });
      const gone = await pollUntil(
        `the VIPs to leave ${victim} and be on exactly one other host`,
        async () => {
          const holders = await lab.holders(ALL);
          return placedOnce(holders, others) ? holders : undefined;
        },
        {
          timeoutMs: BOUND_MS,
          intervalMs: 20,
          context: async () =>
            `${JSON.stringify([...await lab.holders(ALL)])}\n${await tail(log(victim))}`,
        },
      );
      report(
        `RESULT retire_reload_to_vips_off_ms=${gone.ms.toFixed(0)} ` +
          `now=${JSON.stringify(Object.fromEntries(gone.value))}`,
      );
      const withdrawn = await Deno.readTextFile(lab.confFile(victim));
      assert.doesNotMatch(withdrawn, /vrrp_instance|virtual_ipaddress/);
      assert.match(withdrawn, new RegExp(`Generated by Keelson for host ${HOSTS[victim]}`));
      const warning = await pollUntil(
        `${victim}'s withdrawal warning`,
        () => withdrawalWarning(log(victim), `machine "${HOSTS[victim]}" is retired`),
        {
          timeoutMs: BOUND_MS,
          intervalMs: 20,
          context: () => tail(log(victim)),
        },
      );
      assert.match(warning.value.message, /no VRRP instance/);
      assert.match(warning.value.message, /systemctl disable --now keepalived/);
      assert.match(
        await Deno.readTextFile(`${lab.nodeDir(victim)}/keepalived.log`),
        /sent 0 priority/,
      );
      // the others render without it: it is no longer their unicast peer
      const victimIp = `${SUBNET}.${11 + lab.nodes.indexOf(victim)}`;
      for (const node of others) {
        await pollUntil(`${node}'s file without ${victim} as a peer`, async () => {
          const text = await Deno.readTextFile(lab.confFile(node));
          return text.includes("vrrp_instance") && !text.includes(`        ${victimIp}\n`)
            ? true
            : undefined;
        }, { timeoutMs: BOUND_MS, intervalMs: 20 });
      }
      // its metrics claim no VIP and no instance (the VIP-role loop runs every 10 s)
      const claimed = await pollUntil(`${victim}'s metrics to claim nothing`, async () => {
        const m = await metrics(lab, victim);
        const instanceStates = [...m.keys()].filter((k) =>
          k.startsWith("keelson_vrrp_instance_state{")
        );
        const served = [...m].filter(([k, v]) => k.startsWith("keelson_vip_served{") && v > 0);
        return m.get('keelson_vips{host_role="master"}') === 0 &&
            m.get('keelson_vips{host_role="backup"}') === 0 &&
            instanceStates.length === 0 && served.length === 0
          ? m
          : undefined;
      }, { timeoutMs: SLOW_BOUND_MS, intervalMs: 20 });
      assert.equal(claimed.value.get("keelson_keepalived_skipped_addresses"), 0);
      assert.equal(claimed.value.get("keelson_config_restart_required"), 0, "retired: no restart");
      // placed on the others, then no VIP comes back to it and none is held twice
      const onOthers = async () => placedOnce(await lab.holders(ALL), others);
      await pollUntil("every VIP once on the others", onOthers, {
        timeoutMs: BOUND_MS,
        intervalMs: 50,
      });
      await holdsFor("every VIP once on the others", onOthers, { forMs: 2000, intervalMs: 50 });

      // active again: a VRRP peer again (BACKUP for its groups until it preempts)
      await reload({});
      const back = await pollUntil(`${victim} to render its instances again`, async () => {
        // keepalived reports its instances again (the FIFO); keelson_vips counts the
        // control-plane VIP (Service VIPs only once a Service cache exists, none here)
        const m = await metrics(lab, victim);
        const instances = [...m].filter(([k, v]) =>
          k.startsWith("keelson_vrrp_instance_state{") && /state="(BACKUP|MASTER)"/.test(k) &&
          v === 1
        );
        const total = (m.get('keelson_vips{host_role="master"}') ?? 0) +
          (m.get('keelson_vips{host_role="backup"}') ?? 0);
        return instances.length === ALL.length && total >= 1 ? m : undefined;
      }, { timeoutMs: SLOW_BOUND_MS, intervalMs: 20, context: () => tail(log(victim)) });
      report(`RESULT active_again_metrics_ms=${back.ms.toFixed(0)}`);
      assert.match(await Deno.readTextFile(lab.confFile(victim)), /vrrp_instance keelson_cp_v4 \{/);
      assert.ok(
        (await logLines(log(victim))).some((l) =>
          /serves VIPs through keepalived again/.test(l.message)
        ),
      );
      await pollUntil(
        "every VIP once again",
        async () => placedOnce(await lab.holders(ALL), lab.nodes),
        { timeoutMs: BOUND_MS, intervalMs: 50 },
      );

      // keepalived off everywhere: no host serves a VIP through it any more
      await reload({ enabled: false });
      const off = await pollUntil("every VIP to leave every host", async () => {
        const holders = await lab.holders(ALL);
        return [...holders.values()].every((h) => h.length === 0) ? true : undefined;
      }, { timeoutMs: BOUND_MS, intervalMs: 20 });
      report(`RESULT disabled_reload_to_vips_off_ms=${off.ms.toFixed(0)}`);
      for (const node of lab.nodes) {
        const disabled = await pollUntil(
          `${node}'s withdrawal warning`,
          () => withdrawalWarning(log(node), "[keepalived] enabled = false"),
          { timeoutMs: BOUND_MS, intervalMs: 20 },
        );
        assert.match(disabled.value.message, /Restart keelson to apply the new setting/);
        assert.doesNotMatch(await Deno.readTextFile(lab.confFile(node)), /vrrp_instance/);
      }
      const restart = await pollUntil("the restart-required gauge", async () => {
        const m = await metrics(lab, victim);
        return m.get("keelson_config_restart_required") === 1 ? true : undefined;
      }, { timeoutMs: BOUND_MS, intervalMs: 20 });
      assert.ok(restart.value);

      for (const [node, child] of keelson) {
        child.kill("SIGTERM");
        const status = await child.status;
        assert.equal(
          status.code,
          0,
          `${node}'s keelson exited ${status.code}:\n${await tail(log(node))}`,
        );
        assert.doesNotMatch(await Deno.readTextFile(log(node)), /Uncaught/);
      }
    } finally {
      await lab.close();
    }
  },
});
